package pgshard_test

import (
	"context"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
)

// An older release (before migration 005: git show e09c3c8^:adapters/pgstore/shard_sql.go)
// wraps a shard whose end mark the new code set, completes the cycle and rolls the next, its
// statements knowing nothing of cycle_end; 20 rows arrive. The new code's next cycle reads every
// row present when it started: the old mark (row 20) limits nothing.
func TestAnOlderReleasesShardWrapAndRollLeaveNoMarkThatLimitsTheNextCycle(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	ctx := context.Background()
	insertPayments(t, pool, seq(1, 20)...)
	j := shardtest.NewJob(t, s, pgshard.Config{Shards: 1})
	gw := succeededFor(seq(1, 40))
	cfg := shardtest.EngineConfig(gw, 10)
	// The new code reads the shard's first batch and fixes its mark at row 20.
	if tick, err := pgshard.RunShard(ctx, j, cfg, reconcile.TickBudget{MaxRows: 10}); err != nil || !tick.Leased || tick.Tick.Scanned != 10 {
		t.Fatalf("first tick %+v, %v; want 10 rows of the leased shard", tick, err)
	}
	for _, q := range []string{
		// The older release reads rows 11-20 and wraps the shard (its wrap statement)...
		`UPDATE reconcile_shards SET position = NULL, version = version + 1, cycle = cycle + 1, last_wrapped_at = now() WHERE job = 'sweep'`,
		// ...completes the job's cycle (completeCycle)...
		`UPDATE reconcile_cursors SET cycles_completed = cycles_completed + 1, last_cycle_completed_at = now(),
			cycle_started_at = now(), next_cycle_at = now(), version = version + 1 WHERE job = 'sweep'`,
		// ...and rolls the next (roll's update of an existing shard, its bounds unchanged).
		`UPDATE reconcile_shards AS s SET cycle = j.cycles_completed, position = NULL, version = s.version + 1,
			cycle_started_at = now(), scanned_this_cycle = 0 FROM reconcile_cursors AS j WHERE j.job = s.job AND s.job = 'sweep'`,
	} {
		if tag, err := pool.Exec(ctx, q); err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("the older release's statement: %v, %v", tag, err)
		}
	}
	insertPayments(t, pool, seq(21, 40)...)
	before := snapshotCalls(gw, seq(1, 40))
	shardtest.RunCycle(t, s, []*pgshard.Job[string]{j}, cfg, 2, 50)
	askedOnce(t, gw, before, seq(1, 40))
}
