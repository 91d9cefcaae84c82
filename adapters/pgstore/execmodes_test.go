package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// The suite over pools in the query modes a pooler in transaction mode calls for: CacheDescribe
// (statements described, never kept prepared) and SimpleProtocol (no bound parameters: pgx
// writes each value, the commit's arrays as their text, into the statement). DescribeExec, run
// once by hand, passed as well.
func TestConformanceInEveryExecMode(t *testing.T) {
	t.Parallel()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			reconciletest.Run(t, func(t *testing.T) reconciletest.Fixture {
				pool, s := newStore(t, pgstore.Config{})
				cfg := pool.Config()
				cfg.ConnConfig.DefaultQueryExecMode = mode
				p, err := pgxpool.NewWithConfig(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(p.Close)
				ps, err := pgstore.New(p, s.Config())
				if err != nil {
					t.Fatal(err)
				}
				return fixture{pool, ps}
			})
		})
	}
}
