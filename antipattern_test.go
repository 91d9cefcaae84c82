package reconcile_test

import (
	"context"
	"testing"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// Behaviour 2, kept as a test of what NOT to do. The seed reconciler scanned
//
//	SELECT id FROM payments ORDER BY updated_at DESC LIMIT 200
//
// and its "check" wrote only to other columns, so updated_at never moved: every run returned
// the same 200 newest rows and the other 300 were never checked, however often it ran. The
// keyset cursor in RunBatch (WHERE key > cursor ORDER BY key LIMIT n, wrapping at the end)
// fixes it: each batch starts where the last one stopped, so a cycle visits every row.
func TestAntipatternNewestFirstScanNeverChecksOlderRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE payments (id bigint PRIMARY KEY, status text, updated_at timestamptz)`); err != nil {
		t.Fatal(err)
	}
	// 500 rows, each updated at a distinct time: row i a minute later than row i-1.
	if _, err := pool.Exec(ctx, `
		INSERT INTO payments (id, status, updated_at)
		SELECT i, 'paid', timestamptz '2026-01-01 00:00:00+00' + i * interval '1 minute'
		FROM generate_series(1, 500) AS i`); err != nil {
		t.Fatal(err)
	}

	checked := map[int64]bool{}
	for run := 1; run <= 10; run++ {
		rows, err := pool.Query(ctx, `SELECT id FROM payments ORDER BY updated_at DESC LIMIT 200`)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(ids) != 200 {
			t.Fatalf("run %d read %d rows, want 200", run, len(ids))
		}
		for _, id := range ids {
			checked[id] = true
		}
		// The "check": the seed's reconciler wrote only other columns, so updated_at stays put.
		if _, err := pool.Exec(ctx, `UPDATE payments SET status = status WHERE id = ANY($1)`, ids); err != nil {
			t.Fatal(err)
		}
	}

	var total int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM payments`).Scan(&total); err != nil {
		t.Fatal(err)
	}
	if never := total - len(checked); never != 300 {
		t.Fatalf("after 10 runs %d of %d rows were never checked, want exactly 300", never, total)
	}
	// The ones never checked are exactly the 300 oldest.
	for id := int64(1); id <= 300; id++ {
		if checked[id] {
			t.Fatalf("row %d, among the 300 oldest, was checked; want only the 200 newest", id)
		}
	}
}
