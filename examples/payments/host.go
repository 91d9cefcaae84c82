package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripemoney"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// The host's wiring of the sweep: what a service taking payments would copy. The lanes are in
// lanes.go, the canonical writer in writer.go, the webhook handler in webhook.go, the
// dispatcher in repair.go and the review console's store in reviewer.go; the demo_*.go files
// are the demo's own machinery.

// job names the sweep; its cursor, observations and findings are kept under this name.
const job = "payments-sweep"

// paymentRow is a payments row as the reconciler reads it: the columns the money policy
// compares, scanned by name (pgstore.NewOf). The store reads the key, the PaymentIntent id and
// the times from the columns its Config names.
type paymentRow struct {
	Status         string  `db:"status"`
	Amount         int64   `db:"amount"` // in the currency's minor unit
	Currency       string  `db:"currency"`
	AmountRefunded int64   `db:"amount_refunded"`
	DisputeStatus  *string `db:"dispute_status"` // nil: never disputed
}

// localPayment is the money policy's view of a row.
func localPayment(r paymentRow) stripepolicy.LocalPayment {
	p := stripepolicy.LocalPayment{Status: r.Status, Amount: r.Amount, Currency: r.Currency, AmountRefunded: r.AmountRefunded}
	if r.DisputeStatus != nil {
		p.DisputeStatus = *r.DisputeStatus
	}
	return p
}

// moneyPolicy judges a row against its payment at Stripe: the status, and then the amount, the
// currency, the refunds and the disputes (the table is in stripepolicy's package doc).
var moneyPolicy = stripepolicy.PaymentPolicy(localPayment)

// paymentStore is what the sweep, the lanes and the health check need of a store: the
// reconciler's interfaces. A host passes its *pgstore.Store[paymentRow] (newStore); the demo,
// with no database to reach, passes a memstore holding the same rows (demo_backend.go).
type paymentStore interface {
	reconcile.Store[paymentRow]
	reconcile.Matcher[paymentRow]
	reconcile.LaneSink
	reconcile.StatusReader
	reconcile.Reviewer
}

// newStore returns the store over schema's payments table, with the reconciler's tables next
// to it.
func newStore(pool *pgxpool.Pool, schema string) (*pgstore.Store[paymentRow], error) {
	// pgstore reads each row's created_at (Config.CreatedAtColumn, by default "created_at"),
	// which the gateway uses to list the PaymentIntents created near a batch's rows.
	return pgstore.NewOf[paymentRow](pool, pgstore.Config{
		Table:         "payments",
		Schema:        schema, // the reconciler's tables too: store.Tables()
		AggregateType: "payment",
		// The review API and the console find a payment's findings by its order id too.
		SearchColumns: []string{"order_id"},
	})
}

// newPayments returns the gateway the sweep, the lanes and the repairs share, as a host has
// one: the object kit's gateway of PaymentIntents, and stripemoney's reads of each payment's
// refunds and disputes on it.
func newPayments(cfg stripeadapter.GatewayConfig) (*stripemoney.Gateway, error) {
	intents, err := stripeadapter.NewObjectGateway(cfg, stripeadapter.PaymentIntents())
	if err != nil {
		return nil, err
	}
	return stripemoney.New(intents, stripemoney.Config{})
}

// reconcilerOver returns the reconciler of store's payments through gateway, stripetest's or
// real Stripe's: the one the run uses either way. It reads each PaymentIntent with its latest
// charge (amount refunded, disputed) in the same list call, and a disputed charge's disputes.
func reconcilerOver(store paymentStore, gateway *stripemoney.Gateway, batchSize int, limiter reconcile.Limiter) (*reconcile.Reconciler[paymentRow, *stripepolicy.Payment], error) {
	return reconcile.New(reconcile.Config[paymentRow, *stripepolicy.Payment]{
		Job:        job,
		Source:     store,
		Sink:       store,
		Gateway:    gateway,
		Classifier: moneyPolicy,
		BatchSize:  batchSize,
		Limiter:    limiter,
		// Real Stripe calls take a few hundred milliseconds; several in flight keep a batch short
		// while the limiter sets the pace.
		Concurrency: 8,
	})
}

// healthPolicy is what the example judges health by: the defaults, but lanes must have caught
// up within 15 minutes. A host runs the events lane every minute, and a lane that has not
// reached the end of its feed for 15 minutes has stopped finding lost webhooks; the default,
// the 72-hour lag SLO, would notice days late. The bound is one for all of a job's lanes: here
// the reverse scan completes its pass at once, but a host that spreads a pass over hours must
// raise the bound to that, for the events lane too.
var healthPolicy = reconcile.HealthPolicy{MaxLaneLag: 15 * time.Minute}

// newMonitor is the process's one reconcile.Monitor of the job: the health endpoint
// (reconcile.NewHealthHandler), the review console and the metrics read the job's status
// through it, share its reads and judge it by healthPolicy, as jobHealth does.
func newMonitor(store reconcile.StatusReader, logger *slog.Logger) (*reconcile.Monitor, error) {
	return reconcile.NewMonitor(reconcile.MonitorConfig{Logger: logger,
		Jobs: []reconcile.MonitorJob{{Name: job, Status: store, Policy: healthPolicy}}})
}

// jobHealth reads the job's status (the sweep's and the lanes') and judges it by healthPolicy:
// what a host serves on its health endpoint and alerts on.
func jobHealth(ctx context.Context, store reconcile.StatusReader) (reconcile.Status, reconcile.Health, error) {
	st, err := store.Status(ctx, job)
	if err != nil {
		return st, reconcile.Health{}, err
	}
	return st, reconcile.EvaluateHealth(st, healthPolicy), nil
}
