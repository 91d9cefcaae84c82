package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// paymentsTable is the host table the benchmarks reconcile, in the benchmark's own schema.
const paymentsTable = "payments"

// paymentsDDL is the seed's payments table (as in seed_reference.py), without the seed's
// observation columns: the store keeps observations in its own table. Every row is old
// (2026-01-01), so none is within the grace period and every row is sent to the gateway.
const paymentsDDL = `CREATE TABLE %s (
	id                       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	order_id                 text NOT NULL,
	stripe_payment_intent_id text NOT NULL UNIQUE,
	status                   text NOT NULL CHECK (status IN ('pending', 'paid', 'failed')),
	version                  bigint NOT NULL DEFAULT 0,
	created_at               timestamptz NOT NULL DEFAULT '2026-01-01 00:00:00+00',
	updated_at               timestamptz NOT NULL DEFAULT '2026-01-01 00:00:00+00'
)`

// seedMix is the benchmark mix of seed_reference.py for row i (1-based, the row's id and the
// number in its PaymentIntent id pi_<i>): the local status, the PaymentIntent's status, and
// false for the 1% the gateway cannot answer.
//
//	i%100 < 90  paid    / succeeded    in sync
//	      < 94  pending / succeeded    Repairable missed_success (a finding and a command)
//	      < 97  paid    / canceled     NeedsReview (a finding)
//	      < 99  pending / processing   InFlight
//	      else  paid    / unavailable  Unverifiable
func seedMix(i int) (local string, external stripe.PaymentIntentStatus, available bool) {
	switch r := i % 100; {
	case r < 90:
		return stripepolicy.LocalPaid, stripe.PaymentIntentStatusSucceeded, true
	case r < 94:
		return stripepolicy.LocalPending, stripe.PaymentIntentStatusSucceeded, true
	case r < 97:
		return stripepolicy.LocalPaid, stripe.PaymentIntentStatusCanceled, true
	case r < 99:
		return stripepolicy.LocalPending, stripe.PaymentIntentStatusProcessing, true
	default:
		return stripepolicy.LocalPaid, "", false
	}
}

// expected returns the findings and repair commands one cycle over rows 1..n must produce.
func expected(n int) (findings, commands int64) {
	for r := range 100 {
		// rows i in 1..n with i%100 == r
		k := int64(n / 100)
		if r != 0 && r <= n%100 {
			k++
		}
		switch {
		case r >= 90 && r < 94:
			findings += k
			commands += k
		case r >= 94 && r < 97:
			findings += k
		}
	}
	return findings, commands
}

// seedRows generates the payments rows for COPY one at a time, so that loading a million rows
// takes no more memory than loading a thousand.
type seedRows struct {
	n, i int
	vals [3]any
}

var _ pgx.CopyFromSource = (*seedRows)(nil)

func (s *seedRows) Next() bool {
	if s.i >= s.n {
		return false
	}
	s.i++
	return true
}

// Values reuses one slice: pgx encodes each row before asking for the next.
func (s *seedRows) Values() ([]any, error) {
	n := strconv.Itoa(s.i)
	local, _, _ := seedMix(s.i)
	s.vals[0], s.vals[1], s.vals[2] = "o_"+n, "pi_"+n, local
	return s.vals[:], nil
}

func (s *seedRows) Err() error { return nil }

// loadPayments creates the payments table in schema and loads n rows with COPY. Ids are
// assigned in COPY order, so row i has id i and PaymentIntent pi_<i>. With analyze it then
// analyzes the table, as autovacuum soon would, so that the timed cycle does not race it.
func loadPayments(ctx context.Context, pool *pgxpool.Pool, schema string, n int, analyze bool) error {
	table := pgx.Identifier{schema, paymentsTable}
	if _, err := pool.Exec(ctx, fmt.Sprintf(paymentsDDL, table.Sanitize())); err != nil {
		return fmt.Errorf("bench: create %s: %w", table.Sanitize(), err)
	}
	copied, err := pool.CopyFrom(ctx, table, []string{"order_id", "stripe_payment_intent_id", "status"}, &seedRows{n: n})
	if err != nil {
		return fmt.Errorf("bench: copy into %s: %w", table.Sanitize(), err)
	}
	if copied != int64(n) {
		return fmt.Errorf("bench: copied %d rows into %s, want %d", copied, table.Sanitize(), n)
	}
	if !analyze {
		return nil
	}
	if _, err := pool.Exec(ctx, "ANALYZE "+table.Sanitize()); err != nil {
		return fmt.Errorf("bench: analyze %s: %w", table.Sanitize(), err)
	}
	return nil
}

// copyPayments migrates the reconciler's tables into schema, creates its payments table, copies
// rows into cols, analyzes it, and returns the store over it.
func copyPayments(ctx context.Context, pool *pgxpool.Pool, schema string, cols []string, rows [][]any) (*pgstore.Store[string], pgstore.Tables, error) {
	tables := pgstore.Tables{Prefix: "reconcile_", Schema: schema}
	if err := pgstore.Migrate(ctx, pool, tables); err != nil {
		return nil, tables, err
	}
	table := pgx.Identifier{schema, paymentsTable}
	if _, err := pool.Exec(ctx, fmt.Sprintf(paymentsDDL, table.Sanitize())); err != nil {
		return nil, tables, fmt.Errorf("bench: create %s: %w", table.Sanitize(), err)
	}
	if _, err := pool.CopyFrom(ctx, table, cols, pgx.CopyFromRows(rows)); err != nil {
		return nil, tables, fmt.Errorf("bench: copy into %s: %w", table.Sanitize(), err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE "+table.Sanitize()); err != nil {
		return nil, tables, err
	}
	store, err := pgstore.New(pool, pgstore.Config{Table: paymentsTable, Schema: schema, ExternalIDColumn: "stripe_payment_intent_id", Tables: tables})
	return store, tables, err
}
