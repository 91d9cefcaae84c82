package hosttable_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/hosttable"
	"github.com/reconcilekit/reconcile/internal/shardtest"
)

// The findings statement that takes the observations its commit wrote (Spec.FindingsObserved),
// planned as a commit plans it (its planner settings, a generic plan), looks each verified
// candidate's observation up, whatever the statistics: never by hashing every observation of
// the job, a plan that a table planned small (never analyzed, early in a cycle) invites and
// that costs a scan of the whole table each batch once it has grown.
func TestTheFindingsStatementLooksEachObservationUp(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	ctx := context.Background()
	spec, err := s.HostTable(hosttable.Key{}).Spec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		for _, set := range [][]any{{hosttable.SetTimeZone, "UTC"}, {`SET LOCAL plan_cache_mode = force_generic_plan`},
			{`PREPARE findings AS ` + spec.FindingsObserved}} {
			if _, err := tx.Exec(ctx, set[0].(string), set[1:]...); err != nil {
				t.Fatal(err)
			}
		}
		defer tx.Exec(ctx, `DEALLOCATE findings`) //nolint:errcheck // before the rollback: a prepared statement outlives it
		rows, err := tx.Query(ctx, `EXPLAIN EXECUTE findings('sweep', 'payment', '{1}', '{missed_success}', '{pending}', '{succeeded}',
			'{""}', '{""}', '{f}', '{f}', '{NULL}', '{pi_1}', '{NULL}', '{""}', '{t}', '{t}', '{NULL}', '{2}', '{paid}')`)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		// Each scan of the observations looks one up by its key, the candidate's record.
		for i, l := range lines {
			if strings.Contains(l, " on reconcile_observations") && (!strings.Contains(l, "Index Scan using reconcile_observations_pkey") ||
				i+1 == len(lines) || !strings.Contains(lines[i+1], "record_id = ")) {
				t.Fatalf("FindingsObserved planned as\n%s\nwant each observation looked up", strings.Join(lines, "\n"))
			}
		}
	}
	t.Run("empty, never analyzed", check)
	if _, err := pool.Exec(ctx, `INSERT INTO reconcile_observations (job, record_id, external_state, verified_at)
		SELECT 'sweep', i::text, 'succeeded', now() FROM generate_series(1, 20000) i`); err != nil {
		t.Fatal(err)
	}
	t.Run("20,000 observations, never analyzed", check)
	if _, err := pool.Exec(ctx, `ANALYZE reconcile_observations`); err != nil {
		t.Fatal(err)
	}
	t.Run("20,000 observations, analyzed", check)
}
