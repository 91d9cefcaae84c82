package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// fixture is the demo's data: the payments table and the fake Stripe holding its
// PaymentIntents.
type fixture struct {
	stripe     *stripetest.Server
	repairable int64 // payments pending here whose PaymentIntent succeeded
	review     int64 // payments paid here whose PaymentIntent was canceled
}

// load creates schema.payments with rows payments and starts a stripetest server with their
// PaymentIntents. Payment i was created 10 s·i after 2026-01-01, its PaymentIntent up to 30 s
// later, so the gateway finds a batch's PaymentIntents with a list call per hundred rows. One
// payment in 40 missed its success webhook (pending here, succeeded at Stripe), one in 97 is
// paid here though Stripe canceled it.
func load(ctx context.Context, pool *pgxpool.Pool, schema string, rows int) (*fixture, error) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fx := &fixture{stripe: stripetest.NewServer(stripetest.Options{})}
	pis := make([]stripetest.PaymentIntent, rows)
	locals := make([]string, rows)
	for i := range pis {
		n := i + 1
		local, ext := stripepolicy.LocalPaid, stripe.PaymentIntentStatusSucceeded
		switch {
		case n%40 == 0:
			local = stripepolicy.LocalPending
			fx.repairable++
		case n%97 == 0:
			ext = stripe.PaymentIntentStatusCanceled
			fx.review++
		}
		locals[i] = local
		pis[i] = stripetest.PaymentIntent{Status: ext, Amount: int64(1000 + n%5000),
			Created: base.Add(time.Duration(n)*10*time.Second + time.Duration(n*7%31)*time.Second)}
	}
	ids := fx.stripe.AddPaymentIntents(pis)
	table := pgx.Identifier{schema, "payments"}
	if _, err := pool.Exec(ctx, `CREATE TABLE `+table.Sanitize()+` (
		id                       bigint PRIMARY KEY,
		stripe_payment_intent_id text NOT NULL UNIQUE,
		status                   text NOT NULL,
		created_at               timestamptz NOT NULL,
		updated_at               timestamptz NOT NULL DEFAULT now() - interval '1 hour')`); err != nil {
		fx.stripe.Close()
		return nil, fmt.Errorf("create payments: %w", err)
	}
	data := make([][]any, rows)
	for i := range data {
		n := i + 1
		data[i] = []any{int64(n), ids[i], locals[i], base.Add(time.Duration(n) * 10 * time.Second)}
	}
	if _, err := pool.CopyFrom(ctx, table, []string{"id", "stripe_payment_intent_id", "status", "created_at"}, pgx.CopyFromRows(data)); err != nil {
		fx.stripe.Close()
		return nil, fmt.Errorf("load payments: %w", err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE "+table.Sanitize()); err != nil {
		fx.stripe.Close()
		return nil, err
	}
	return fx, nil
}
