package reconcile_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
)

// keepingGateway is a DatedBatchGateway: its bulk call answers every lookup from states, dated
// by date (nil: the call's own answers, At zero), and fails with bulkErr after one call; Fetch
// answers from states or fails with fetchErr. It records the since of each bulk call.
type keepingGateway struct {
	states   map[string]string
	date     func(id string, since time.Time) time.Time
	bulkErr  error
	fetchErr error

	mu      sync.Mutex
	sinces  []time.Time
	fetched []string
}

func (g *keepingGateway) Fetch(ctx context.Context, id string) (string, error) {
	g.mu.Lock()
	g.fetched = append(g.fetched, id)
	g.mu.Unlock()
	if g.fetchErr != nil {
		return "", g.fetchErr
	}
	return g.states[id], nil
}

func (g *keepingGateway) FetchBatch(context.Context, []reconcile.Lookup, func(context.Context) error) (map[string]string, error) {
	panic("the engine calls FetchBatchSince of a DatedBatchGateway")
}

func (g *keepingGateway) FetchBatchSince(ctx context.Context, lookups []reconcile.Lookup, since time.Time,
	wait func(context.Context) error) (map[string]reconcile.Answer[string], error) {
	g.mu.Lock()
	g.sinces = append(g.sinces, since)
	g.mu.Unlock()
	out := map[string]reconcile.Answer[string]{}
	for _, l := range lookups {
		if s, ok := g.states[l.ExternalID]; ok && g.date != nil {
			if at := g.date(l.ExternalID, since); !at.IsZero() {
				out[l.ExternalID] = reconcile.Answer[string]{Object: s, At: at}
			}
		}
	}
	if g.bulkErr != nil {
		if err := wait(ctx); err != nil {
			return out, err
		}
		return out, g.bulkErr
	}
	return out, nil
}

func (g *keepingGateway) takeSinces() []time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.sinces
	g.sinces = nil
	return s
}

// A cycle's batches ask for answers from the start of the cycle's first batch on: a gateway
// may serve what it kept from an earlier batch of the cycle, never from an earlier cycle. When
// the Reconciler cannot tell when the cycle started (another ran the batch before, or it is
// new), the batch's own start stands in.
func TestABatchAsksForAnswersSinceItsCycleStarted(t *testing.T) {
	s := newStore(newClock(), 5, always("paid"))
	gw := &keepingGateway{states: paymentsWorld(5)}
	cfg := config(s, gw)
	cfg.BatchSize = 2
	r, err := reconcile.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	run := func(r *reconcile.Reconciler[string, string]) (start, since time.Time) {
		t.Helper()
		start = time.Now()
		if _, err := r.RunBatch(context.Background()); err != nil {
			t.Fatal(err)
		}
		sinces := gw.takeSinces()
		if len(sinces) != 1 {
			t.Fatalf("%d bulk calls; want 1", len(sinces))
		}
		return start, sinces[0]
	}
	start1, since1 := run(r)
	if since1.Before(start1) {
		t.Fatalf("the cycle's first batch asks since %v, before it started (%v)", since1, start1)
	}
	for b := 2; b <= 3; b++ { // rows 3-4, then 5 and the wrap
		if _, since := run(r); !since.Equal(since1) {
			t.Fatalf("batch %d of the cycle asks since %v; want its first batch's %v", b, since, since1)
		}
	}
	start2, since2 := run(r)
	if since2.Before(start2) {
		t.Fatalf("the next cycle's first batch asks since %v, before it started (%v): answers of the last cycle would do", since2, start2)
	}

	// Another Reconciler runs the cycle's second batch: neither knows when the cycle started
	// any more, and each batch asks from its own start.
	other, err := reconcile.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if start, since := run(other); since.Before(start) {
		t.Fatalf("a new Reconciler asks since %v, before its batch started (%v)", since, start)
	}
	if start, since := run(r); since.Before(start) {
		t.Fatalf("after another moved the cursor, the batch asks since %v, before it started (%v)", since, start)
	}
}

// An answer dated before since is not used (the row is asked alone and verified on that
// answer); one dated after the bulk call returned is taken as obtained then. A store records
// each row verified at its answer's time.
func TestAnswersAreUsedAndDatedWithinTheirBatch(t *testing.T) {
	s := memstore.New[int64, string](memstore.Options{})
	old := time.Now().Add(-time.Hour)
	for i := int64(1); i <= 3; i++ {
		s.Put(memstore.Row[int64, string]{Key: i, ExternalID: extID(i), Local: "paid", CreatedAt: old, UpdatedAt: old})
	}
	gw := &keepingGateway{states: map[string]string{"pi_1": "succeeded", "pi_2": "succeeded", "pi_3": "succeeded"}, date: func(id string, since time.Time) time.Time {
		switch id {
		case "pi_1":
			return since.Add(-time.Second) // the gateway broke its contract
		case "pi_2":
			return time.Now().Add(time.Hour) // a clock gone wrong
		}
		return since
	}}
	before := time.Now()
	rep, err := reconcile.RunBatch(context.Background(), config(s, gw))
	after := time.Now()
	if err != nil || rep.Verdicts[reconcile.InSync] != 3 {
		t.Fatalf("%+v, %v; want 3 rows in sync", rep, err)
	}
	if len(gw.fetched) != 1 || gw.fetched[0] != "pi_1" {
		t.Fatalf("asked one by one %v; want pi_1 alone, its kept answer being older than the cycle", gw.fetched)
	}
	since := gw.takeSinces()[0]
	for id, ok := range map[string]func(time.Time) bool{
		"1": func(v time.Time) bool { return v.After(since) && !v.After(after) }, // its own Fetch
		"2": func(v time.Time) bool { return !v.Before(before) && !v.After(after) },
		"3": func(v time.Time) bool { return v.Equal(since) },
	} {
		o, _ := s.Observation(job, id)
		if !ok(o.VerifiedAt) {
			t.Errorf("row %s verified at %v; since %v, batch from %v to %v", id, o.VerifiedAt, since, before, after)
		}
	}
}

// Answers kept from earlier calls are no sign that the external system is up: a batch whose
// bulk call failed after serving kept answers asks one row alone, and stops when it fails too.
func TestKeptAnswersDoNotHideAnOutage(t *testing.T) {
	s := newStore(newClock(), 40, always("paid"))
	gw := &keepingGateway{states: paymentsWorld(40), bulkErr: reconcile.ErrUnavailable, fetchErr: reconcile.ErrUnavailable,
		date: func(id string, since time.Time) time.Time {
			if id <= "pi_2" { // pi_1, pi_10-pi_19, pi_2: kept from an earlier batch of the cycle
				return since
			}
			return time.Time{}
		}}
	cfg := config(s, gw)
	cfg.BatchSize = 40
	cfg.Concurrency = 4
	rep, err := reconcile.RunBatch(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.GatewayCalls != 2 || len(gw.fetched) != 1 || !rep.Unavailable {
		t.Fatalf("%+v, asked one by one %v; want the bulk call and one row alone, then Unavailable", rep, gw.fetched)
	}
}
