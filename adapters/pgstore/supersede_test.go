package pgstore_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// pausing is a Deliverer that holds the first commit that delivers until release is closed,
// its transaction open, after telling its backend's pid.
type pausing struct {
	once    sync.Once
	pid     chan int
	release chan struct{}
}

func (p *pausing) Deliver(ctx context.Context, tx pgx.Tx, _ []pgstore.QueuedCommand) error {
	var err error
	p.once.Do(func() {
		var pid int
		if err = tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			return
		}
		p.pid <- pid
		<-p.release
	})
	return err
}

// openOf returns the open findings of record id in job sweep, but missing_locally ones.
func openOf(t testing.TB, s *pgstore.Store[string], id string) []reconcile.Finding {
	t.Helper()
	var out []reconcile.Finding
	for _, f := range reconciletest.Findings(t, s, "sweep") {
		if f.RecordID == id && f.Open() && f.Kind != reconcile.KindMissingLocally {
			out = append(out, f)
		}
	}
	return out
}

// A sweep and a lane commit drifts of two kinds for one record at the same moment: the lane's
// commit waits for the sweep's, then supersedes its finding. One open finding, never two.
func TestASweepAndALaneOpeningFindingsOfOneRecordAtOnceLeaveOneOpen(t *testing.T) {
	t.Parallel()
	pool, plain := newStore(t, pgstore.Config{})
	ctx := context.Background()
	insertPayments(t, pool, 1)
	p := &pausing{pid: make(chan int, 1), release: make(chan struct{})}
	cfg := plain.Config()
	cfg.Deliver = p
	paused, err := pgstore.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}

	sweepDone := make(chan error, 1)
	go func() {
		_, err := reconcile.RunBatch(ctx, reconcile.Config[string, string]{Job: "sweep", Source: paused, Sink: paused, Classifier: reconciletest.Money(),
			Gateway: reconciletest.NewGateway(map[string]string{"pi_1": "partly_refunded"})})
		sweepDone <- err
	}()
	var pid int
	select {
	case pid = <-p.pid:
	case err := <-sweepDone:
		t.Fatalf("the sweep's batch ended before its commit delivered: %v", err)
	}

	laneDone := make(chan struct{})
	var laneErr error
	go func() {
		defer close(laneDone)
		l, err := reconcile.NewLane(reconcile.LaneConfig[string, string]{Job: "sweep", Lane: "reverse", Matcher: plain, Sink: plain, Classifier: reconciletest.Money(),
			Feed: reconciletest.NewFeed(map[string]reconcile.FeedPage[string]{"": {Objects: reconciletest.Objects("pi_1", "refunded"), Next: "p1"}})})
		if err == nil {
			_, err = l.RunBatch(ctx)
		}
		laneErr = err
	}()
	blockedBy(t, pool, pid, laneDone)
	close(p.release)
	if err := <-sweepDone; err != nil {
		t.Fatal(err)
	}
	<-laneDone
	if laneErr != nil {
		t.Fatal(laneErr)
	}
	open := openOf(t, plain, "1")
	if len(open) != 1 || open[0].Kind != "refund_missed" {
		t.Fatalf("open findings of row 1 %+v; want the lane's alone, which committed last", open)
	}
	d, err := plain.Finding(ctx, open[0].ID)
	if err != nil || len(d.Supersedes) != 1 {
		t.Fatalf("finding %+v (%v); want it to supersede the sweep's", d, err)
	}
}

// flipping is an external system whose payments change state at every call, through every
// kind of drift and back in sync.
type flipping struct{ calls atomic.Int64 }

var flips = []string{"disputed", "lost", "succeeded", "partly_refunded", "refunded", "succeeded"}

func (f *flipping) state(id string) string {
	n, _ := strconv.Atoi(id[len("pi_"):])
	return flips[(int(f.calls.Add(1))+n)%len(flips)]
}

func (f *flipping) Fetch(_ context.Context, id string) (string, error) { return f.state(id), nil }

// Next is a lane's feed: every payment, in its state now.
func (f *flipping) Next(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[string], error) {
	if err := wait(ctx); err != nil {
		return reconcile.FeedPage[string]{}, err
	}
	var objs []reconcile.FeedObject[string]
	for i := 1; i <= 10; i++ {
		id := fmt.Sprintf("pi_%d", i)
		objs = append(objs, reconcile.FeedObject[string]{ExternalID: id, Object: f.state(id)})
	}
	n, _ := strconv.Atoi(pos)
	return reconcile.FeedPage[string]{Objects: objs, Next: strconv.Itoa(n + 1)}, nil
}

// A sweep and a lane judging the same records over and over, at the same time, as their drifts
// change kind: no commit fails (no deadlock), and no record is left with two open findings.
func TestASweepAndALaneJudgingTheSameRecordsAtOnceNeverDeadlockOrLeaveTwoOpenFindings(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	insertPayments(t, pool, ids(1, 10)...)
	ext := &flipping{}
	sweep, err := reconcile.New(reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Classifier: reconciletest.Money(), Gateway: ext, BatchSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	lane, err := reconcile.NewLane(reconcile.LaneConfig[string, string]{Job: "sweep", Lane: "reverse", Matcher: s, Sink: s, Classifier: reconciletest.Money(), Feed: ext})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, r := range []reconcile.BatchRunner{sweep, lane} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				if _, err := r.RunBatch(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := 1; i <= 10; i++ {
		if open := openOf(t, s, strconv.Itoa(i)); len(open) > 1 {
			t.Errorf("row %d has %d open findings: %+v", i, len(open), open)
		}
	}
	var superseded, cleared int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE resolution = 'superseded'), count(*) FILTER (WHERE resolution = 'cleared')
		FROM reconcile_findings`).Scan(&superseded, &cleared); err != nil || superseded == 0 || cleared == 0 {
		t.Fatalf("%d findings superseded, %d cleared (%v); want some of each", superseded, cleared, err)
	}
}
