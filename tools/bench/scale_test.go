package main

import (
	"context"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// The scale subcommand re-executes this test binary as its workers (see init in scale.go).
func TestScaleBenchRunsOneCycleForEachWorkerCount(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.PoolSchema(t)
	res, err := runScale(context.Background(), pool, pgtest.URL(t), schema, scaleOptions{Rows: 3000, Workers: []int{1, 2},
		Latency: 5 * time.Millisecond, Rate: 1000, Burst: 50, Batch: 500, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 || res.Runs[0].Workers != 1 || res.Runs[1].Workers != 2 || res.Shards != 4 {
		t.Fatalf("runs %+v with %d shards, want one for 1 and one for 2 workers over 4 shards", res.Runs, res.Shards)
	}
	for _, r := range res.Runs {
		// Each run checked its cycle (every row verified once, the planted drift exactly); a
		// run counts a list call per hundred rows or so.
		if r.RowsPerS <= 0 || r.APICalls < 30 || float64(r.MaxGrants1s) > res.Budget.Bound {
			t.Fatalf("run %+v, budget %+v", r, res.Budget)
		}
	}
}
