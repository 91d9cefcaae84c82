package pgbudget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

func TestWaitsCancelledWhileTheyWaitNeverRaiseTheRateOfThoseGranted(t *testing.T) {
	t.Parallel()
	for _, grant := range []int{1, 3} {
		t.Run(fmt.Sprintf("a grant of %d", grant), func(t *testing.T) {
			t.Parallel()
			_, schema := pgtest.PoolSchema(t)
			ctx := context.Background()
			const rate, burst, made = 50, 6, 60
			var mu sync.Mutex
			var grants []time.Time
			var calls, cancelled atomic.Int64
			var wg sync.WaitGroup
			budgets := make([]*Budget, 3)
			for i := range budgets { // three processes, each with its own pool
				pool := schemaPool(t, schema)
				if i == 0 {
					if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
						t.Fatal(err)
					}
				}
				b, err := New(pool, Config{Key: "acct_1", Rate: rate, Burst: burst, Grant: grant, MaxLate: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				recordGrants(b, &mu, &grants)
				budgets[i] = b
			}
			for i, b := range budgets {
				for j := range 6 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for n := 0; calls.Load() < made; n++ {
							// Every third Wait of every goroutine is given up while it waits.
							wctx, cancel := context.WithCancel(ctx)
							if (i+j+n)%3 == 0 {
								time.AfterFunc(time.Duration(n%4)*10*time.Millisecond, cancel)
							}
							err := b.Wait(wctx)
							cancel()
							switch {
							case err == nil:
								calls.Add(1)
							case errors.Is(err, context.Canceled):
								cancelled.Add(1)
							default:
								t.Error(err)
								return
							}
						}
					}()
				}
			}
			wg.Wait()
			st, err := budgets[0].State(ctx)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			// The calls made are among those the budgets were granted, and those among the
			// bucket's (which also counts the grants of statements whose answer a cancellation
			// cut off: lost, never made); a window of a second holds no more than rate + burst
			// of them, by the database clock that granted them.
			if int(st.Granted) < len(grants) || calls.Load() > int64(len(grants)) || cancelled.Load() == 0 {
				t.Fatalf("granted %d (the budgets saw %d), %d calls made, %d Waits cancelled", st.Granted, len(grants), calls.Load(), cancelled.Load())
			}
			if n := maxInWindow(grants, time.Second); n > rate+burst {
				t.Fatalf("%d grants within one second, more than rate %d + burst %d", n, rate, burst)
			}
		})
	}
}

// schemaPool is a pool of its own over schema, as another process would have.
func schemaPool(t *testing.T, schema string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
