package memstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// pageFeed hands out one fixed page per step and then reports End.
type pageFeed struct {
	objs []reconcile.FeedObject[string]
}

func (f pageFeed) Next(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[string], error) {
	if err := wait(ctx); err != nil {
		return reconcile.FeedPage[string]{}, err
	}
	return reconcile.FeedPage[string]{Objects: f.objs, Next: "done", End: true}, nil
}

func TestALaneOverTheMemoryStore(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	s := memstore.New[int64, string](memstore.Options{Now: func() time.Time { return now }})
	s.Put(memstore.Row[int64, string]{Key: 1, ExternalID: "x_1", Local: "pending", UpdatedAt: now.Add(-time.Hour)})
	s.Put(memstore.Row[int64, string]{Key: 2, ExternalID: "x_2", Local: "pending", UpdatedAt: now.Add(-time.Hour)})
	s.Put(memstore.Row[int64, string]{Key: 3, ExternalID: "x_3", Local: "pending", UpdatedAt: now.Add(-10 * time.Second)})
	classifier, err := reconcile.NewRuleTable(func(l string) string { return l }, func(e string) string { return e },
		reconcile.Rule[string, string]{Local: []string{"pending"}, External: []string{"paid"},
			Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_payment", Command: "MarkPaid"}})
	if err != nil {
		t.Fatal(err)
	}
	feed := pageFeed{objs: []reconcile.FeedObject[string]{
		{ExternalID: "x_1", Object: "paid"},
		{ExternalID: "x_2", Object: "paid", ObservedAt: now.Add(-2 * time.Hour)}, // the row changed since: in flight
		{ExternalID: "x_3", Object: "paid"},                                      // changed within the grace: in flight
		{ExternalID: "x_9", Object: "paid"},                                      // no row
	}}
	lane, err := reconcile.NewLane(reconcile.LaneConfig[string, string]{Job: "orders", Lane: "reverse", Feed: feed,
		Matcher: s, Sink: s, Classifier: classifier, ReportMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rep, err := lane.RunBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.NewFindings != 2 || rep.NewCommands != 1 || rep.Verdicts[reconcile.InFlight] != 2 || !rep.Wrapped {
		t.Fatalf("step = %+v, want x_1's drift and x_9 missing, two in flight", rep)
	}
	if info := s.Lane("orders", "reverse"); info.Position != "done" || info.Version != 1 || info.PassesCompleted != 1 {
		t.Errorf("lane info = %+v", info)
	}
	if _, ok := s.Observation("orders", "1"); !ok {
		t.Error("row 1 was not recorded as verified")
	}

	// A person resolves the missing object: the next pass leaves it resolved.
	for _, f := range reconciletest.Findings(t, s, "") {
		if f.Kind == reconcile.KindMissingLocally {
			if err := s.ResolveFinding(ctx, f.ID, reconcile.Resolution{As: reconcile.ResolutionAccepted, By: "alice"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if rep, err = lane.RunBatch(ctx); err != nil || rep.NewFindings != 0 {
		t.Fatalf("second pass = %+v, %v; want nothing new", rep, err)
	}

	// A commit at a stale version is refused.
	_, err = s.CommitLane(ctx, reconcile.LaneCommit{Job: "orders", Lane: "reverse", Cursor: reconcile.Cursor{Position: "done", Version: 1}})
	if !errors.Is(err, reconcile.ErrConcurrentRun) {
		t.Errorf("stale lane commit = %v, want ErrConcurrentRun", err)
	}
}
