package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/riverdelivery"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// The host's wiring: what a service that runs River would copy. setup.go is the demo's own.

// job names the sweep.
const job = "payments-sweep"

// host is what the service keeps: River's client, and the store and sweep whose repairs go to it.
type host struct {
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	store  *pgstore.Store[string]
	sweep  *reconcile.Reconciler[string, *stripe.PaymentIntent]
}

// newHost wires River and the reconciler in one schema of one database: the repairs' jobs are
// inserted in the reconciler's commits, and completed in the writer's transactions.
func newHost(pool *pgxpool.Pool, schema, stripeKey, stripeURL string) (*host, error) {
	h := &host{pool: pool}
	// The worker applies each command through the canonical writer of its name.
	worker, err := riverdelivery.NewWorker(pool, riverdelivery.WorkerConfig{})
	if err != nil {
		return nil, err
	}
	if err := worker.Handle(stripepolicy.CommandApplyPaymentSucceeded, func(ctx context.Context, tx pgx.Tx, cmd reconcile.Command) error {
		return markPaid(ctx, tx, h.store, cmd.RecordID, "repair of finding "+fmt.Sprint(cmd.FindingID))
	}); err != nil {
		return nil, err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, worker)
	if h.client, err = river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:  schema,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
		Workers: workers,
	}); err != nil {
		return nil, err
	}
	// The deliverer enqueues the commands with the same client, in the commit's transaction.
	deliverer, err := riverdelivery.New(h.client, riverdelivery.Config{MaxAttempts: 10})
	if err != nil {
		return nil, err
	}
	if h.store, err = pgstore.New(pool, pgstore.Config{Table: "payments", Schema: schema,
		ExternalIDColumn: "stripe_payment_intent_id", Deliver: deliverer}); err != nil {
		return nil, err
	}
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: stripeKey, BaseURL: stripeURL}, stripeadapter.PaymentIntents())
	if err != nil {
		return nil, err
	}
	h.sweep, err = reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{Job: job, Source: h.store, Sink: h.store,
		Gateway: gw, Classifier: stripepolicy.PaymentIntentPolicy(), ExternalState: stripepolicy.PaymentIntentState})
	return h, err
}

// markPaid is the canonical writer of a payment's success, the function the success webhook
// calls too: a guarded transition (a no-op once the row has moved on, as after the webhook)
// that resolves the payment's missed_success findings in the same transaction. (A writer of
// money would read the PaymentIntent again first; examples/payments shows one.)
func markPaid(ctx context.Context, tx pgx.Tx, store *pgstore.Store[string], paymentID, note string) error {
	if _, err := tx.Exec(ctx, `UPDATE payments SET status = 'paid', updated_at = now() WHERE id = $1::bigint AND status = 'pending'`, paymentID); err != nil {
		return fmt.Errorf("mark payment %s paid: %w", paymentID, err)
	}
	// The findings ApplyPaymentSucceeded repairs (missed_success), no finding for a person.
	repaired := stripepolicy.PaymentIntentPolicy().KindsRepairedBy(stripepolicy.CommandApplyPaymentSucceeded)
	_, err := store.ResolveRecordFindings(ctx, tx, paymentID, repaired,
		reconcile.Resolution{As: reconcile.ResolutionRepaired, By: reconcile.ResolvedByReconciler, Note: note})
	return err
}
