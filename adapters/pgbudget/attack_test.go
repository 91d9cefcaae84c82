package pgbudget_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgbudget"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

func migratedPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.Pool(t)
	if err := pgstore.Migrate(context.Background(), pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	return pool
}

func TestABucketDeletedWhileInUseIsMadeAgain(t *testing.T) {
	t.Parallel()
	pool := migratedPool(t)
	ctx := context.Background()
	b, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_1", Rate: 1000, Burst: 1, MaxLate: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// An operator resets the budget by deleting its row, as every process keeps running.
	if _, err := pool.Exec(ctx, `DELETE FROM reconcile_rate_budgets WHERE key = 'acct_1'`); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := b.Wait(ctx); err != nil {
			t.Fatalf("Wait after the bucket's row was deleted: %v, want the bucket made again", err)
		}
	}
	if st, err := b.State(ctx); err != nil || st.Granted != 2 {
		t.Fatalf("state %+v, %v; want the new bucket to count the 2 calls since", st, err)
	}
}

func TestARateLimitAnswerAfterTheBucketWasDeletedIsRecordedInANewOne(t *testing.T) {
	t.Parallel()
	pool := migratedPool(t)
	ctx := context.Background()
	b, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_1", Rate: 1000, Burst: 1, MaxLate: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM reconcile_rate_budgets WHERE key = 'acct_1'`); err != nil {
		t.Fatal(err)
	}
	b.Throttle(time.Minute)
	// Another process learns of the pause from the database.
	other, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_1", Rate: 1000, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var rl *reconcile.RateLimitError
	if err := other.Wait(dctx); !errors.As(err, &rl) {
		t.Fatalf("another process's Wait after the pause: %v, want a RateLimitError", err)
	}
	if st, err := b.State(ctx); err != nil || st.Throttles != 1 {
		t.Fatalf("state %+v, %v; want the pause recorded", st, err)
	}
}
