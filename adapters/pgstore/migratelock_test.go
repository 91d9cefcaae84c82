package pgstore_test

import (
	"context"
	"io/fs"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// Two processes migrate the same tables at once, one naming their schema (Tables{Schema: S}),
// the other finding it on its search_path (Tables{}): they take turns, and both succeed.
func TestMigrationsOfOneSchemaSpelledTwoWaysTakeTurns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, schema := pgtest.PoolSchema(t)
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	cfg.ConnConfig.RuntimeParams["application_name"] = schema // to find this test's sessions
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	// Tables migrated by an older version, up to 004; a gate on recording a migration holds
	// the first migration to get there inside its transaction until both have begun.
	files, err := pgstore.Migrations(pgstore.Tables{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, paymentsDDL); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"001_init.sql", "002_repair.sql", "003_lanes.sql", "004_shards.sql"} {
		sql, err := fs.ReadFile(files, n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, string(sql)); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	const gate = `pg_advisory_xact_lock_shared(hashtext(current_schema() || '.gate'))`
	if _, err := pool.Exec(ctx, `CREATE FUNCTION gate() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN PERFORM `+gate+`; RETURN NEW; END$$;
		CREATE TRIGGER gate BEFORE INSERT ON reconcile_migrations FOR EACH ROW EXECUTE FUNCTION gate()`); err != nil {
		t.Fatal(err)
	}
	holder, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock(hashtext(current_schema() || '.gate'))`); err != nil {
		t.Fatal(err)
	}

	errs := make(chan error, 2)
	for _, tables := range []pgstore.Tables{{Schema: schema}, {}} {
		go func() { errs <- pgstore.Migrate(ctx, pool, tables) }()
	}
	// Both have begun: one waits at the gate, the other for the first (for the migration
	// lock, or for the tables the first is altering), not for some other schema's migration.
	for begun := false; !begun; {
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity AS w
				JOIN pg_stat_activity AS g ON g.pid = ANY (pg_blocking_pids(w.pid))
				WHERE w.application_name = $1 AND g.application_name = $1 AND g.wait_event_type = 'Lock')`,
			schema).Scan(&begun); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock(hashtext(current_schema() || '.gate'))`); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("Migrate: %v", err)
		}
	}
	s, err := pgstore.New(pool, pgstore.Config{Table: "payments", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check after both migrations: %v", err)
	}
}
