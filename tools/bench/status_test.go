package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// The status bench's state is the one Store.Status and the full scan must agree on, and on
// which Coverage must count every row at its age or older: an unverifiable row in the cycle's
// read part (row 99,991), rows not yet read, an invalid row, with batches that divide a mark's
// 2,048 rows and batches that do not.
func TestStatusBenchAgreesWithTheFullScan(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{200, 333} {
		pool, schema := pgtest.PoolSchema(t)
		var progress bytes.Buffer
		m, err := measureStatus(context.Background(), pool, schema, 220_000, batch, 1, &progress)
		if err != nil {
			t.Fatal(err)
		}
		if !m.agree {
			t.Fatalf("batch %d: Status and the full scan name different oldest rows (lags %v and %v)\n%s", batch, m.lag, m.scanLag, progress.String())
		}
		if !m.coverageOK {
			t.Fatalf("batch %d: Coverage %v counts a row younger than the full scan's %v finds it, or misses one\n%s", batch, m.coverage, m.coverageScan, progress.String())
		}
		if m.statusRows < 200_000 {
			t.Errorf("batch %d: Status rows %d, want the sweep's count of about 219,000", batch, m.statusRows)
		}
	}
}
