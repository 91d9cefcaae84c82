package pgshard_test

import (
	"testing"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// The conformance suite over a shard lease: a sharded job of one shard reads and commits through
// its Lease as an unsharded job does through its store.
func TestConformanceOverAShardLease(t *testing.T) {
	t.Parallel()
	reconciletest.Run(t, func(t *testing.T) reconciletest.Fixture {
		pool, s := shardtest.NewStore(t, pgstore.Config{})
		return shardtest.Fixture{Pool: pool, PG: s, Sweep: shardtest.NewLeaseStore(t, s)}
	})
}

// The suite over a shard lease of a store that keeps observations in the host table's columns.
func TestConformanceOverAShardLeaseWithObservationsInHostColumns(t *testing.T) {
	t.Parallel()
	reconciletest.Run(t, func(t *testing.T) reconciletest.Fixture {
		pool, s := shardtest.NewStore(t, pgstore.Config{Observations: pgstore.ObserveInHostColumns}, shardtest.HostColumnsDDL...)
		return shardtest.HostFixture{Fixture: shardtest.Fixture{Pool: pool, PG: s, Sweep: shardtest.NewLeaseStore(t, s)}}
	})
}
