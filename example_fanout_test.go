package reconcile_test

import (
	"context"
	"fmt"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// One fan-out over the accounts of a platform: each account has its own rows, its own view
// of the external system (with Stripe, a gateway sending Stripe-Account) and its own job, and
// the accounts share one rate budget. A round ends when every account has completed a cycle.
func ExampleFanOut() {
	ctx := context.Background()
	old := time.Now().Add(-time.Hour)
	// The host's accounts table, and each account's rows and external objects.
	rows := map[string]map[string]string{ // account -> external id -> local state
		"acct_a": {"pi_1": "paid", "pi_2": "pending", "pi_3": "paid"},
		"acct_b": {"pi_7": "paid"},
	}
	external := map[string]map[string]string{ // account -> external id -> external state
		"acct_a": {"pi_1": "succeeded", "pi_2": "succeeded", "pi_3": "succeeded"},
		"acct_b": {"pi_7": "succeeded"},
	}
	stores := map[string]*memstore.Store[string, string]{}
	budget, err := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{Rate: 50})
	if err != nil {
		panic(err)
	}

	fan, err := reconcile.NewFanOut(reconcile.FanOutConfig{
		Name: "payments@connect",
		// Read on every round: accounts added to and removed from the table are followed.
		Accounts: func(context.Context) ([]string, error) { return []string{"acct_a", "acct_b"}, nil },
		// One job per account, under a name of its own: its own cursor.
		Build: func(acct string) ([]reconcile.FanOutJob, error) {
			store := memstore.New[string, string](memstore.Options{})
			for id, local := range rows[acct] {
				store.Put(memstore.Row[string, string]{Key: id, ExternalID: id, Local: local, CreatedAt: old, UpdatedAt: old})
			}
			stores[acct] = store
			job := "payments@" + acct
			r, err := reconcile.New(reconcile.Config[string, string]{Job: job, Source: store, Sink: store,
				Gateway: reconciletest.NewGateway(external[acct]), Classifier: reconciletest.Classifier(),
				BatchSize: 2, Limiter: budget})
			if err != nil {
				return nil, err
			}
			return []reconcile.FanOutJob{{Job: job, Batches: r}}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	// A Runner would schedule it like any job; one tick runs a whole round here.
	tick, err := reconcile.RunTick(ctx, fan, reconcile.TickBudget{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("round complete: %t, %d batches, %d rows\n", tick.Wrapped, tick.Batches, tick.Scanned)
	for _, acct := range fan.Accounts() {
		findings, err := stores[acct].ListFindings(ctx, reconcile.FindingQuery{})
		if err != nil {
			panic(err)
		}
		for _, f := range findings {
			fmt.Printf("%s: %s %s %s\n", acct, f.Job, f.RecordID, f.Kind)
		}
	}
	// Output:
	// round complete: true, 3 batches, 4 rows
	// acct_a: payments@acct_a pi_2 missed_success
}
