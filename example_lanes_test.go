package reconcile_test

import (
	"context"
	"fmt"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
)

// orphanFeed lists what an external system holds, one page, then reports the pass complete.
type orphanFeed map[string]string

func (f orphanFeed) Next(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[string], error) {
	if err := wait(ctx); err != nil {
		return reconcile.FeedPage[string]{}, err
	}
	var page reconcile.FeedPage[string]
	for _, id := range []string{"ext_1", "ext_2", "ext_3"} {
		page.Objects = append(page.Objects, reconcile.FeedObject[string]{ExternalID: id, Object: f[id]})
	}
	page.End = true
	return page, nil
}

// LaneGrace gives the rows the sweep's grace: a reverse scan judges present states as the sweep
// does, so it leaves alone the rows the sweep leaves in flight. A lane over the feed gets it
// unless its LaneConfig sets Grace.
func (orphanFeed) LaneGrace() time.Duration { return reconcile.DefaultGrace }

// A reverse scan: a lane that starts from the external system's objects, judges the ones our
// rows refer to, and reports the one no row refers to.
func ExampleNewLane() {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	store := memstore.New[int64, string](memstore.Options{Now: func() time.Time { return now }})
	store.Put(memstore.Row[int64, string]{Key: 1, ExternalID: "ext_1", Local: "paid", UpdatedAt: now.Add(-time.Hour)})
	store.Put(memstore.Row[int64, string]{Key: 2, ExternalID: "ext_2", Local: "pending", UpdatedAt: now.Add(-time.Hour)})

	classifier, err := reconcile.NewRuleTable(func(l string) string { return l }, func(e string) string { return e },
		reconcile.Rule[string, string]{Local: []string{"paid"}, External: []string{"succeeded"}, Decision: reconcile.Decision{Verdict: reconcile.InSync}},
		reconcile.Rule[string, string]{Local: []string{"pending"}, External: []string{"succeeded"},
			Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "MarkPaid"}})
	if err != nil {
		panic(err)
	}
	lane, err := reconcile.NewLane(reconcile.LaneConfig[string, string]{
		Job: "payments", Lane: "reverse",
		Feed:    orphanFeed{"ext_1": "succeeded", "ext_2": "succeeded", "ext_3": "succeeded"},
		Matcher: store, Sink: store, Classifier: classifier,
		ReportMissing: true,
	})
	if err != nil {
		panic(err)
	}
	rep, err := lane.RunBatch(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Printf("judged %d, pass complete: %t, new findings %d, commands %d\n", rep.Scanned, rep.Wrapped, rep.NewFindings, rep.NewCommands)
	findings, err := store.ListFindings(context.Background(), reconcile.FindingQuery{State: reconcile.FindingsAll})
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		fmt.Printf("%s %s %s\n", f.RecordID, f.Kind, f.Command)
	}
	// Output:
	// judged 3, pass complete: true, new findings 2, commands 1
	// 2 missed_success MarkPaid
	// ext_3 missing_locally
}
