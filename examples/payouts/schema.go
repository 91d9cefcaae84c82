package main

import (
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// defaultSchema holds everything the example creates. It is dropped and created again on every
// run. The SQL spells the name out, to read as SQL; inSchema puts another schema in its place,
// so that tests can each have their own.
const defaultSchema = "payouts_demo"

// schemaRE matches the schema names the example accepts: plain SQL identifiers.
var schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// inSchema returns query, written for payouts_demo, for schema (quoted), which must match
// schemaRE.
func inSchema(schema, query string) string {
	if schema == defaultSchema {
		return query
	}
	return strings.ReplaceAll(query, defaultSchema, pgx.Identifier{schema}.Sanitize())
}

// createSchema makes the host's own tables: one per thing it books, as a service that keeps its
// money in its own tables would have them (examples/payments shows the other shape, one ledger
// table). Payments and refunds are booked in what the customer paid (presentment); invoices,
// paid in any currency, are booked by finance in what landed in the account's currency
// (settlement). Money going out (refunds, disputes) is stored positive, as the host thinks of
// it. Only the canonical writer (writer.go) writes here; the tie-out only reads (ledger.go).
const createSchema = `
DROP SCHEMA IF EXISTS payouts_demo CASCADE;
CREATE SCHEMA payouts_demo;
CREATE TABLE payouts_demo.payments (
	id                       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	stripe_payment_intent_id text NOT NULL UNIQUE,
	status                   text NOT NULL CHECK (status IN ('paid', 'failed')),
	amount                   bigint NOT NULL CHECK (amount > 0), -- minor units of currency, as charged
	currency                 text NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
	paid_at                  timestamptz NOT NULL,  -- when the service counts the money as settled
	payout_id                text,                  -- the payout that carried it, once known
	created_at               timestamptz NOT NULL DEFAULT now(),
	updated_at               timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE payouts_demo.invoices (
	id                       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	stripe_payment_intent_id text NOT NULL UNIQUE,
	amount_settled           bigint NOT NULL CHECK (amount_settled > 0), -- in the account's currency
	currency_settled         text NOT NULL CHECK (currency_settled ~ '^[a-z]{3}$'),
	paid_at                  timestamptz NOT NULL,
	payout_id                text
);
CREATE TABLE payouts_demo.refunds (
	id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	stripe_refund_id text NOT NULL UNIQUE,
	amount           bigint NOT NULL CHECK (amount > 0), -- going out, stored positive
	currency         text NOT NULL CHECK (currency ~ '^[a-z]{3}$')
);
CREATE TABLE payouts_demo.disputes (
	id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	stripe_dispute_id text NOT NULL UNIQUE,
	amount            bigint NOT NULL CHECK (amount > 0), -- withdrawn, stored positive
	currency          text NOT NULL CHECK (currency ~ '^[a-z]{3}$')
);
-- The payouts the service was told of, with the status it knows.
CREATE TABLE payouts_demo.payouts (
	id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	stripe_payout_id text NOT NULL UNIQUE,
	amount           bigint NOT NULL,
	currency         text NOT NULL,
	status           text NOT NULL
)`
