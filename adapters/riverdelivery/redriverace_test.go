package riverdelivery_test

import (
	"context"
	"errors"
	"testing"

	"github.com/riverqueue/river"

	"github.com/reconcilekit/reconcile/adapters/pgoutbox/deliverytest"
	"github.com/reconcilekit/reconcile/adapters/riverdelivery"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// A re-drive of a command whose job is applying it at that moment waits for the job: the job
// applies the command, and the re-drive finds it done and enqueues nothing.
func TestARedriveDuringTheJobThatAppliesTheCommandEnqueuesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, 0, nil)
	reconciletest.Cycle(t, w.config(), 3)
	var id int64
	if err := w.pool.QueryRow(ctx, `SELECT id FROM reconcile_outbox WHERE aggregate_id = '1'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	// Hold payment 1, which the writer updates: its job waits inside the writer, holding the
	// outbox row.
	hold, err := w.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx) //nolint:errcheck
	var pid int
	if err := hold.QueryRow(ctx, `SELECT pg_backend_pid() FROM payments WHERE id = 1 FOR UPDATE`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	blocked := func(pid int) int {
		return w.count(t, `SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, pid)
	}
	events := w.start(t)
	var job int
	deliverytest.Eventually(t, "payment 1's job waits inside the writer", func() bool {
		if err := w.pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, pid).Scan(&job); err != nil {
			return false
		}
		return true
	})
	d, err := riverdelivery.New(w.client, riverdelivery.Config{})
	if err != nil {
		t.Fatal(err)
	}
	redriven := make(chan error, 1)
	go func() {
		_, err := d.Redrive(ctx, w.pool, w.store.Tables(), id, "ana")
		redriven <- err
	}()
	deliverytest.Eventually(t, "the re-drive waits for the job", func() bool { return blocked(job) == 1 })
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-redriven; !errors.Is(err, riverdelivery.ErrNotWaiting) {
		t.Errorf("Redrive during the job: %v; want ErrNotWaiting (the job applied it)", err)
	}
	await(t, events, river.EventKindJobCompleted, 2)
	if n := w.count(t, `SELECT count(*) FROM river_job`); n != 2 {
		t.Errorf("%d jobs; want the commit's 2", n)
	}
	if n := w.count(t, `SELECT count(*) FROM effects`); n != 2 {
		t.Errorf("the writer changed %d rows; want 2", n)
	}
}
