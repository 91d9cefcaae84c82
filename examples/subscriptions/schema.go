package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// createSchema makes the host's own table, as a service selling subscriptions would have it:
// UUID keys, which say nothing about order, so the reconciler walks the table by
// (created_at, id), a composite keyset with an index to match. The reconciler only reads it:
// every change goes through the canonical writer (writer.go). %[1]s is the quoted schema.
const createSchema = `
DROP SCHEMA IF EXISTS %[1]s CASCADE;
CREATE SCHEMA %[1]s;
CREATE TABLE %[1]s.subscriptions (
	id                     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	customer_email         text NOT NULL, -- what support searches by
	stripe_subscription_id text NOT NULL UNIQUE, -- sub_...
	status                 text NOT NULL CHECK (status IN ('incomplete', 'incomplete_expired', 'trialing',
	                           'active', 'past_due', 'canceled', 'unpaid', 'paused')), -- Stripe's words
	cancel_at_period_end   boolean NOT NULL DEFAULT false,
	paid_through           timestamptz, -- access ends then: Stripe's current period end as last recorded
	created_at             timestamptz NOT NULL DEFAULT now(),
	updated_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON %[1]s.subscriptions (created_at, id);`

// setUp drops and creates schema with the host's table and the reconciler's own tables.
func setUp(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if _, err := pool.Exec(ctx, fmt.Sprintf(createSchema, pgx.Identifier{schema}.Sanitize())); err != nil {
		return fmt.Errorf("subscriptions: create schema %s: %w", schema, err)
	}
	return pgstore.Migrate(ctx, pool, pgstore.Tables{Schema: schema})
}
