package pgshard_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// sinceGateway is a DatedBatchGateway that dates each answer at the earliest moment the engine
// allows, and remembers those moments.
type sinceGateway struct {
	*reconciletest.Gateway
	mu     sync.Mutex
	sinces []time.Time
}

func (g *sinceGateway) FetchBatchSince(ctx context.Context, lookups []reconcile.Lookup, since time.Time,
	wait func(context.Context) error) (map[string]reconcile.Answer[string], error) {
	g.mu.Lock()
	g.sinces = append(g.sinces, since)
	g.mu.Unlock()
	if err := wait(ctx); err != nil {
		return nil, err
	}
	out := map[string]reconcile.Answer[string]{}
	for _, l := range lookups {
		if s, err := g.Fetch(ctx, l.ExternalID); err == nil {
			out[l.ExternalID] = reconcile.Answer[string]{Object: s, At: since}
		}
	}
	return out, nil
}

func (g *sinceGateway) FetchBatch(context.Context, []reconcile.Lookup, func(context.Context) error) (map[string]string, error) {
	panic("the engine calls FetchBatchSince of a DatedBatchGateway")
}

// A sharded job's commits record a row's verified time as its answer's, as an unsharded job's
// do: each row here was answered at its batch's earliest allowed moment, not at the commit.
func TestAShardedJobRecordsEachRowVerifiedAsOfItsAnswer(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	ids := seq(1, 120)
	insertPayments(t, pool, ids...)
	gw := &sinceGateway{Gateway: succeededFor(ids)}
	job := shardtest.NewJob(t, s, pgshard.Config{Shards: 3, Owner: "w1"})
	shardtest.RunCycle(t, s, []*pgshard.Job[string]{job}, shardtest.EngineConfig(gw, 50), 1, 100)
	gw.mu.Lock()
	sinces := gw.sinces
	gw.mu.Unlock()
	var off int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM payments p
		LEFT JOIN reconcile_observations o ON o.job = 'sweep' AND o.record_id = p.id::text
		WHERE o.verified_at IS NULL OR NOT EXISTS (SELECT 1 FROM unnest($1::timestamptz[]) AS s(at)
			WHERE o.verified_at BETWEEN s.at - interval '1 microsecond' AND s.at + interval '1 microsecond')`, sinces).Scan(&off); err != nil {
		t.Fatal(err)
	}
	if off != 0 {
		t.Fatalf("%d of %d rows not verified at the moment of their answer (one of %d batches' since)", off, len(ids), len(sinces))
	}
}
