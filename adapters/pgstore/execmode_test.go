package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// The suite over a pool that sends its parameters without describing statements first
// (QueryExecModeExec, as behind a pooler in transaction mode): every parameter the store binds
// is one pgx can type from its Go value.
func TestConformanceInExecMode(t *testing.T) {
	t.Parallel()
	reconciletest.Run(t, func(t *testing.T) reconciletest.Fixture {
		pool, s := newStore(t, pgstore.Config{})
		cfg := pool.Config()
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
		exec, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(exec.Close)
		es, err := pgstore.New(exec, s.Config())
		if err != nil {
			t.Fatal(err)
		}
		return fixture{pool, es}
	})
}
