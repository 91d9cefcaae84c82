package pgshard_test

import (
	"context"
	"errors"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
)

// A worker that finds every shard leased by another had nothing to do: that is neither a lost
// cursor race (which says another worker's batch wrote what this one read) nor a failure.
func TestNoShardFreeIsIdleNotALostRace(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	insertPayments(t, pool, seq(1, 20)...)
	ctx := context.Background()
	holder := shardtest.NewJob(t, s, pgshard.Config{Shards: 1, Owner: "holder"})
	l, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	gw := succeededFor(seq(1, 20))
	j := shardtest.NewJob(t, s, pgshard.Config{Shards: 1, Owner: "other"})

	sweep, err := pgshard.NewSweep(j, shardtest.EngineConfig(gw, 10))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sweep.RunBatch(ctx)
	if err != nil || !rep.Deferred || rep.RateLimited || rep.Unavailable || rep.RetryAfter != 0 || rep.Scanned != 0 {
		t.Fatalf("Sweep.RunBatch with no shard free: %+v, %v; want a Deferred report, no error", rep, err)
	}
	if a := reconcile.AfterBatch(ctx, rep, err); a != reconcile.AfterIdle {
		t.Fatalf("AfterBatch = %v, want idle", a)
	}
	tick, err := reconcile.RunTick(ctx, sweep, reconcile.TickBudget{})
	if err != nil || tick.Conflict || tick.After != reconcile.AfterIdle || tick.Batches != 1 {
		t.Fatalf("RunTick over it: %+v, %v; want one idle batch, no conflict", tick, err)
	}

	st, err := pgshard.RunShard(ctx, j, shardtest.EngineConfig(gw, 10), reconcile.TickBudget{})
	if err != nil || st.Leased || st.LeaseLost || st.Tick.Conflict || !st.Tick.Deferred || st.Tick.After != reconcile.AfterIdle {
		t.Fatalf("RunShard with no shard free: %+v, %v; want nothing leased, an idle tick", st, err)
	}
	if gw.Calls("") != 0 {
		t.Fatalf("%d calls with no shard leased", gw.Calls(""))
	}
}

// A tick's TickReport.Wrapped means the job's cycle, as everywhere: a shard that wraps while
// other shards are still to do says so in ShardWrapped, and the job's work goes on.
func TestAShardsWrapIsNotTheJobsCycle(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	ids := seq(1, 40)
	insertPayments(t, pool, ids...)
	ctx := context.Background()
	j := shardtest.NewJob(t, s, pgshard.Config{Shards: 2})
	gw := succeededFor(ids)
	first, err := pgshard.RunShard(ctx, j, shardtest.EngineConfig(gw, 10), reconcile.TickBudget{})
	if err != nil || !first.Leased || !first.ShardWrapped || first.Tick.Wrapped || first.CycleCompleted || first.Tick.After != reconcile.AfterProgress {
		t.Fatalf("first shard's tick: %+v, %v; want the shard wrapped, the job's cycle not, and the work going on", first, err)
	}
	second, err := pgshard.RunShard(ctx, j, shardtest.EngineConfig(gw, 10), reconcile.TickBudget{})
	if err != nil || !second.Leased || !second.ShardWrapped || !second.Tick.Wrapped || !second.CycleCompleted || second.Tick.After != reconcile.AfterCycle {
		t.Fatalf("last shard's tick: %+v, %v; want the shard's wrap to complete the job's cycle", second, err)
	}
	if second.Shard == first.Shard {
		t.Fatalf("both ticks ran shard %d", first.Shard)
	}
}

// A lease lost during a tick cancels the batch with ErrLeaseLost as its context's cause: a
// conflict, whichever error the cancelled batch returned.
func TestALostLeaseIsAConflictThroughAfterBatch(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(pgshard.ErrLeaseLost)
	if a := reconcile.AfterBatch(ctx, reconcile.Report{}, errors.New("pgstore: commit: conn closed")); a != reconcile.AfterConflict {
		t.Fatalf("AfterBatch = %v, want conflict", a)
	}
}
