package pgstore_test

import (
	"context"
	"testing"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// Migration 015 leaves room on the observations' pages for each row's next version, on a new
// database and on one migrated by an older release, whose observations it keeps.
func TestObservationsPagesKeepRoomForTheNextCycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, s := newStore(t, pgstore.Config{})
	fillfactor := func() string {
		t.Helper()
		var opts []string
		if err := pool.QueryRow(ctx, `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = 'reconcile_observations'::regclass`).Scan(&opts); err != nil {
			t.Fatal(err)
		}
		if len(opts) != 1 {
			t.Fatalf("reloptions %v; want the fillfactor alone", opts)
		}
		return opts[0]
	}
	if got := fillfactor(); got != "fillfactor=50" {
		t.Errorf("new tables: %s; want fillfactor=50", got)
	}

	// Tables of a release before 015: 001's fillfactor, an observation written.
	if _, err := pool.Exec(ctx, `ALTER TABLE reconcile_observations SET (fillfactor = 80);
		DELETE FROM reconcile_migrations WHERE version = 15;
		INSERT INTO reconcile_observations (job, record_id, external_state, verified_at) VALUES ('j', '1', 'succeeded', now())`); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, s.Tables()); err != nil {
		t.Fatal(err)
	}
	if got := fillfactor(); got != "fillfactor=50" {
		t.Errorf("migrated tables: %s; want fillfactor=50", got)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_observations`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d observations, %v; want the one written before", n, err)
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("Check after Migrate = %v", err)
	}
}
