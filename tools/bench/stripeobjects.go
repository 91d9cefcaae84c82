package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// The stripe bench's billing objects, -object subscription and -object invoice: the object
// kit's gateway (NewObjectGateway) and each object's policy, over a billing table whose rows
// hold what both policies read.

// billingTable is the bench's table of subscriptions or invoices.
const billingTable = "billing"

const billingDDL = `CREATE TABLE %s (
	id               bigint PRIMARY KEY,
	external_id      text NOT NULL UNIQUE,
	status           text NOT NULL,
	currency         text NOT NULL,
	amount_due       bigint NOT NULL,
	amount_paid      bigint NOT NULL,
	amount_remaining bigint NOT NULL,
	created_at       timestamptz NOT NULL,
	updated_at       timestamptz NOT NULL
)`

// billingRow is row n's columns besides its id, external id and times.
type billingRow struct {
	status, currency                       string
	amountDue, amountPaid, amountRemaining int64
}

// copyBilling migrates the reconciler's tables into schema, creates the billing table with
// rows[i] referring to ids[i], created at stripeRowCreated(i+1), analyzes it, and returns a
// store over it reading L (the status alone, or a struct of columns).
func copyBilling[L any](ctx context.Context, pool *pgxpool.Pool, schema string, ids []string, rows []billingRow, opts stripeOptions) (*pgstore.Store[L], pgstore.Tables, error) {
	tables := pgstore.Tables{Prefix: "reconcile_", Schema: schema}
	if err := pgstore.Migrate(ctx, pool, tables); err != nil {
		return nil, tables, err
	}
	table := pgx.Identifier{schema, billingTable}
	if _, err := pool.Exec(ctx, fmt.Sprintf(billingDDL, table.Sanitize())); err != nil {
		return nil, tables, fmt.Errorf("bench: create %s: %w", table.Sanitize(), err)
	}
	values := make([][]any, len(rows))
	for i, r := range rows {
		at := stripeRowCreated(i+1, opts)
		values[i] = []any{int64(i + 1), ids[i], r.status, r.currency, r.amountDue, r.amountPaid, r.amountRemaining, at, at}
	}
	cols := []string{"id", "external_id", "status", "currency", "amount_due", "amount_paid", "amount_remaining", "created_at", "updated_at"}
	if _, err := pool.CopyFrom(ctx, table, cols, pgx.CopyFromRows(values)); err != nil {
		return nil, tables, fmt.Errorf("bench: copy into %s: %w", table.Sanitize(), err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE "+table.Sanitize()); err != nil {
		return nil, tables, err
	}
	store, err := pgstore.NewOf[L](pool, pgstore.Config{Table: billingTable, Schema: schema, Tables: tables})
	return store, tables, err
}

// subscriptionMix is row n's status and its subscription's, in stripeMix's shares:
//
//	n%100 < 90  active   / active     in sync
//	      < 94  active   / canceled   Repairable subscription_canceled_externally
//	      < 97  canceled / active     NeedsReview billing_without_access
//	      < 99  past_due / past_due   in sync
//	      99    canceled / canceled   in sync, listed only with status=all
func subscriptionMix(n int) (local, external stripe.SubscriptionStatus) {
	switch r := n % 100; {
	case r < 90:
		return "active", "active"
	case r < 94:
		return "active", "canceled"
	case r < 97:
		return "canceled", "active"
	case r < 99:
		return "past_due", "past_due"
	}
	return "canceled", "canceled"
}

// subscriptionObject is the bench over Subscriptions: a row's status against the
// subscription's (no period or cancellation kept), through the kit's Subscriptions gateway.
var subscriptionObject = stripeObject[string, *stripe.Subscription]{
	name: "subscription", list: stripetest.ListSubscriptions, retrieve: stripetest.RetrieveSubscription,
	load: func(srv *stripetest.Server, created []time.Time) []string {
		subs := make([]stripetest.Subscription, len(created))
		for i := range subs {
			_, ext := subscriptionMix(i + 1)
			subs[i] = stripetest.Subscription{Status: ext, Created: created[i]}
		}
		return srv.AddSubscriptions(subs)
	},
	table: func(ctx context.Context, pool *pgxpool.Pool, schema string, ids []string, opts stripeOptions) (*pgstore.Store[string], pgstore.Tables, error) {
		rows := make([]billingRow, len(ids))
		for i := range rows {
			local, _ := subscriptionMix(i + 1)
			rows[i] = billingRow{status: string(local), currency: "usd"}
		}
		return copyBilling[string](ctx, pool, schema, ids, rows, opts)
	},
	gateway: func(cfg stripeadapter.GatewayConfig) (reconcile.Gateway[*stripe.Subscription], error) {
		return stripeadapter.NewObjectGateway(cfg, stripeadapter.Subscriptions())
	},
	classifier: stripepolicy.SubscriptionPolicy(func(status string) stripepolicy.LocalSubscription {
		return stripepolicy.LocalSubscription{Status: status}
	}),
}

// invoiceRow is the billing table's row as the invoice bench's store reads it.
type invoiceRow struct {
	Status          string `db:"status"`
	Currency        string `db:"currency"`
	AmountDue       int64  `db:"amount_due"`
	AmountPaid      int64  `db:"amount_paid"`
	AmountRemaining int64  `db:"amount_remaining"`
}

// invoiceMix is row n's status and its invoice's, in stripeMix's shares:
//
//	n%100 < 90  paid / paid   in sync
//	      < 94  open / paid   Repairable missed_payment
//	      < 97  paid / open   NeedsReview paid_locally_not_externally
//	      < 99  open / open   in sync
//	      99    void / void   in sync
func invoiceMix(n int) (local, external stripe.InvoiceStatus) {
	switch r := n % 100; {
	case r < 90:
		return "paid", "paid"
	case r < 94:
		return "open", "paid"
	case r < 97:
		return "paid", "open"
	case r < 99:
		return "open", "open"
	}
	return "void", "void"
}

// invoiceDue is invoice n's amount due, in cents.
func invoiceDue(n int) int64 { return int64(1000 + n%5000) }

// invoiceObject is the bench over Invoices: a row's status, currency and amounts against the
// invoice's, through the kit's Invoices gateway.
var invoiceObject = stripeObject[invoiceRow, *stripe.Invoice]{
	name: "invoice", list: stripetest.ListInvoices, retrieve: stripetest.RetrieveInvoice,
	load: func(srv *stripetest.Server, created []time.Time) []string {
		invs := make([]stripetest.Invoice, len(created))
		for i := range invs {
			_, ext := invoiceMix(i + 1)
			invs[i] = stripetest.Invoice{Status: ext, Created: created[i], Currency: "usd", AmountDue: invoiceDue(i + 1)}
		}
		return srv.AddInvoices(invs)
	},
	table: func(ctx context.Context, pool *pgxpool.Pool, schema string, ids []string, opts stripeOptions) (*pgstore.Store[invoiceRow], pgstore.Tables, error) {
		rows := make([]billingRow, len(ids))
		for i := range rows {
			local, _ := invoiceMix(i + 1)
			due := invoiceDue(i + 1)
			rows[i] = billingRow{status: string(local), currency: "usd", amountDue: due, amountRemaining: due}
			if local == "paid" {
				rows[i].amountPaid, rows[i].amountRemaining = due, 0
			}
		}
		return copyBilling[invoiceRow](ctx, pool, schema, ids, rows, opts)
	},
	gateway: func(cfg stripeadapter.GatewayConfig) (reconcile.Gateway[*stripe.Invoice], error) {
		return stripeadapter.NewObjectGateway(cfg, stripeadapter.Invoices())
	},
	classifier: stripepolicy.InvoicePolicy(func(r invoiceRow) stripepolicy.LocalInvoice {
		return stripepolicy.LocalInvoice{Status: r.Status, Currency: r.Currency, AmountDue: r.AmountDue, AmountPaid: r.AmountPaid, AmountRemaining: r.AmountRemaining}
	}),
}
