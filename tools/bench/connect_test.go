package main

import (
	"context"
	"io"
	"testing"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

func TestConnectBenchCoversEveryAccountWithThePredictedCalls(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.PoolSchema(t)
	res, err := runConnect(context.Background(), pool, schema, connectOptions{Accounts: 12, HugeRows: 450, SmallMin: 1, SmallMax: 5,
		Batch: 200, Rate: 1000, Progress: io.Discard})
	if err != nil {
		t.Fatal(err) // runConnect fails unless every account completed a cycle, health is OK and each account has its finding
	}
	// 450 rows at 200 a batch: 2+2+1 list calls; 11 small accounts of 1..5 rows: one call each.
	if res.PredictedCalls != 16 || res.Calls != res.PredictedCalls {
		t.Errorf("calls %d, predicted %d; want both 16", res.Calls, res.PredictedCalls)
	}
	if res.Findings != 12 || !res.AccountHeaderOK || !res.Healthy || res.Batches != 14 {
		t.Errorf("result %+v", res)
	}
}

func TestCycleCallsCountsTheBulkList(t *testing.T) {
	for _, tc := range []struct{ rows, batch, want int }{
		{0, 100, 0}, {1, 100, 1}, {2, 100, 1}, {100, 100, 1}, {101, 100, 2}, {1000, 1000, 10},
		{20000, 1000, 200}, {450, 200, 5}, {201, 200, 3},
	} {
		if got := cycleCalls(tc.rows, tc.batch); got != tc.want {
			t.Errorf("cycleCalls(%d, %d) = %d, want %d", tc.rows, tc.batch, got, tc.want)
		}
	}
}
