package pgoutbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
)

// A host that schedules the dispatcher itself gives Work a deadline: on an outbox another
// session holds locked (a migration altering it, say), Work returns by then with the context's
// error, and the claim it gave up leaves the command as it was, for the next Work.
func TestWorkReturnsByItsCallersDeadlineOnALockedOutbox(t *testing.T) {
	t.Parallel()
	pool := outboxWorld(t)
	ids := enqueue(t, pool, "Apply", 1, 1, `{}`)
	d := newDispatcher(t, pool, pgoutbox.Config{}, map[string]pgoutbox.Handler{"Apply": recordEffect})
	locker, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Rollback(context.Background()) //nolint:errcheck // rolled back below
	if _, err := locker.Exec(context.Background(), `LOCK TABLE reconcile_outbox IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	n, err := d.Work(ctx)
	took := time.Since(start)
	// Generous: the claim used to wait a fixed 10 s whatever the caller's deadline.
	if n != 0 || !errors.Is(err, context.DeadlineExceeded) || took > 5*time.Second {
		t.Fatalf("Work with a 500 ms deadline on a locked outbox = %d, %v after %v; want 0 and the deadline's error, well before 10 s", n, err, took)
	}

	if err := locker.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := command(t, pool, ids[0]); c.Status != "pending" || c.Attempt != 0 || c.Failures != 0 {
		t.Fatalf("command after the abandoned claim %+v; want pending, never attempted", c)
	}
	if n, err := d.Work(context.Background()); n != 1 || err != nil {
		t.Fatalf("Work once the outbox is free = %d, %v; want the command applied", n, err)
	}
}
