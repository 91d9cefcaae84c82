package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// commitSettings are the settings a commit changes for its own statements, the range-checked
// observations' joins included.
const commitSettings = `SELECT current_setting('enable_sort') || ' ' || current_setting('enable_incremental_sort') || ' ' ||
	current_setting('jit') || ' ' || current_setting('enable_nestloop') || ' ' || current_setting('enable_hashjoin') || ' ' ||
	current_setting('TimeZone') || ' ' || current_setting('plan_cache_mode')`

// A store whose DB is the host's own transaction commits its batches in savepoints, which keep
// the settings the commit changed for the rest of the host's transaction: the commit gives the
// host its own back, whatever it set (each the opposite of what the commit sets). A sweep's
// batches, the first after no position and the wrap, both range-checked.
func TestAStoreInAHostTransactionLeavesTheHostsSettingsAsTheyWere(t *testing.T) {
	t.Parallel()
	pool, _ := newStore(t, pgstore.Config{})
	insertPayments(t, pool, 1, 2, 3)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the test's writes go with it
	for _, set := range []string{`SET LOCAL enable_sort = on`, `SET LOCAL enable_incremental_sort = on`, `SET LOCAL jit = on`,
		`SET LOCAL enable_nestloop = on`, `SET LOCAL enable_hashjoin = off`, `SET LOCAL TimeZone = 'Asia/Kolkata'`,
		`SET LOCAL plan_cache_mode = force_custom_plan`} {
		if _, err := tx.Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	sweepKeepsSettings(t, tx, tx, "the host's transaction")
}

// A store over one connection whose session the host configured (SET, not SET LOCAL) leaves
// that session's settings as they were after each commit, range-checked or not.
func TestAStoreOverAConnectionLeavesItsSessionSettingsAsTheyWere(t *testing.T) {
	t.Parallel()
	pool, _ := newStore(t, pgstore.Config{})
	insertPayments(t, pool, 1, 2, 3)
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	defer conn.Exec(ctx, `RESET ALL`) //nolint:errcheck // the pool's next user gets the defaults back
	for _, set := range []string{`SET enable_sort = on`, `SET jit = on`, `SET enable_nestloop = on`, `SET enable_hashjoin = off`,
		`SET TimeZone = 'Asia/Kolkata'`, `SET plan_cache_mode = force_custom_plan`} {
		if _, err := conn.Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	sweepKeepsSettings(t, conn.Conn(), conn, "the session")
}

// sweepKeepsSettings runs a sweep's two batches (the first after no position, and the wrap)
// through a store over db and fails the test unless what reads, on db's own session, sees the
// settings it saw before after each batch's commit; who names that session in the failure.
func sweepKeepsSettings(t *testing.T, db pgstore.DB, session interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, who string) {
	t.Helper()
	ctx := context.Background()
	var want string
	if err := session.QueryRow(ctx, commitSettings).Scan(&want); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.New(db, pgstore.Config{Table: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, BatchSize: 2, Classifier: reconciletest.Classifier(),
		Gateway: reconciletest.NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "canceled", "pi_3": "succeeded"})}
	for i, wrapped := range []bool{false, true} {
		rep, err := reconcile.RunBatch(ctx, cfg)
		if err != nil || rep.Wrapped != wrapped || rep.Changed != 0 {
			t.Fatalf("batch %d: %+v, %v; want every row judged", i+1, rep, err)
		}
		var got string
		if err := session.QueryRow(ctx, commitSettings).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("after batch %d %s has enable_sort, enable_incremental_sort, jit, enable_nestloop, enable_hashjoin, TimeZone, plan_cache_mode %q; want its own %q",
				i+1, who, got, want)
		}
	}
}
