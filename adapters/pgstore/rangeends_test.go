package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// A sweep's commit checks its rows against one scan of the batch's keyset range. With a key
// of a timestamptz at -infinity and infinity and an id, rows deleted after their read and
// inserted again as they were (the same key, the same id, a new row) at both ends of each
// batch are not verified and count as changed; the rows between are verified; the next cycle
// verifies every row. In every query mode, and with the settings a host may give its role
// (generic plans, hash joins off, a work_mem that spills).
func TestARowDeletedAndInsertedAgainAtAnEndOfItsRangeIsNotVerified(t *testing.T) {
	t.Parallel()
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol}
	settings := []map[string]string{nil, {"plan_cache_mode": "force_generic_plan", "enable_hashjoin": "off", "work_mem": "64kB"}}
	for _, mode := range modes {
		for i, set := range settings {
			t.Run(fmt.Sprintf("%v, settings %d", mode, i), func(t *testing.T) {
				t.Parallel()
				base, _ := newStore(t, pgstore.Config{}, `CREATE TABLE payments (k timestamptz NOT NULL, id bigint PRIMARY KEY,
					external_id text NOT NULL, status text NOT NULL, created_at timestamptz NOT NULL DEFAULT now() - interval '1 day',
					updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour', UNIQUE (k, id))`)
				ctx := context.Background()
				pc := base.Config()
				pc.ConnConfig.DefaultQueryExecMode = mode
				for k, v := range set {
					pc.ConnConfig.RuntimeParams[k] = v
				}
				pool, err := pgxpool.NewWithConfig(ctx, pc)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pool.Close)
				s, err := pgstore.New(pool, pgstore.Config{Table: "payments", KeyColumns: []string{"k", "id"}})
				if err != nil {
					t.Fatal(err)
				}
				exec(t, pool, `INSERT INTO payments (k, id, external_id, status)
					SELECT k, n, 'pi_' || n, 'paid' FROM unnest('{-infinity, 2020-01-01, 2020-01-02, 2020-01-03, 2020-01-04, infinity}'::timestamptz[])
						WITH ORDINALITY AS t(k, n)`)
				first := true
				src := &afterEachRead{Source: s, fn: func(b reconcile.Batch[string]) {
					if !first || len(b.Records) == 0 {
						return
					}
					for _, r := range []reconcile.Record[string]{b.Records[0], b.Records[len(b.Records)-1]} {
						exec(t, pool, `WITH gone AS (DELETE FROM payments WHERE id = $1::bigint RETURNING *)
							INSERT INTO payments SELECT * FROM gone`, r.ID)
					}
				}}
				cfg := reconcile.Config[string, string]{Job: "sweep", Source: src, Sink: s, BatchSize: 3, Classifier: reconciletest.Classifier(),
					Gateway: reconciletest.NewGateway(states(6, "succeeded"))}
				for b, want := range []int{2, 2, 0} {
					rep, err := reconcile.RunBatch(ctx, cfg)
					if err != nil {
						t.Fatal(err)
					}
					if rep.Changed != want || rep.Wrapped != (b == 2) {
						t.Fatalf("batch %d: report %+v; want %d rows changed", b+1, rep, want)
					}
				}
				if got := verifiedIDs(t, pool); !slices.Equal(got, []string{"2", "5"}) {
					t.Fatalf("verified %v; want 2 and 5, the rows between the ends", got)
				}
				first = false
				for _, rep := range reconciletest.Cycle(t, cfg, 3) {
					if rep.Changed != 0 {
						t.Fatalf("second cycle: report %+v; want nothing changed", rep)
					}
				}
				if got := verifiedIDs(t, pool); !slices.Equal(got, []string{"1", "2", "3", "4", "5", "6"}) {
					t.Fatalf("second cycle: verified %v; want every row", got)
				}
			})
		}
	}
}
