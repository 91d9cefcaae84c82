package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// schema holds everything the example creates. It is dropped and created again on every run,
// so every run starts from the same state. The SQL spells the name out, to read as SQL.
const schema = "reconcile_demo"

// createSchema makes the host's own table, as a service taking payments would have it. The
// reconciler only ever reads it: repairs go through the outbox to the code that owns the table.
const createSchema = `
DROP SCHEMA IF EXISTS reconcile_demo CASCADE;
CREATE SCHEMA reconcile_demo;
CREATE TABLE reconcile_demo.payments (
	id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	order_id    text NOT NULL,
	external_id text NOT NULL UNIQUE, -- the Stripe PaymentIntent, pi_...
	status      text NOT NULL CHECK (status IN ('pending', 'paid', 'failed')),
	amount      bigint NOT NULL CHECK (amount > 0), -- in cents
	created_at  timestamptz NOT NULL DEFAULT now(), -- the Stripe gateway lists intents created near it
	updated_at  timestamptz NOT NULL DEFAULT now()
)`

// insertPayments loads every row in one statement and returns each row's created_at. Times are
// computed from the database's clock, the one the reconciler judges the grace period by.
const insertPayments = `
INSERT INTO reconcile_demo.payments (order_id, external_id, status, amount, created_at, updated_at)
SELECT o, e, s, a, now() - make_interval(secs => c), now() - make_interval(secs => u)
FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::float8[], $6::float8[])
	WITH ORDINALITY AS t(o, e, s, a, c, u, n)
ORDER BY n
RETURNING external_id, created_at`

// setUp creates the schema and the payments table, loads the planted rows, and creates the
// reconciler's own tables next to them. It returns every row's created_at as stored, by
// PaymentIntent id, for the PaymentIntents to be created relative to it.
func setUp(ctx context.Context, pool *pgxpool.Pool, p plan) (map[string]time.Time, error) {
	if _, err := pool.Exec(ctx, createSchema); err != nil {
		return nil, fmt.Errorf("payments: create schema %s: %w", schema, err)
	}
	n := len(p.payments)
	orders, ids, statuses := make([]string, n), make([]string, n), make([]string, n)
	amounts := make([]int64, n)
	created, updated := make([]float64, n), make([]float64, n)
	for i, pay := range p.payments {
		orders[i], ids[i], statuses[i] = pay.orderID, pay.externalID, pay.story.local
		amounts[i] = pay.amount
		created[i], updated[i] = pay.createdAgo.Seconds(), pay.updatedAgo.Seconds()
	}
	rows, err := pool.Query(ctx, insertPayments, orders, ids, statuses, amounts, created, updated)
	if err != nil {
		return nil, fmt.Errorf("payments: load payments: %w", err)
	}
	createdAt := make(map[string]time.Time, n)
	var id string
	var at time.Time
	if _, err := pgx.ForEachRow(rows, []any{&id, &at}, func() error { createdAt[id] = at; return nil }); err != nil {
		return nil, fmt.Errorf("payments: load payments: %w", err)
	}
	if len(createdAt) != n {
		return nil, fmt.Errorf("payments: load payments: %d rows stored of %d", len(createdAt), n)
	}
	// Hosts that run migrations with their own tool use pgstore.Migrations instead.
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{Schema: schema}); err != nil {
		return nil, fmt.Errorf("payments: %w", err)
	}
	return createdAt, nil
}
