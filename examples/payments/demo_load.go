package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// insertPayments loads every row in one statement and returns each row's created_at. Times are
// computed from the database's clock, the one the reconciler judges the grace period by.
const insertPayments = `
INSERT INTO reconcile_demo.payments (order_id, external_id, status, amount, created_at, updated_at, currency, amount_refunded)
SELECT o, e, s, a, now() - make_interval(secs => c), now() - make_interval(secs => u), cur, r
FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::float8[], $6::float8[], $7::text[], $8::bigint[])
	WITH ORDINALITY AS t(o, e, s, a, c, u, cur, r, n)
ORDER BY n
RETURNING external_id, created_at`

// setUp (re)creates schema with the payments and ledger tables, loads the planted rows, and
// creates the reconciler's own tables next to them. It returns every row's created_at as
// stored, by PaymentIntent id, for the PaymentIntents to be created relative to it.
func setUp(ctx context.Context, pool *pgxpool.Pool, schema string, p plan) (map[string]time.Time, error) {
	created := make([]float64, len(p.payments))
	for i, pay := range p.payments {
		created[i] = pay.createdAgo.Seconds()
	}
	return load(ctx, pool, schema, p, insertPayments, created)
}

// load (re)creates schema and loads p's rows with insert, whose fifth parameter is created (in
// the rows' order) and the others those of insertPayments; no row knows of a dispute; then it creates the reconciler's
// tables. It returns every row's created_at as stored, by PaymentIntent id.
func load(ctx context.Context, pool *pgxpool.Pool, schema string, p plan, insert string, created any) (map[string]time.Time, error) {
	if !schemaRE.MatchString(schema) {
		return nil, fmt.Errorf("payments: schema %q is not a plain lower-case SQL identifier", schema)
	}
	if _, err := pool.Exec(ctx, inSchema(schema, createSchema)); err != nil {
		return nil, fmt.Errorf("payments: create schema %s: %w", schema, err)
	}
	n := len(p.payments)
	orders, ids, statuses, currencies := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	amounts, refunded := make([]int64, n), make([]int64, n)
	updated := make([]float64, n)
	for i, pay := range p.payments {
		orders[i], ids[i], statuses[i], currencies[i] = pay.orderID, pay.externalID, pay.story.local, pay.currency()
		amounts[i], refunded[i] = pay.amount, pay.refundedHere()
		updated[i] = pay.updatedAgo.Seconds()
	}
	rows, err := pool.Query(ctx, inSchema(schema, insert), orders, ids, statuses, amounts, created, updated, currencies, refunded)
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
