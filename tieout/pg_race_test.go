package tieout_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/tieout"
)

// racePayouts are n payouts of two unbooked refunds each, and their own line.
func racePayouts(n int) lister {
	l := lister{members: map[string][]tieout.Member{}}
	for i := range n {
		id := "po_" + strconv.Itoa(i)
		g := tieout.Group{ID: id, Status: "paid", State: tieout.GroupPaid, Amount: -200, Currency: "usd", Itemized: true}
		l.groups = append(l.groups, g)
		for j := range 2 {
			l.members[id] = append(l.members[id], tieout.Member{ID: fmt.Sprintf("txn_%d_%d", i, j), Type: "refund", Kind: tieout.KindRefund,
				SourceID: fmt.Sprintf("re_%d_%d", i, j), Amount: -100, Net: -100, Currency: "usd", SourceAmount: -100, SourceCurrency: "usd"})
		}
		l.members[id] = append(l.members[id], tieout.Member{ID: "txn_own_" + strconv.Itoa(i), Type: "payout", Kind: tieout.KindGroup,
			SourceID: id, Amount: 200, Net: 200, Currency: "usd"})
	}
	return l
}

// The sweep and the events lane tying out the same payouts at once, in opposite orders, through
// pgstore: no deadlock, no error, and one open finding per (record, kind), one record per
// payout, each refund's repair queued once. Two processes running the same step at once: one
// commits, the other gets ErrConcurrentRun and writes nothing.
func TestTwoStepsTyingOutTheSamePayoutsAtOnceTakeTurns(t *testing.T) {
	ctx := context.Background()
	pool, store := shardtest.NewStore(t, pgstore.Config{Table: "payments"}, shardtest.PaymentsDDL)
	const n = 30
	forward := racePayouts(n)
	backward := racePayouts(n)
	slices.Reverse(backward.groups)
	newStep := func(lane string, l lister) *tieout.Step {
		s, err := tieout.NewStep(tieout.StepConfig{Job: "payouts", Lane: lane, Sink: store, Ledger: &tieout.MemoryLedger{}, Lister: l})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for round := range 5 {
		steps := []*tieout.Step{newStep("sweep", forward), newStep("events", backward)}
		var wg sync.WaitGroup
		errs := make([]error, len(steps))
		for i, s := range steps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.RunBatch(ctx)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: step %d: %v", round, i, err)
			}
		}
	}
	var findings, open, records, commands int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE resolved_at IS NULL) FROM reconcile_findings WHERE job = 'payouts'`).Scan(&findings, &open); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_outbox`).Scan(&commands); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_groups`).Scan(&records); err != nil {
		t.Fatal(err)
	}
	if findings != 2*n || open != 2*n || commands != 2*n || records != n {
		t.Errorf("findings %d (open %d), commands %d, records %d; want %d, %d, %d", findings, open, commands, records, 2*n, 2*n, n)
	}

	// Two processes, one step: a reads the position and lists; b does the whole step
	// meanwhile; a's commit then loses the compare-and-set and writes nothing.
	release := make(chan struct{})
	listed := make(chan struct{})
	aStep, err := tieout.NewStep(tieout.StepConfig{Job: "payouts", Lane: "twice", Sink: store, Ledger: &tieout.MemoryLedger{},
		Lister: blockingLister{lister: forward, listed: listed, release: release}})
	if err != nil {
		t.Fatal(err)
	}
	errA := make(chan error, 1)
	go func() {
		_, err := aStep.RunBatch(ctx)
		errA <- err
	}()
	<-listed
	if _, err := newStep("twice", forward).RunBatch(ctx); err != nil {
		t.Fatalf("the step b ran while a listed: %v", err)
	}
	close(release)
	if err := <-errA; !errors.Is(err, reconcile.ErrConcurrentRun) {
		t.Errorf("a's step after b committed: %v, want ErrConcurrentRun", err)
	}
	var after int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_findings WHERE job = 'payouts'`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != findings {
		t.Errorf("findings %d after the same step ran twice at once, want %d", after, findings)
	}
}

// blockingLister is a lister whose Groups says it listed, then waits to be released.
type blockingLister struct {
	lister
	listed, release chan struct{}
}

func (l blockingLister) Groups(ctx context.Context, pos string) (tieout.GroupPage, error) {
	close(l.listed)
	<-l.release
	return l.lister.Groups(ctx, pos)
}
