package reconcile_test

import (
	"context"
	"fmt"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
)

// A sweep over three payments kept in memory: one in sync, one whose success webhook was lost
// (repaired automatically), one paid here but canceled externally (for a person to review).
func ExampleRunBatch() {
	ctx := context.Background()
	store := memstore.New[int64, string](memstore.Options{AggregateType: "payment"})
	hourAgo := time.Now().Add(-time.Hour)
	store.Put(memstore.Row[int64, string]{Key: 1, ExternalID: "pi_1", Local: "paid", UpdatedAt: hourAgo})
	store.Put(memstore.Row[int64, string]{Key: 2, ExternalID: "pi_2", Local: "pending", UpdatedAt: hourAgo})
	store.Put(memstore.Row[int64, string]{Key: 3, ExternalID: "pi_3", Local: "paid", UpdatedAt: hourAgo})

	external := map[string]string{"pi_1": "succeeded", "pi_2": "succeeded", "pi_3": "canceled"}
	gateway := reconcile.GatewayFunc[string](func(ctx context.Context, id string) (string, error) {
		s, ok := external[id]
		if !ok {
			return "", reconcile.ErrNotFound
		}
		return s, nil
	})
	classifier, err := reconcile.NewRuleTable(
		func(l string) string { return l }, func(e string) string { return e },
		reconcile.Rule[string, string]{Local: []string{"paid"}, External: []string{"succeeded"},
			Decision: reconcile.Decision{Verdict: reconcile.InSync}},
		reconcile.Rule[string, string]{Local: []string{"pending"}, External: []string{"succeeded"},
			Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}},
		reconcile.Rule[string, string]{Local: []string{"paid"},
			Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "paid_locally_not_externally"}},
	)
	if err != nil {
		panic(err)
	}

	cfg := reconcile.Config[string, string]{
		Job: "payments", Source: store, Sink: store, Gateway: gateway, Classifier: classifier, BatchSize: 100,
	}
	for {
		rep, err := reconcile.RunBatch(ctx, cfg)
		if err != nil {
			panic(err)
		}
		fmt.Printf("scanned %d: %d in sync, %d repairable, %d for review\n", rep.Scanned,
			rep.Verdicts[reconcile.InSync], rep.Verdicts[reconcile.Repairable], rep.Verdicts[reconcile.NeedsReview])
		if rep.Wrapped { // a short read, every row of it asked: the cycle is complete
			fmt.Println("cycle complete")
			break
		}
	}
	findings, err := store.ListFindings(ctx, reconcile.FindingQuery{State: reconcile.FindingsAll})
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		fmt.Printf("finding: record %s %s (%s here, %s there)\n", f.RecordID, f.Kind, f.Local, f.External)
	}
	for _, c := range store.Commands() {
		fmt.Printf("queued: %s for %s %s\n", c.Name, c.AggregateType, c.RecordID)
	}
	// Output:
	// scanned 3: 1 in sync, 1 repairable, 1 for review
	// cycle complete
	// finding: record 2 missed_success (pending here, succeeded there)
	// finding: record 3 paid_locally_not_externally (paid here, canceled there)
	// queued: ApplyPaymentSucceeded for payment 2
}

// An adaptive budget: 5 requests per second, halved by a 429, grown back a tenth of the budget
// every RecoverEvery.
func ExampleNewAdaptiveLimiter() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lim, err := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{
		Rate:         5,
		RecoverEvery: 30 * time.Second,
		Now:          func() time.Time { return now }, // a fixed clock, for the example
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("budget:", lim.Limit())
	lim.Throttle(0) // what RunBatch does when the gateway answers 429
	fmt.Println("after a 429:", lim.Limit())
	now = now.Add(time.Minute)
	fmt.Println("a minute later:", lim.Limit())
	// Output:
	// budget: 5
	// after a 429: 2.5
	// a minute later: 3.5
}

// The planner with the seed design's figures: a schedule, a rate budget, and a schedule that
// new rows outrun.
func ExamplePlanSchedule() {
	for _, in := range []reconcile.PlanInput{
		{Rows: 120000, BatchSize: 200, BatchesPerHour: 12},
		{Rows: 120000, RequestsPerSecond: 5},
		{Rows: 120000, BatchSize: 200, BatchesPerHour: 12, NewRowsPerHour: 3000},
	} {
		p, err := reconcile.PlanSchedule(in)
		if err != nil {
			panic(err)
		}
		fmt.Println(p.Verdict)
	}
	// Output:
	// a cycle takes 50h5m0s (schedule-bound) and no row goes unchecked longer than 50h5m0s, within the lag SLO of 72h0m0s
	// a cycle takes 6h40m0s (rate budget-bound) and no row goes unchecked longer than 6h40m0s, within the lag SLO of 72h0m0s
	// the checks fall behind: 2400 rows an hour are checked (schedule) and 3000 new rows arrive an hour, so each cycle (50h5m0s now) is longer than the last
}

// Health during an outage: the lag is still within its SLO, but the last batch could check
// none of its rows, so the job is failing, and says why.
func ExampleEvaluateHealth() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	st := reconcile.Status{
		Job: "payments-sweep", Now: now, Lag: 5 * time.Hour, Rows: 120000,
		CycleStartedAt: now.Add(-time.Hour), LastCycleCompletedAt: now.Add(-time.Hour),
		LastBatchAt: now.Add(-time.Minute), LastBatchScanned: 200, LastBatchUnverifiable: 200,
	}
	fmt.Println(reconcile.EvaluateHealth(st, reconcile.HealthPolicy{}))
	// Output:
	// payments-sweep: FAILING: unverifiable: 200 of the last batch's 200 rows could not be checked (the external system failed or refused)
}

// One tick, as a host's own scheduler (cron, River) would run it: batches until the cycle
// completes or the budget is spent.
func ExampleRunTick() {
	store := memstore.New[int64, string](memstore.Options{})
	hourAgo := time.Now().Add(-time.Hour)
	for i := int64(1); i <= 25; i++ {
		store.Put(memstore.Row[int64, string]{Key: i, ExternalID: fmt.Sprintf("pi_%d", i), Local: "paid", UpdatedAt: hourAgo})
	}
	rec, err := reconcile.New(reconcile.Config[string, string]{
		Job: "payments", Source: store, Sink: store, BatchSize: 10,
		Gateway: reconcile.GatewayFunc[string](func(context.Context, string) (string, error) { return "succeeded", nil }),
		Classifier: reconcile.ClassifierFunc[string, string](func(string, string) reconcile.Decision {
			return reconcile.Decision{Verdict: reconcile.InSync}
		}),
	})
	if err != nil {
		panic(err)
	}
	for _, budget := range []reconcile.TickBudget{{MaxRows: 15}, {}} {
		tick, err := reconcile.RunTick(context.Background(), rec, budget)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%d batches, %d rows, cycle completed: %v\n", tick.Batches, tick.Scanned, tick.Wrapped)
	}
	// Output:
	// 2 batches, 20 rows, cycle completed: false
	// 1 batches, 5 rows, cycle completed: true
}
