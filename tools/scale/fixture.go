// Package scale runs a sharded reconciliation job in several worker processes against one
// PostgreSQL database and one in-process stripetest server, and measures it: the harness of the
// multi-process tests of sharding and the shared rate budget, and of `go run ./tools/bench
// scale`.
//
// The parent process loads a payments table and the matching PaymentIntents (Load), then Run
// starts worker processes, re-executions of its own binary told what to do through an
// environment variable (a binary that may be one calls MaybeRunWorker first thing, in main or
// TestMain). Each worker leases shards (pgshard.RunShard), asks stripetest over HTTP through
// the real Stripe gateway (bulk list calls), paced by one pgbudget.Budget shared by all, and
// stops when the job has completed the cycles asked for. A trigger logs every verification the
// reconciler commits with the job cycle it belongs to, so that Run can check that every row was
// verified exactly once per cycle; another logs every call the budget grants, at its time by
// the database clock, which Run holds to the budget's rate and compares with the times the
// workers sent their requests; stripetest's request log gives the calls per second received.
package scale

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// Job is the sharded job's name.
const Job = "payments-scale"

// base is the first row's created_at; row i is created 10 s·i later, and its PaymentIntent 0–30 s
// after its row, so that the gateway's bulk list finds a batch's objects in a narrow window.
var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Mix is the drift planted in row i (1-based): its local status and its PaymentIntent's.
//
//	i%100 < 95  paid    / succeeded   in sync
//	      < 98  pending / succeeded   Repairable missed_success: a finding and a repair command
//	      else  paid    / canceled    NeedsReview: a finding
func Mix(i int) (local string, external stripe.PaymentIntentStatus) {
	switch r := i % 100; {
	case r < 95:
		return stripepolicy.LocalPaid, stripe.PaymentIntentStatusSucceeded
	case r < 98:
		return stripepolicy.LocalPending, stripe.PaymentIntentStatusSucceeded
	default:
		return stripepolicy.LocalPaid, stripe.PaymentIntentStatusCanceled
	}
}

// Expected returns the findings and repair commands one cycle over rows 1..n must produce.
func Expected(n int) (findings, commands int64) {
	for i := 1; i <= n; i++ {
		switch r := i % 100; {
		case r >= 95 && r < 98:
			findings++
			commands++
		case r >= 98:
			findings++
		}
	}
	return findings, commands
}

// Fixture is a loaded schema and fake Stripe for runs.
type Fixture struct {
	Pool   *pgxpool.Pool
	URL    string // the database, for the workers
	Schema string
	Rows   int
	Stripe *stripetest.Server
}

// Load creates, in schema (which must exist and be empty), a payments table of rows rows with
// the drift of Mix, the reconciler's tables, and the verification log, and starts a stripetest
// server holding the PaymentIntents. Close stops the server.
func Load(ctx context.Context, pool *pgxpool.Pool, dbURL, schema string, rows int) (*Fixture, error) {
	srv := stripetest.NewServer(stripetest.Options{})
	f := &Fixture{Pool: pool, URL: dbURL, Schema: schema, Rows: rows, Stripe: srv}
	pis := make([]stripetest.PaymentIntent, rows)
	for i := range pis {
		n := i + 1
		_, ext := Mix(n)
		created := base.Add(time.Duration(n)*10*time.Second + time.Duration(n*7%31)*time.Second)
		pis[i] = stripetest.PaymentIntent{Status: ext, Created: created, Amount: int64(1000 + n%5000)}
	}
	ids := srv.AddPaymentIntents(pis)
	tables := pgstore.Tables{Schema: schema}
	if err := pgstore.Migrate(ctx, pool, tables); err != nil {
		srv.Close()
		return nil, err
	}
	payments := pgx.Identifier{schema, "payments"}
	stmts := []string{
		`CREATE TABLE ` + payments.Sanitize() + ` (
			id                       bigint PRIMARY KEY,
			stripe_payment_intent_id text NOT NULL UNIQUE,
			status                   text NOT NULL,
			created_at               timestamptz NOT NULL,
			updated_at               timestamptz NOT NULL DEFAULT '2026-01-01 00:00:00+00'
		)`,
		// Every verification committed, with the job cycle it belongs to: a batch read before
		// the commit that completes a cycle cannot commit after it, and that commit waits for
		// every other shard's commits, so the count read at commit time is the batch's cycle.
		`CREATE TABLE ` + f.table("verifications") + ` (record_id text NOT NULL, cycle bigint NOT NULL)`,
		`CREATE FUNCTION ` + f.table("log_verification") + `() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN
			INSERT INTO ` + f.table("verifications") + ` SELECT NEW.record_id, c.cycles_completed FROM ` + f.table("reconcile_cursors") + ` c WHERE c.job = NEW.job;
			RETURN NULL;
		END$$`,
		`CREATE TRIGGER log_verification AFTER INSERT OR UPDATE ON ` + f.table("reconcile_observations") +
			` FOR EACH ROW EXECUTE FUNCTION ` + f.table("log_verification") + `()`,
		// Every call the shared budget granted, at the time (by the database clock) it granted
		// it, which is what the budget promises to bound. A grant of n calls leaves the bucket
		// at "at" (its base) holding tokens = avail - n, and call i (from 1) may be made when
		// the bucket, refilling at rate from base, holds i tokens (pgbudget's reserve): at
		// base + max(0, i - avail)/rate. A throttle grants nothing and logs nothing.
		`CREATE TABLE ` + f.table("grants") + ` (key text NOT NULL, at timestamptz NOT NULL)`,
		`CREATE FUNCTION ` + f.table("log_grants") + `() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN
			INSERT INTO ` + f.table("grants") + ` SELECT NEW.key,
				NEW.at + make_interval(secs => greatest(0, i - (NEW.tokens + (NEW.granted - OLD.granted))) / NEW.rate)
			FROM generate_series(1, NEW.granted - OLD.granted) AS i;
			RETURN NULL;
		END$$`,
		`CREATE TRIGGER log_grants AFTER UPDATE ON ` + f.table("reconcile_rate_budgets") +
			` FOR EACH ROW WHEN (NEW.granted > OLD.granted) EXECUTE FUNCTION ` + f.table("log_grants") + `()`,
		// Where a worker told to hang says it is hanging.
		`CREATE TABLE ` + f.table("hangs") + ` (owner text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
	}
	for _, q := range stmts {
		if _, err := pool.Exec(ctx, q); err != nil {
			srv.Close()
			return nil, fmt.Errorf("scale: load: %w", err)
		}
	}
	data := make([][]any, rows)
	for i := range data {
		n := i + 1
		local, _ := Mix(n)
		data[i] = []any{int64(n), ids[i], local, base.Add(time.Duration(n) * 10 * time.Second)}
	}
	if _, err := pool.CopyFrom(ctx, payments, []string{"id", "stripe_payment_intent_id", "status", "created_at"}, pgx.CopyFromRows(data)); err != nil {
		srv.Close()
		return nil, fmt.Errorf("scale: load: %w", err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE "+payments.Sanitize()); err != nil {
		srv.Close()
		return nil, fmt.Errorf("scale: load: %w", err)
	}
	return f, nil
}

// table returns a quoted name in the fixture's schema.
func (f *Fixture) table(name string) string { return pgx.Identifier{f.Schema, name}.Sanitize() }

// Close stops the fake Stripe.
func (f *Fixture) Close() { f.Stripe.Close() }

// Reset forgets every run: the reconciler's state, the verification log and stripetest's log.
// The payments and PaymentIntents stay.
func (f *Fixture) Reset(ctx context.Context) error {
	// The finding audit may not be truncated (a trigger forbids it), and runs write none: the
	// findings it would reference are deleted row by row.
	for _, q := range []string{
		"TRUNCATE " + f.table("reconcile_cursors") + ", " + f.table("reconcile_observations") + ", " + f.table("reconcile_outbox") + ", " +
			f.table("reconcile_shards") + ", " + f.table("reconcile_rate_budgets") + ", " + f.table("verifications") + ", " + f.table("hangs") + ", " +
			f.table("grants"),
		"DELETE FROM " + f.table("reconcile_findings"),
	} {
		if _, err := f.Pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("scale: reset: %w", err)
		}
	}
	f.Stripe.ResetLog()
	return nil
}
