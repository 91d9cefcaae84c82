package pgshard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
)

// A sharded job over a key the keyset cannot walk (here an array) fails when it first makes
// its shard set, with the store's error naming the column, rather than making shards whose
// reads then fail.
func TestAShardedJobOverAnArrayKeyFailsBeforeMakingShards(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{KeyColumns: []string{"tags"}, IDColumn: "id"},
		`CREATE TABLE payments (id bigint PRIMARY KEY, tags varchar[] NOT NULL UNIQUE, external_id text NOT NULL, status text NOT NULL,
			created_at timestamptz NOT NULL DEFAULT now() - interval '1 day', updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour')`,
		`INSERT INTO payments (id, tags, external_id, status) SELECT i, ARRAY['t' || i], 'pi_' || i, 'paid' FROM generate_series(1, 20) i`)
	j := shardtest.NewJob(t, s, pgshard.Config{Shards: 4})
	ctx := context.Background()
	err := j.Ensure(ctx)
	const want = `pgstore: key column "tags" of "payments" is character varying[], an array`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Ensure = %v; want an error saying %s", err, want)
	}
	var shards int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_shards`).Scan(&shards); err != nil || shards != 0 {
		t.Fatalf("%d shards (%v); want none", shards, err)
	}
}
