package pgoutbox

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// A handler that ends its goroutine without returning (runtime.Goexit, as a test's t.FailNow
// called from a handler does) gives back what its delivery held: its worker, its transaction's
// connection and its lease, which then runs out and counts a failure like a crash's.
func TestAHandlerThatExitsItsGoroutineGivesBackItsWorkerConnectionAndLease(t *testing.T) {
	t.Parallel()
	_, schema := pgtest.PoolSchema(t)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if pool.Stat().AcquiredConns() == 0 { // Close would wait for a connection never given back
			pool.Close()
		}
	})
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO reconcile_outbox (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('payment', 'p1', 'Exit', '{}'), ('payment', 'p2', 'Apply', '{}')`); err != nil {
		t.Fatal(err)
	}
	d, err := NewDispatcher(pool, Config{Workers: 1, PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	applied := make(chan struct{})
	if err := d.Handle("Exit", func(context.Context, pgx.Tx, Delivery) error { runtime.Goexit(); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := d.Handle("Apply", func(context.Context, pgx.Tx, Delivery) error { close(applied); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-applied: // the only worker came back
	case <-time.After(10 * time.Second):
		t.Error("the next command was not applied: the exited handler kept the only worker")
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if n := pool.Stat().AcquiredConns(); n != 0 {
		t.Errorf("%d connections still acquired: the exited handler's transaction was never rolled back", n)
	}
	d.leaseMu.Lock()
	defer d.leaseMu.Unlock()
	if len(d.leases) != 0 {
		t.Errorf("leases still held for renewal: %v", d.leases)
	}
}
