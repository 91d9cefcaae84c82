package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// The cursor statements of the releases before migration 005 (git show
// e09c3c8^:adapters/pgstore/statements.go), which know nothing of the cycle's end mark: during a
// rolling deploy they keep sweeping over tables the new code has migrated.
const (
	oldAdvance = `INSERT INTO reconcile_cursors AS c (job, position, version, last_batch_at, last_batch_scanned, last_batch_unverifiable)
			VALUES ($1, $3::jsonb, $2::bigint + 1, now(), $4, $5)
			ON CONFLICT (job) DO UPDATE SET position = EXCLUDED.position, version = c.version + 1,
				last_batch_at = EXCLUDED.last_batch_at, last_batch_scanned = EXCLUDED.last_batch_scanned,
				last_batch_unverifiable = EXCLUDED.last_batch_unverifiable
			WHERE c.version = $2`
	oldWrap = `INSERT INTO reconcile_cursors AS c (job, position, version, cycles_completed, last_cycle_completed_at)
			VALUES ($1, NULL, $2::bigint + 1, 1, now())
			ON CONFLICT (job) DO UPDATE SET position = NULL, version = c.version + 1,
				cycles_completed = c.cycles_completed + 1, last_cycle_completed_at = now(), cycle_started_at = now()
			WHERE c.version = $2`
)

// An older release ends a cycle whose end mark the new code set, without clearing it; 20 rows
// arrive before the next cycle starts. Whoever starts that cycle, the new code reads every row
// present then: the old mark (row 20) limits nothing.
func TestAnOlderReleasesWrapLeavesNoMarkThatLimitsTheNextCycle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// oldStarts: the older release also commits the next cycle's first batch (rows 1-10).
		oldStarts bool
		want      int // rows the new code reads in the next cycle
	}{
		{"the new code starts the next cycle", false, 40},
		{"the older release starts the next cycle", true, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool, s := newStore(t, pgstore.Config{})
			insertPayments(t, pool, ids(1, 20)...)
			states := map[string]string{}
			for _, id := range ids(1, 40) {
				states[fmt.Sprintf("pi_%d", id)] = "succeeded"
			}
			cfg := reconciletest.Config(fixture{pool, s}, "sweep", reconciletest.NewGateway(states), 10)
			r, err := reconcile.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// The new code reads the cycle's first batch and fixes its mark at row 20.
			if rep, err := r.RunBatch(ctx); err != nil || rep.Scanned != 10 || rep.Wrapped {
				t.Fatalf("first batch %+v, %v; want 10 rows read", rep, err)
			}
			oldRelease := func(stmt string, args ...any) {
				t.Helper()
				var version int64
				if err := pool.QueryRow(ctx, `SELECT version FROM reconcile_cursors WHERE job = 'sweep'`).Scan(&version); err != nil {
					t.Fatal(err)
				}
				tag, err := pool.Exec(ctx, stmt, append([]any{"sweep", version}, args...)...)
				if err != nil || tag.RowsAffected() != 1 {
					t.Fatalf("the older release's statement: %v, %v", tag, err)
				}
			}
			// The older release reads rows 11-20 and ends the cycle.
			oldRelease(oldAdvance, "[20]", 10, 0)
			oldRelease(oldWrap)
			insertPayments(t, pool, ids(21, 40)...)
			if tc.oldStarts {
				oldRelease(oldAdvance, "[10]", 10, 0)
			}

			scanned := 0
			for _, rep := range reconciletest.Cycle(t, cfg, 10) {
				scanned += rep.Scanned
			}
			if scanned != tc.want {
				t.Fatalf("the next cycle read %d rows, want %d: a mark the older release left behind limited it", scanned, tc.want)
			}
		})
	}
}
