package pgshard_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
)

// countingDeliverer counts the deliveries of each outbox id. Only the test's goroutine runs
// the ticks, so it needs no lock.
type countingDeliverer map[int64]int

func (d countingDeliverer) Deliver(_ context.Context, _ pgx.Tx, cmds []pgstore.QueuedCommand) error {
	for _, c := range cmds {
		d[c.OutboxID]++
	}
	return nil
}

// Sharded commits, the wraps that complete a cycle included, hand their commands to the
// store's Deliverer as the store's own commits do.
func TestShardCommitsDeliverEveryCommandOnce(t *testing.T) {
	t.Parallel()
	d := countingDeliverer{}
	pool, s := shardtest.NewStore(t, pgstore.Config{Deliver: d})
	ids := seq(1, 100)
	insertPayments(t, pool, ids...)
	if _, err := pool.Exec(context.Background(), `UPDATE payments SET status = 'pending'`); err != nil {
		t.Fatal(err)
	}
	j := shardtest.NewJob(t, s, pgshard.Config{Shards: 4})
	shardtest.RunCycle(t, s, []*pgshard.Job[string]{j}, shardtest.EngineConfig(succeededFor(ids), 7), 1, 200)
	rows, err := pool.Query(context.Background(), `SELECT id FROM reconcile_outbox WHERE processed_at IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	outbox, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if len(outbox) != 100 || len(d) != 100 {
		t.Fatalf("%d outbox rows handed over, %d delivered; want 100 and 100", len(outbox), len(d))
	}
	for _, id := range outbox {
		if d[id] != 1 {
			t.Errorf("outbox row %d delivered %d times; want once", id, d[id])
		}
	}
}
