package main

import (
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// defaultSchema holds everything the example creates. It is dropped and created again on every
// run, so every run starts from the same state. The SQL spells the name out, to read as SQL;
// inSchema puts another schema in its place, so that tests can each have their own.
const defaultSchema = "reconcile_demo"

// schemaRE matches the schema names the example accepts: plain SQL identifiers.
var schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// inSchema returns query, written for reconcile_demo, for schema (quoted, so a reserved word
// works too), which must match schemaRE.
func inSchema(schema, query string) string {
	if schema == defaultSchema {
		return query
	}
	return strings.ReplaceAll(query, defaultSchema, pgx.Identifier{schema}.Sanitize())
}

// createSchema makes the host's own tables, as a service taking payments would have them. The
// reconciler only ever reads payments: repairs go through the outbox to the canonical writer
// (writer.go), the code that owns both tables.
const createSchema = `
DROP SCHEMA IF EXISTS reconcile_demo CASCADE;
CREATE SCHEMA reconcile_demo;
CREATE TABLE reconcile_demo.payments (
	id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	order_id        text NOT NULL UNIQUE, -- ours: what support searches by
	external_id     text NOT NULL UNIQUE, -- the Stripe PaymentIntent, pi_...
	status          text NOT NULL CHECK (status IN ('pending', 'paid', 'failed')),
	-- Money in the currency's minor unit, as Stripe counts it: cents, but whole yen (JPY has
	-- no minor unit) and thousandths of a dinar (KWD has three).
	amount          bigint NOT NULL CHECK (amount > 0),
	currency        text NOT NULL CHECK (currency ~ '^[a-z]{3}$'), -- ISO 4217, lower case as Stripe writes it
	amount_refunded bigint NOT NULL DEFAULT 0 CHECK (amount_refunded BETWEEN 0 AND amount),
	dispute_status  text, -- the payment's latest dispute's status, as Stripe names it; NULL: never disputed
	created_at      timestamptz NOT NULL DEFAULT now(), -- the Stripe gateway lists intents created near it
	updated_at      timestamptz NOT NULL DEFAULT now()
);
-- One row per state change that moves money: a payment becoming paid (positive), refunds
-- (negative). Only the canonical writer inserts here, and its guarded updates are what keep it
-- to one row per change (there is no unique constraint to hide a second one: the tests count
-- them).
CREATE TABLE reconcile_demo.ledger (
	id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	payment_id bigint NOT NULL REFERENCES reconcile_demo.payments,
	entry      text NOT NULL, -- payment_succeeded, refund
	amount     bigint NOT NULL, -- in the payment's currency's minor unit; a refund's is negative
	applied_by text NOT NULL, -- the writer's actor: stripe-webhook, reconciler, or a person
	created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON reconcile_demo.ledger (payment_id)`
