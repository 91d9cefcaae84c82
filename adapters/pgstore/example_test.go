package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

// exampleDB connects to the test database (DATABASE_URL, else the local default) with a new
// schema of its own first in the search_path, holding a payments table as a host has one, and
// returns a func that drops the schema. Examples run beside the tests, each in its own schema.
func exampleDB(ctx context.Context) (*pgxpool.Pool, func()) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	schema := "ex_" + hex.EncodeToString(b[:])
	dbURL, _ := pgenv.URL("TEST_DATABASE_URL", "DATABASE_URL")
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		panic(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		panic(err)
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()+`;
		CREATE TABLE payments (
			id bigint PRIMARY KEY, stripe_payment_intent_id text NOT NULL, status text NOT NULL,
			created_at timestamptz NOT NULL DEFAULT now() - interval '2 days',
			updated_at timestamptz NOT NULL DEFAULT now() - interval '1 day');
		INSERT INTO payments (id, stripe_payment_intent_id, status) VALUES
			(1, 'pi_1', 'paid'), (2, 'pi_2', 'pending'), (3, 'pi_3', 'paid');`); err != nil {
		panic(err)
	}
	return pool, func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		pool.Close()
	}
}

// stripeSays is a gateway for the examples: what Stripe holds for each PaymentIntent.
var stripeSays = reconcile.GatewayFunc[string](func(_ context.Context, id string) (string, error) {
	switch id {
	case "pi_1", "pi_2":
		return "succeeded", nil
	case "pi_3":
		return "canceled", nil
	}
	return "", reconcile.ErrNotFound
})

// policy is the payments policy of the examples, as a rule table.
var policy = func() *reconcile.RuleTable[string, string] {
	same := func(s string) string { return s }
	t, err := reconcile.NewRuleTable(same, same,
		reconcile.Rule[string, string]{Local: []string{"paid"}, External: []string{"succeeded"},
			Decision: reconcile.Decision{Verdict: reconcile.InSync}},
		reconcile.Rule[string, string]{Local: []string{"pending"}, External: []string{"succeeded"},
			Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}},
		reconcile.Rule[string, string]{Local: []string{"paid"}, External: []string{"canceled"},
			Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "paid_locally_not_externally"}},
	)
	if err != nil {
		panic(err)
	}
	return t
}()

// A sweep over a host's payments table: the store reads it with a keyset cursor and commits
// observations, findings and repair commands to the reconciler's own tables, which Migrate
// creates. The host table is only read.
func Example() {
	ctx := context.Background()
	pool, drop := exampleDB(ctx)
	defer drop()

	store, err := pgstore.New(pool, pgstore.Config{
		Table:            "payments",
		ExternalIDColumn: "stripe_payment_intent_id",
	})
	if err != nil {
		panic(err)
	}
	if err := pgstore.Migrate(ctx, pool, store.Tables()); err != nil {
		panic(err)
	}
	rep, err := reconcile.RunBatch(ctx, reconcile.Config[string, string]{
		Job: "payments", Source: store, Sink: store, Gateway: stripeSays, Classifier: policy,
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("scanned %d, cycle complete %t, %d findings, %d repair commands\n", rep.Scanned, rep.Wrapped, rep.NewFindings, rep.NewCommands)
	findings, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: "payments"})
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		fmt.Printf("payment %s: %s (%s here, %s at Stripe) %s\n", f.RecordID, f.Kind, f.Local, f.External, f.Command)
	}
	// Output:
	// scanned 3, cycle complete true, 2 findings, 1 repair commands
	// payment 2: missed_success (pending here, succeeded at Stripe) ApplyPaymentSucceeded
	// payment 3: paid_locally_not_externally (paid here, canceled at Stripe)
}

// sweptStore is Example's store after one batch of job "payments", for the examples that
// look at what it recorded.
func sweptStore(ctx context.Context) (*pgstore.Store[string], func()) {
	pool, drop := exampleDB(ctx)
	store, err := pgstore.New(pool, pgstore.Config{Table: "payments", ExternalIDColumn: "stripe_payment_intent_id"})
	if err != nil {
		panic(err)
	}
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		panic(err)
	}
	cfg := reconcile.Config[string, string]{Job: "payments", Source: store, Sink: store, Gateway: stripeSays, Classifier: policy}
	if _, err := reconcile.RunBatch(ctx, cfg); err != nil {
		panic(err)
	}
	return store, drop
}

// Status is what health is judged from: the lag of the least recently verified row, cycles,
// the last batch, and open findings by kind.
func ExampleStore_Status() {
	ctx := context.Background()
	store, drop := sweptStore(ctx)
	defer drop()
	st, err := store.Status(ctx, "payments")
	if err != nil {
		panic(err)
	}
	// Rows 1 and 2 were answered and verified just now; row 3 too (its finding is for a person).
	fmt.Printf("rows %d, lag under a minute %t, cycles %d\n", st.Rows, st.Lag < time.Minute, st.CyclesCompleted)
	for _, kind := range st.OpenFindingKinds() {
		fmt.Printf("open %s: %d\n", kind, st.OpenFindings[kind])
	}
	// Output:
	// rows 3, lag under a minute true, cycles 1
	// open missed_success: 1
	// open paid_locally_not_externally: 1
}

// A person resolves a finding: who, how and why are kept in its history, which the review
// console shows.
func ExampleStore_ResolveFinding() {
	ctx := context.Background()
	store, drop := sweptStore(ctx)
	defer drop()
	open, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: "payments", Kind: "paid_locally_not_externally"})
	if err != nil {
		panic(err)
	}
	id := open[0].ID
	if err := store.ResolveFinding(ctx, id, reconcile.Resolution{As: "refunded_by_hand", By: "ada", Note: "customer refunded in the Dashboard"}); err != nil {
		panic(err)
	}
	d, err := store.Finding(ctx, id)
	if err != nil {
		panic(err)
	}
	for _, e := range d.History {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s by %s %s %s", e.Action, e.Actor, e.Resolution, e.Note)))
	}
	// Output:
	// detected by payments
	// resolved by ada refunded_by_hand customer refunded in the Dashboard
}

// Hosts that run migrations with their own tool take the reconciler's as files.
func ExampleMigrations() {
	files, err := pgstore.Migrations(pgstore.Tables{Schema: "billing", Prefix: "recon_"})
	if err != nil {
		panic(err)
	}
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		panic(err)
	}
	for _, n := range names {
		fmt.Println(n)
	}
	// Output:
	// 001_init.sql
	// 002_repair.sql
	// 003_lanes.sql
	// 004_shards.sql
	// 005_cycle_end.sql
	// 006_finding_external_id.sql
	// 007_finding_diffs.sql
	// 008_lag_marks.sql
	// 009_coverage.sql
	// 010_cycle_end_cycle.sql
	// 011_failures.sql
	// 012_finding_successor.sql
	// 013_lane_failures.sql
	// 014_groups.sql
	// 015_observations_fillfactor.sql
}

// Check fails early, and says what to do, when the reconciler's tables were never migrated.
func ExampleStore_Check() {
	ctx := context.Background()
	pool, drop := exampleDB(ctx)
	defer drop()

	store, err := pgstore.New(pool, pgstore.Config{Table: "payments", ExternalIDColumn: "stripe_payment_intent_id"})
	if err != nil {
		panic(err)
	}
	err = store.Check(ctx)
	fmt.Println(errors.Is(err, pgstore.ErrNotMigrated))
	fmt.Println(err)
	if err := pgstore.Migrate(ctx, pool, store.Tables()); err != nil {
		panic(err)
	}
	fmt.Println(store.Check(ctx))
	// Output:
	// true
	// pgstore: the reconciler's tables "reconcile_*" in the search_path do not exist (no migration is recorded): run pgstore.Migrate(ctx, db, store.Tables()) at startup, or apply pgstore.Migrations(store.Tables()) with your migration tool
	// <nil>
}
