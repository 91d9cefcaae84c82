package main

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
)

// The host's wiring of the sweep: what a service taking payments would copy. The lanes are in
// lanes.go, the canonical writer in writer.go, the webhook handler in webhook.go and the
// dispatcher in repair.go; the demo_*.go files are the demo's own machinery.

// job names the sweep; its cursor, observations and findings are kept under this name.
const job = "payments-sweep"

// newStore returns the store over schema's payments table, with the reconciler's tables next
// to it.
func newStore(pool *pgxpool.Pool, schema string) (*pgstore.Store[string], error) {
	// pgstore reads each row's created_at (Config.CreatedAtColumn, by default "created_at"),
	// which the gateway uses to list the PaymentIntents created near a batch's rows.
	return pgstore.New(pool, pgstore.Config{
		Table:         "payments",
		Schema:        schema,
		Tables:        pgstore.Tables{Schema: schema},
		AggregateType: "payment",
	})
}

// reconcilerOver returns the reconciler of store's payments through gateway, stripetest's or
// real Stripe's: the one the run uses either way.
func reconcilerOver(store *pgstore.Store[string], gateway *stripeadapter.Gateway, batchSize int, limiter reconcile.Limiter) (*reconcile.Reconciler[string, *stripe.PaymentIntent], error) {
	return reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{
		Job:        job,
		Source:     store,
		Sink:       store,
		Gateway:    gateway,
		Classifier: stripeadapter.PaymentIntentClassifier(),
		BatchSize:  batchSize,
		Limiter:    limiter,
		// Real Stripe calls take a few hundred milliseconds; several in flight keep a batch short
		// while the limiter sets the pace.
		Concurrency:   8,
		ExternalState: stripeadapter.PaymentIntentState,
	})
}

// healthPolicy is what the example judges health by: the defaults, but lanes must have caught
// up within 15 minutes. A host runs the events lane every minute, and a lane that has not
// reached the end of its feed for 15 minutes has stopped finding lost webhooks; the default,
// the 72-hour lag SLO, would notice days late. The bound is one for all of a job's lanes: here
// the reverse scan completes its pass at once, but a host that spreads a pass over hours must
// raise the bound to that, for the events lane too.
var healthPolicy = reconcile.HealthPolicy{MaxLaneLag: 15 * time.Minute}

// jobHealth reads the job's status (the sweep's and the lanes') and judges it by healthPolicy:
// what a host serves on its health endpoint and alerts on.
func jobHealth(ctx context.Context, store *pgstore.Store[string]) (reconcile.Status, reconcile.Health, error) {
	st, err := store.Status(ctx, job)
	if err != nil {
		return st, reconcile.Health{}, err
	}
	return st, reconcile.EvaluateHealth(st, healthPolicy), nil
}
