package hosttable_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/hosttable"
	"github.com/reconcilekit/reconcile/internal/shardtest"
)

// hashSemiJoin is a semi-join by hash, either side hashed (PostgreSQL 18 may hash the batch).
var hashSemiJoin = regexp.MustCompile(`Hash (Right )?Semi Join`)

// A sweep's observations statement (Spec.ObserveInRange), planned as a commit plans it (its
// planner settings, a generic plan), scans the batch's key range in the primary key once and
// looks the batch's rows up in it by hash, whatever the statistics: of a table never analyzed, empty or
// not, and of one analyzed. A nested loop over the two or a scan of the whole table would cost
// in proportion to the table, or to the batch times the range.
func TestTheObservationsOfASweepScanTheBatchsKeyRangeOnce(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	ctx := context.Background()
	spec, err := s.HostTable(hosttable.Key{}).Spec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	plan := func(t *testing.T, stmt string, params string) string {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		for _, set := range [][]any{{hosttable.SetTimeZone, "UTC"}, {hosttable.JoinByHash}, {`SET LOCAL plan_cache_mode = force_generic_plan`},
			{`PREPARE observe AS ` + stmt}} {
			if _, err := tx.Exec(ctx, set[0].(string), set[1:]...); err != nil {
				t.Fatal(err)
			}
		}
		defer tx.Exec(ctx, `DEALLOCATE observe`) //nolint:errcheck // before the rollback: a prepared statement outlives it
		rows, err := tx.Query(ctx, `EXPLAIN EXECUTE observe('sweep', '{1}', '{succeeded}', '{""}', '{NULL}', `+params+`)`)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	check := func(t *testing.T) {
		for i, params := range []string{`'[10]'`, `'[0]', '[10]'`} {
			p := plan(t, spec.ObserveInRange[i], params)
			if !hashSemiJoin.MatchString(p) || !strings.Contains(p, "Index Scan using payments_pkey on payments h") ||
				strings.Contains(p, "Nested Loop") || strings.Contains(p, "Seq Scan") || strings.Contains(p, "Bitmap") {
				t.Fatalf("ObserveInRange[%d] planned as\n%s\nwant a hash semi-join to one index scan of the range", i, p)
			}
		}
	}
	t.Run("empty, never analyzed", check)
	if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status) SELECT i, 'pi_' || i, 'paid' FROM generate_series(1, 20000) i`); err != nil {
		t.Fatal(err)
	}
	t.Run("20,000 rows, never analyzed", check)
	if _, err := pool.Exec(ctx, `ANALYZE payments`); err != nil {
		t.Fatal(err)
	}
	t.Run("20,000 rows, analyzed", check)
}

// A job with a Filter looks its rows up one by one: its keyset range also holds the rows the
// Filter leaves out, as many as there may be, which a scan of the range would read.
func TestAFilteredJobsObservationsLookEachRowUp(t *testing.T) {
	t.Parallel()
	_, s := shardtest.NewStore(t, pgstore.Config{Filter: pgstore.Filter{AnyOf: [][]pgstore.Cond{{{Column: "status", Op: pgstore.In, Value: []string{"pending"}}}}}})
	spec, err := s.HostTable(hosttable.Key{}).Spec(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if spec.ObserveInRange != [2]string{} {
		t.Fatalf("ObserveInRange = %q; want none with a Filter", spec.ObserveInRange)
	}
}
