package pgshard_test

import (
	"context"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// A Monitor keeping a sharded job's status drops it when a lease of the job commits in the
// process, as it does a store's after the store's batch; another store's commits leave it kept.
func TestAMonitorDropsASharedJobsStatusAtItsLeasesCommitsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	insertPayments(t, pool, seq(1, 3)...)
	j := shardtest.NewJob(t, s, pgshard.Config{Shards: 1})
	_, other := shardtest.NewStore(t, pgstore.Config{})
	m, err := reconcile.NewMonitor(reconcile.MonitorConfig{Jobs: []reconcile.MonitorJob{{Name: "sweep", Status: j}}, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cycles := func() int64 {
		t.Helper()
		h := m.Health(ctx)[0]
		if h.Err != nil {
			t.Fatal(h.Err)
		}
		return h.Health.Status.CyclesCompleted
	}
	if n := cycles(); n != 0 {
		t.Fatalf("%d cycles completed before any batch, want 0", n)
	}
	before := j.Writes()
	if _, err := other.Commit(ctx, reconcile.Commit{Job: "sweep", Wrap: true}); err != nil {
		t.Fatal(err)
	}
	if got := j.Writes(); got != before {
		t.Errorf("the job's writes went from %d to %d after another store's commit, want unchanged", before, got)
	}
	cfg := shardtest.EngineConfig(reconciletest.NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "succeeded", "pi_3": "succeeded"}), 10)
	tick, err := pgshard.RunShard(ctx, j, cfg, reconcile.TickBudget{})
	if err != nil || !tick.Tick.Wrapped {
		t.Fatalf("tick %+v, %v; want the cycle wrapped", tick, err)
	}
	if got := j.Writes(); got <= before {
		t.Errorf("the job's writes went from %d to %d after its lease committed, want more", before, got)
	}
	if n := cycles(); n != 1 {
		t.Errorf("the Monitor shows %d cycles completed after the lease's commit completed one, want 1", n)
	}
}
