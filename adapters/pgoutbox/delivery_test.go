package pgoutbox_test

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

	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox/deliverytest"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

func TestACommandAppliesOnceWhateverTheDispatcherDoes(t *testing.T) {
	deliverytest.Run(t, func(t *testing.T) deliverytest.Harness {
		pool, schema := pgtest.PoolSchema(t)
		return &dispatchHarness{pool: pool, schema: schema, writers: map[string]pgoutbox.CommandWriter{}}
	})
}

// dispatchHarness runs the suite against Dispatchers. A dispatcher's deliveries are claims of
// outbox rows, so its ways to deliver a command again are Redrive and claiming: by another
// dispatcher (another process), by one over the same tables named another way, each after a
// Redrive. Concurrent deliveries are claims taken over after a lease ran out while the handler
// was still inside the writer.
type dispatchHarness struct {
	pool    *pgxpool.Pool
	schema  string
	writers map[string]pgoutbox.CommandWriter
	main    *pgoutbox.Dispatcher
}

func (h *dispatchHarness) DB() *pgxpool.Pool            { return h.pool }
func (h *dispatchHarness) Schema() string               { return h.schema }
func (h *dispatchHarness) Deliverer() pgstore.Deliverer { return nil }
func (h *dispatchHarness) tables() pgstore.Tables       { return pgstore.Tables{Schema: h.schema} }
func (h *dispatchHarness) outbox(t pgstore.Tables) string {
	return pgx.Identifier{t.Schema, "reconcile_outbox"}.Sanitize()
}

func (h *dispatchHarness) Handle(t testing.TB, name string, w pgoutbox.CommandWriter) {
	h.writers[name] = w
}

// dispatcher returns a new dispatcher over tables, as another process would run.
func (h *dispatchHarness) dispatcher(t testing.TB, tables pgstore.Tables, owner string) *pgoutbox.Dispatcher {
	t.Helper()
	d, err := pgoutbox.NewDispatcher(h.pool, pgoutbox.Config{Tables: tables, Owner: owner, Workers: 2,
		BackoffBase: time.Millisecond, BackoffMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range h.writers {
		if err := pgoutbox.HandleCommand(d, name, w); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func (h *dispatchHarness) Drain(t testing.TB) {
	t.Helper()
	if h.main == nil {
		h.main = h.dispatcher(t, h.tables(), "main")
	}
	h.drain(t, h.main)
}

// drain works d until no command of the outbox is due or waiting to retry.
func (h *dispatchHarness) drain(t testing.TB, d *pgoutbox.Dispatcher) {
	t.Helper()
	ctx := context.Background()
	deliverytest.Eventually(t, "the outbox drained", func() bool {
		n, err := d.Work(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return false
		}
		var waiting int
		if err := h.pool.QueryRow(ctx, `SELECT count(*) FROM `+h.outbox(h.tables())+`
			WHERE status IN ('pending', 'running') AND processed_at IS NULL`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		return waiting == 0
	})
}

// redrive asks d to re-drive command id, which is not dead in any case of the suite.
func (h *dispatchHarness) redrive(t testing.TB, d *pgoutbox.Dispatcher, id int64) {
	t.Helper()
	if err := d.Redrive(context.Background(), id, "ana"); err != nil && !errors.Is(err, pgoutbox.ErrNotDead) {
		t.Fatal(err)
	}
}

func (h *dispatchHarness) Retry(t testing.TB, c deliverytest.Command) {
	h.redrive(t, h.dispatcher(t, c.Tables, "retry"), c.OutboxID)
}

func (h *dispatchHarness) Duplicate(t testing.TB, c deliverytest.Command) {
	h.drain(t, h.dispatcher(t, c.Tables, "another process"))
}

func (h *dispatchHarness) Reinsert(t testing.TB, c deliverytest.Command) {
	d := h.dispatcher(t, c.Tables, "a new process")
	h.redrive(t, d, c.OutboxID)
	h.drain(t, d)
}

func (h *dispatchHarness) Rename(t testing.TB, c deliverytest.Command) {
	// The same tables through the search_path and the default prefix spelled out.
	d := h.dispatcher(t, pgstore.Tables{Prefix: "reconcile_"}, "renamed")
	h.redrive(t, d, c.OutboxID)
	h.drain(t, d)
}

func (h *dispatchHarness) Forge(t testing.TB, f deliverytest.Forgery) {
	h.redrive(t, h.dispatcher(t, f.Tables, "forger"), f.OutboxID)
}

// Concurrently starts n dispatchers, each claiming c after the previous one's lease ran out
// (ended here by hand, as a stalled process's would) while that one's handler is still in the
// writer.
func (h *dispatchHarness) Concurrently(t testing.TB, c deliverytest.Command, n int) (func() int, func()) {
	ctx := context.Background()
	var running atomic.Int64
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		d := h.dispatcher(t, c.Tables, fmt.Sprintf("dispatcher %d", i))
		running.Add(1)
		wg.Go(func() {
			defer running.Add(-1)
			if _, err := d.Work(ctx); err != nil {
				t.Error(err)
			}
		})
		if i == n {
			break
		}
		deliverytest.Eventually(t, fmt.Sprintf("dispatcher %d claimed the command", i), func() bool {
			var attempt int
			if err := h.pool.QueryRow(ctx, `SELECT attempt FROM `+h.outbox(c.Tables)+` WHERE id = $1`, c.OutboxID).Scan(&attempt); err != nil {
				t.Fatal(err)
			}
			return attempt >= i
		})
		if _, err := h.pool.Exec(ctx, `UPDATE `+h.outbox(c.Tables)+` SET available_at = now(), lease_expires_at = now()
			WHERE id = $1 AND status = 'running'`, c.OutboxID); err != nil {
			t.Fatal(err)
		}
	}
	return func() int { return int(running.Load()) }, wg.Wait
}
