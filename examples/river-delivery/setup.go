package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

// fixture is the demo's fake Stripe and what was planted.
type fixture struct {
	stripe             *stripetest.Server
	repairable, review int
}

// setUp drops and creates the schema, migrates River and the reconciler there, and loads the
// payments and their PaymentIntents. The pool it returns works in the schema (search_path).
func setUp(ctx context.Context, opts options) (*pgxpool.Pool, *fixture, error) {
	admin, err := pgenv.Connect(ctx, opts.DatabaseURL, opts.DatabaseSource)
	if err != nil {
		return nil, nil, err
	}
	schema := pgx.Identifier{opts.Schema}.Sanitize()
	for _, q := range []string{"DROP SCHEMA IF EXISTS " + schema + " CASCADE", "CREATE SCHEMA " + schema} {
		if _, err := admin.Exec(ctx, q); err != nil {
			admin.Close()
			return nil, nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	pcfg := admin.Config()
	admin.Close()
	pcfg.ConnConfig.RuntimeParams["search_path"] = opts.Schema
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, nil, err
	}
	fx, err := load(ctx, pool, opts)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return pool, fx, nil
}

func load(ctx context.Context, pool *pgxpool.Pool, opts options) (*fixture, error) {
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: opts.Schema})
	if err != nil {
		return nil, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("river migrations: %w", err)
	}
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{Schema: opts.Schema}); err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE payments (
		id                       bigint PRIMARY KEY,
		stripe_payment_intent_id text NOT NULL UNIQUE,
		status                   text NOT NULL,
		created_at               timestamptz NOT NULL,
		updated_at               timestamptz NOT NULL DEFAULT now() - interval '1 hour')`); err != nil {
		return nil, fmt.Errorf("create payments: %w", err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fx := &fixture{stripe: stripetest.NewServer(stripetest.Options{})}
	pis := make([]stripetest.PaymentIntent, opts.Rows)
	locals := make([]string, opts.Rows)
	for i := range pis {
		n := i + 1
		local, ext := stripepolicy.LocalPaid, stripe.PaymentIntentStatusSucceeded
		switch {
		case n%20 == 0:
			local = stripepolicy.LocalPending
			fx.repairable++
		case n%47 == 0:
			ext = stripe.PaymentIntentStatusCanceled
			fx.review++
		}
		locals[i] = local
		pis[i] = stripetest.PaymentIntent{Status: ext, Amount: int64(1000 + n), Created: base.Add(time.Duration(n) * time.Minute)}
	}
	ids := fx.stripe.AddPaymentIntents(pis)
	rows := make([][]any, opts.Rows)
	for i := range rows {
		rows[i] = []any{int64(i + 1), ids[i], locals[i], base.Add(time.Duration(i+1) * time.Minute)}
	}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"payments"}, []string{"id", "stripe_payment_intent_id", "status", "created_at"}, pgx.CopyFromRows(rows)); err != nil {
		fx.stripe.Close()
		return nil, fmt.Errorf("load payments: %w", err)
	}
	return fx, nil
}
