package memstore_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
)

// A store as a host's unit test would use it: rows in, a cycle of batches, findings and
// commands read back, a repair applied and its finding resolved, the next cycle clean. The
// clock is the store's own, set by hand, so the grace period is under the test's control.
func Example() {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	store := memstore.New[int64, string](memstore.Options{
		Now:           func() time.Time { return now },
		AggregateType: "payment",
	})
	dayAgo := now.Add(-24 * time.Hour)
	store.Put(memstore.Row[int64, string]{Key: 1, ExternalID: "pi_1", Local: "paid", UpdatedAt: dayAgo})
	store.Put(memstore.Row[int64, string]{Key: 2, ExternalID: "pi_2", Local: "pending", UpdatedAt: dayAgo})
	store.Put(memstore.Row[int64, string]{Key: 3, ExternalID: "pi_3", Local: "pending"}) // changed just now

	external := map[string]string{"pi_1": "succeeded", "pi_2": "succeeded", "pi_3": "succeeded"}
	rec, err := reconcile.New(reconcile.Config[string, string]{
		Job: "payments", Source: store, Sink: store, BatchSize: 2,
		Gateway: reconcile.GatewayFunc[string](func(_ context.Context, id string) (string, error) {
			return external[id], nil
		}),
		Classifier: reconcile.ClassifierFunc[string, string](func(local, ext string) reconcile.Decision {
			switch {
			case local == "paid" && ext == "succeeded":
				return reconcile.Decision{Verdict: reconcile.InSync}
			case local == "pending" && ext == "succeeded":
				return reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}
			}
			return reconcile.Unexpected(local, ext)
		}),
	})
	if err != nil {
		panic(err)
	}
	cycle := func() {
		t, err := reconcile.RunTick(ctx, rec, reconcile.TickBudget{})
		if err != nil {
			panic(err)
		}
		fmt.Printf("cycle: %d batches, %d in sync, %d in flight, %d repairable, %d new findings\n", t.Batches,
			t.Verdicts[reconcile.InSync], t.Verdicts[reconcile.InFlight], t.Verdicts[reconcile.Repairable], t.NewFindings)
	}

	cycle() // row 3 changed within the grace period: judged later
	for _, c := range store.Commands() {
		fmt.Printf("outbox #%d: %s for %s %s (expects %q)\n", c.Seq, c.Name, c.AggregateType, c.RecordID, c.ExpectedLocal)
		// The host's canonical writer applies it, guarded on the expected state, and the
		// finding is resolved.
		key, _ := strconv.ParseInt(c.RecordID, 10, 64) // the record id is the key, printed
		row, _ := store.Get(key)
		if row.Local == c.ExpectedLocal {
			row.Local, row.UpdatedAt = "paid", now
			store.Put(row)
		}
		if err := store.ResolveFinding(ctx, c.FindingID, reconcile.Resolution{As: reconcile.ResolutionRepaired, By: "reconciler"}); err != nil {
			panic(err)
		}
	}

	now = now.Add(time.Hour) // past every row's grace period
	cycle()
	findings, err := store.ListFindings(ctx, reconcile.FindingQuery{State: reconcile.FindingsAll})
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		state := "open"
		if !f.Open() {
			state = "resolved as " + f.Resolution + " by " + f.ResolvedBy
		}
		fmt.Printf("finding %d: record %s %s, %s\n", f.ID, f.RecordID, f.Kind, state)
	}
	obs, _ := store.Observation("payments", "1")
	cur := store.Cursor("payments")
	fmt.Printf("record 1 confirmed %s at %s; %d cycles completed\n", obs.External, obs.VerifiedAt.Format(time.Kitchen), cur.CyclesCompleted)
	// Output:
	// cycle: 2 batches, 1 in sync, 1 in flight, 1 repairable, 1 new findings
	// outbox #1: ApplyPaymentSucceeded for payment 2 (expects "pending")
	// cycle: 2 batches, 2 in sync, 0 in flight, 1 repairable, 1 new findings
	// finding 1: record 2 missed_success, resolved as repaired by reconciler
	// finding 2: record 3 missed_success, open
	// record 1 confirmed succeeded at 1:00PM; 2 cycles completed
}

// Coverage buckets the job's rows by the time since their last verification (their creation,
// if never verified) and samples its open findings day by day: what the console's coverage
// chart draws.
func ExampleStore_Coverage() {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	store := memstore.New[int64, string](memstore.Options{Now: func() time.Time { return now }})
	for i := int64(1); i <= 4; i++ {
		store.Put(memstore.Row[int64, string]{Key: i, ExternalID: fmt.Sprint("pi_", i), Local: "paid",
			CreatedAt: now.Add(-48 * time.Hour), UpdatedAt: now.Add(-48 * time.Hour)})
	}
	rec, err := reconcile.New(reconcile.Config[string, string]{
		Job: "payments", Source: store, Sink: store, BatchSize: 10,
		Gateway: reconcile.GatewayFunc[string](func(_ context.Context, id string) (string, error) {
			if id == "pi_4" {
				return "", reconcile.ErrUnavailable // never answered: it keeps its creation time
			}
			return map[string]string{"pi_3": "failed"}[id], nil
		}),
		Classifier: reconcile.ClassifierFunc[string, string](func(local, ext string) reconcile.Decision {
			if ext == "failed" {
				return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "paid_locally_not_externally"}
			}
			return reconcile.Decision{Verdict: reconcile.InSync}
		}),
	})
	if err != nil {
		panic(err)
	}
	if _, err := reconcile.RunTick(ctx, rec, reconcile.TickBudget{}); err != nil {
		panic(err)
	}
	now = now.Add(8 * time.Hour)
	cov, err := store.Coverage(ctx, "payments", reconcile.CoverageQuery{
		Ages: []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour, 72 * time.Hour}, Days: 3})
	if err != nil {
		panic(err)
	}
	fmt.Println("rows by age (≤1h, ≤6h, ≤24h, ≤3d, older):", cov.Rows)
	for _, o := range cov.Open {
		fmt.Printf("open at %s: %d\n", o.At.Format("Jan 2 15:04"), o.Open)
	}
	// Output:
	// rows by age (≤1h, ≤6h, ≤24h, ≤3d, older): [0 0 3 1 0]
	// open at Feb 27 20:00: 0
	// open at Feb 28 20:00: 0
	// open at Mar 1 20:00: 1
}
