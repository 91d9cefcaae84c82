package pgstore_test

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

const runMigrate = "run pgstore.Migrate(ctx, db, store.Tables())"

// A host that forgot Migrate: Check passed, and the first batch failed with a bare
// `relation "reconcile_cursors" does not exist (SQLSTATE 42P01)`.
func TestCheckAndTheFirstBatchSayToMigrateWhenTheReconcilersTablesAreMissing(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, paymentsDDL); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.New(pool, pgstore.Config{Table: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Check(ctx)
	var me *pgstore.MigrationError
	if !errors.Is(err, pgstore.ErrNotMigrated) || !errors.As(err, &me) || !strings.Contains(err.Error(), runMigrate) ||
		!strings.Contains(err.Error(), `"reconcile_*" in the search_path do not exist`) {
		t.Fatalf("Check = %v; want ErrNotMigrated saying the tables do not exist and to run Migrate", err)
	}
	if len(me.Missing) != 15 || me.Missing[0] != "001_init.sql" {
		t.Errorf("Missing = %v; want every migration", me.Missing)
	}
	_, err = reconcile.RunBatch(ctx, reconcile.Config[string, string]{Job: "j", Source: s, Sink: s,
		Gateway: reconciletest.NewGateway(nil), Classifier: reconciletest.Classifier()})
	if !errors.Is(err, pgstore.ErrNotMigrated) || !strings.Contains(err.Error(), runMigrate) {
		t.Fatalf("RunBatch = %v; want the advice to run Migrate", err)
	}

	if err := pgstore.Migrate(ctx, pool, s.Tables()); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check after Migrate = %v", err)
	}
}

func TestCheckNamesTheMigrationsNotApplied(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	// A database migrated by an older version of the package.
	if _, err := pool.Exec(ctx, `DELETE FROM reconcile_migrations WHERE version >= 6`); err != nil {
		t.Fatal(err)
	}
	err := s.Check(ctx)
	if !errors.Is(err, pgstore.ErrNotMigrated) ||
		!strings.Contains(err.Error(), "lack migration 006_finding_external_id.sql, 007_finding_diffs.sql, 008_lag_marks.sql, 009_coverage.sql, 010_cycle_end_cycle.sql, 011_failures.sql, 012_finding_successor.sql, 013_lane_failures.sql, 014_groups.sql, 015_observations_fillfactor.sql: "+runMigrate) {
		t.Fatalf("Check = %v; want it to name 006 to 010 and say to run Migrate", err)
	}
}

// Once the statements are prepared, a reconciler table that goes missing still explains itself.
func TestAMissingReconcilerTableMidRunSaysToMigrate(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DROP TABLE reconcile_cursors CASCADE`); err != nil {
		t.Fatal(err)
	}
	_, err := s.Read(ctx, reconcile.ReadRequest{Job: "j", Limit: 10})
	var pe *pgconn.PgError
	if !errors.Is(err, pgstore.ErrNotMigrated) || !errors.As(err, &pe) || pe.Code != "42P01" || !strings.Contains(err.Error(), runMigrate) {
		t.Fatalf("Read = %v; want ErrNotMigrated wrapping the undefined_table error", err)
	}
	if _, err := s.Status(ctx, "j"); !errors.Is(err, pgstore.ErrNotMigrated) {
		t.Fatalf("Status = %v; want ErrNotMigrated", err)
	}
}

// A host that runs its own migration tool applies the files as they are; Check then knows
// they are current.
func TestMigrationsAppliedByAnotherToolPassCheck(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, paymentsDDL); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.New(pool, pgstore.Config{Table: "payments", Tables: pgstore.Tables{Prefix: "rk_"}})
	if err != nil {
		t.Fatal(err)
	}
	files, err := pgstore.Migrations(s.Tables())
	if err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		sql, err := fs.ReadFile(files, n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, string(sql)); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check = %v", err)
	}
	// Migrate then finds nothing to do.
	if err := pgstore.Migrate(ctx, pool, s.Tables()); err != nil {
		t.Fatal(err)
	}
}

// The schema is named once, in Config.Schema: the store, Migrate and the dispatcher all use
// store.Tables(). It used to be named in four places, and naming it only in Config.Schema
// left the reconciler's tables in the search_path.
func TestOneSchemaSettingServesStoreMigrationsAndDispatcher(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.PoolSchema(t)
	ctx := context.Background()
	billing := schema + "_billing" // not in the pool's search_path
	if _, err := pool.Exec(ctx, `CREATE SCHEMA `+billing+`; `+
		strings.Replace(paymentsDDL, "CREATE TABLE payments", "CREATE TABLE "+billing+".payments", 1)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Exec(context.Background(), `DROP SCHEMA `+billing+` CASCADE`) })
	s, err := pgstore.New(pool, pgstore.Config{Table: "payments", Schema: billing})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Tables(); got != (pgstore.Tables{Prefix: "reconcile_", Schema: billing}) {
		t.Fatalf("Tables() = %+v; want the default prefix in %s", got, billing)
	}
	if err := pgstore.Migrate(ctx, pool, s.Tables()); err != nil {
		t.Fatal(err)
	}
	var inBilling int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'reconcile\_%'`, billing).Scan(&inBilling); err != nil {
		t.Fatal(err)
	}
	if inBilling == 0 {
		t.Fatalf("no reconciler table in %s", billing)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO `+billing+`.payments (id, external_id, status, updated_at)
		VALUES (1, 'pi_1', 'pending', now() - interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	reconciletest.Cycle(t, reconcile.Config[string, string]{Job: "j", Source: s, Sink: s,
		Gateway: reconciletest.NewGateway(map[string]string{"pi_1": "succeeded"}), Classifier: reconciletest.Classifier()}, 3)

	d, err := pgoutbox.NewDispatcher(pool, pgoutbox.Config{Tables: s.Tables()})
	if err != nil {
		t.Fatal(err)
	}
	var applied []string
	if err := d.Handle("ApplyPaymentSucceeded", func(ctx context.Context, tx pgx.Tx, del pgoutbox.Delivery) error {
		applied = append(applied, del.AggregateID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Work(ctx); err != nil || n != 1 || !slices.Equal(applied, []string{"1"}) {
		t.Fatalf("Work = %d, %v, applied %v; want the one command of %s", n, err, applied, billing)
	}
}

// Before versions were recorded in the files, a host's own migration tool applied Migrations
// without recording any: its tables are current, and upgrading the package must not make Check
// (and with it every first read) fail and send it to Migrate, which would re-run 001 on tables
// that exist. Nor must a later file, applied by that tool with its version recorded, make the
// unrecorded earlier ones count as missing.
func TestTablesMigratedByAnOlderToolWithoutRecordedVersionsPassCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, forget string }{
		{"no version recorded", `DROP TABLE reconcile_migrations`},
		{"only the latest recorded", `DELETE FROM reconcile_migrations WHERE version < 7`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool, s := newStore(t, pgstore.Config{})
			ctx := context.Background()
			if _, err := pool.Exec(ctx, tc.forget); err != nil {
				t.Fatal(err)
			}
			if err := s.Check(ctx); err != nil {
				t.Fatalf("Check = %v; want nil: every migration is applied", err)
			}
			// Migrate does not re-run the files applied; with no version recorded it cannot
			// tell which those are, and says so rather than failing on a table that exists.
			err := pgstore.Migrate(ctx, pool, s.Tables())
			if tc.forget == `DROP TABLE reconcile_migrations` {
				if err == nil || !strings.Contains(err.Error(), "records no version") {
					t.Fatalf("Migrate = %v; want it to say that no version is recorded", err)
				}
			} else if err != nil {
				t.Fatalf("Migrate = %v; want nil: nothing to apply", err)
			}
		})
	}
}
