package main

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// The host's wiring: what a service selling subscriptions would copy. The table is in
// schema.go, the canonical writer in writer.go; plant.go is the demo's own.

// job names the sweep; its cursor, observations and findings are kept under this name.
const job = "subscriptions-sweep"

// subscriptionRow is a subscriptions row as the reconciler reads it (pgstore.NewOf, by column
// name). The store reads the key, the subscription id and the times from its Config.
type subscriptionRow struct {
	Status            string     `db:"status"`
	CancelAtPeriodEnd bool       `db:"cancel_at_period_end"`
	PaidThrough       *time.Time `db:"paid_through"` // nil: never recorded
}

// policy is stripepolicy's subscription policy over the row (its table is in the package doc).
var policy = stripepolicy.SubscriptionPolicy(func(r subscriptionRow) stripepolicy.LocalSubscription {
	ls := stripepolicy.LocalSubscription{Status: r.Status, CancelAtPeriodEnd: r.CancelAtPeriodEnd}
	if r.PaidThrough != nil {
		ls.PaidThrough = *r.PaidThrough
	}
	return ls
})

// host is the wiring a service keeps: the store over its table, the Stripe gateway, the
// sweep and the dispatcher of its repair commands.
type host struct {
	store   *pgstore.Store[subscriptionRow]
	gateway *stripeadapter.ObjectGateway[*stripe.Subscription]
	sweep   *reconcile.Reconciler[subscriptionRow, *stripe.Subscription]
	repairs *pgoutbox.Dispatcher
}

// newHost wires the sweep of schema's subscriptions table, walked by (created_at, id), against
// Stripe at baseURL ("" for api.stripe.com). The gateway is the object kit's Subscriptions: its
// lists send status=all (Stripe's default list leaves canceled subscriptions out), a hundred
// per call over a batch's created window, and it retrieves alone only what they did not show.
func newHost(pool *pgxpool.Pool, schema, stripeKey, baseURL string) (*host, error) {
	var h host
	var err error
	if h.store, err = pgstore.NewOf[subscriptionRow](pool, pgstore.Config{
		Table: "subscriptions", Schema: schema, // the reconciler's tables too
		KeyColumns:       []string{"created_at", "id"},
		ExternalIDColumn: "stripe_subscription_id",
		AggregateType:    "subscription",
		SearchColumns:    []string{"customer_email"},
	}); err != nil {
		return nil, err
	}
	if h.gateway, err = stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: stripeKey, BaseURL: baseURL},
		stripeadapter.Subscriptions()); err != nil {
		return nil, err
	}
	if h.sweep, err = reconcile.New(reconcile.Config[subscriptionRow, *stripe.Subscription]{
		Job: job, Source: h.store, Sink: h.store, Gateway: h.gateway, Classifier: policy, Concurrency: 4,
	}); err != nil {
		return nil, err
	}
	h.repairs, err = newDispatcher(pool, h.store, h.gateway)
	return &h, err
}

// newDispatcher returns the dispatcher of the repair commands: each goes through the canonical
// writer, which reads the subscription again. What retrying cannot fix goes dead, its finding
// left open for a person.
func newDispatcher(pool *pgxpool.Pool, store *pgstore.Store[subscriptionRow], gateway subscriptionReader) (*pgoutbox.Dispatcher, error) {
	d, err := pgoutbox.NewDispatcher(pool, pgoutbox.Config{Tables: store.Tables(), Workers: 2})
	if err != nil {
		return nil, err
	}
	return d, pgoutbox.HandleCommand(d, stripepolicy.CommandApplySubscriptionStatus, func(ctx context.Context, tx pgx.Tx, cmd reconcile.Command) error {
		_, err := applySubscription(ctx, tx, store, gateway, cmd.RecordID, actorReconciler)
		var conflict *conflictError
		if errors.As(err, &conflict) || errors.Is(err, errNoRow) || errors.Is(err, reconcile.ErrNotFound) {
			return pgoutbox.Permanent(err)
		}
		return err
	})
}

// jobHealth reads the job's status and judges it by the default policy: what a host serves on
// its health endpoint and alerts on.
func jobHealth(ctx context.Context, store *pgstore.Store[subscriptionRow]) (reconcile.Status, reconcile.Health, error) {
	st, err := store.Status(ctx, job)
	return st, reconcile.EvaluateHealth(st, reconcile.HealthPolicy{}), err
}
