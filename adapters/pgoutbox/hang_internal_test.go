package pgoutbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// A handler that ignores its context past HandlerTimeout (a call without a deadline, a lock
// held elsewhere) keeps running, but its lease is no longer renewed: it runs out, and the
// command goes to the next claim instead of being held, with its aggregate, for as long as the
// handler hangs.
func TestAHandlerHungPastItsTimeoutNoLongerHoldsItsLease(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	ctx := context.Background()
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO reconcile_outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('payment', 'p1', 'Apply', '{}')`); err != nil {
		t.Fatal(err)
	}
	d, err := NewDispatcher(pool, Config{Workers: 1, Lease: time.Minute, HandlerTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	timedOut, release, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
	if err := d.Handle("Apply", func(ctx context.Context, _ pgx.Tx, _ Delivery) error {
		<-ctx.Done()
		close(timedOut)
		<-release // hangs on, ignoring its context
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	dels, err := d.claim(ctx, 1)
	if err != nil || len(dels) != 1 {
		t.Fatalf("claim: %v, %v", dels, err)
	}
	go func() {
		defer close(finished)
		d.process(ctx, dels[0])
	}()
	<-timedOut
	expiry := func() (at time.Time) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT lease_expires_at FROM reconcile_outbox`).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	before := expiry()
	d.renewLeases(ctx) // one tick of the renewer, while the handler hangs past its timeout
	if after := expiry(); !after.Equal(before) {
		t.Errorf("the lease of a handler past HandlerTimeout was renewed (expiry %v, then %v)", before, after)
	}
	close(release)
	<-finished
	var status, lastError string
	var failures int
	if err := pool.QueryRow(ctx, `SELECT status, failures, coalesce(last_error, '') FROM reconcile_outbox`).Scan(&status, &failures, &lastError); err != nil {
		t.Fatal(err)
	}
	if status != "pending" || failures != 1 || !strings.Contains(lastError, "HandlerTimeout") {
		t.Fatalf("status %s, %d failures, last error %q; want a retry, the timeout said", status, failures, lastError)
	}
}
