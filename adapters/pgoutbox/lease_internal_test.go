package pgoutbox

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// A dispatcher killed mid-handler is one that claimed a command and then went silent: no
// heartbeat, no finalize. This test plays it step by step: the claim, the lease running out,
// another dispatcher delivering the command again, and the first one waking up to finalize.
func TestAWorkerThatLostItsLeaseChangesNothing(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	ctx := context.Background()
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE effects (command_id bigint, attempt bigint);
		INSERT INTO reconcile_outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('payment', 'p1', 'Apply', '{}')`); err != nil {
		t.Fatal(err)
	}
	apply := func(ctx context.Context, tx pgx.Tx, d Delivery) error {
		// A guarded write, as the canonical writer's: applied once in effect.
		_, err := tx.Exec(ctx, `INSERT INTO effects SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM effects WHERE command_id = $1)`, d.ID, d.Attempt)
		return err
	}
	newD := func(owner string) *Dispatcher {
		d, err := NewDispatcher(pool, Config{Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Handle("Apply", apply); err != nil {
			t.Fatal(err)
		}
		return d
	}
	killed, survivor := newD("killed"), newD("survivor")

	dels, err := killed.claim(ctx, 1)
	if err != nil || len(dels) != 1 {
		t.Fatalf("claim: %v, %v", dels, err)
	}
	// The lease runs out while the killed worker is silent.
	if _, err := pool.Exec(ctx, `UPDATE reconcile_outbox SET available_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if n, err := survivor.Work(ctx); err != nil || n != 1 {
		t.Fatalf("the survivor claimed %d (%v), want the expired command", n, err)
	}
	// The killed worker wakes up and finishes its handler: the fenced completion finds a newer
	// attempt, so its transaction, handler effects included, rolls back.
	if err := killed.apply(ctx, dels[0]); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("late finalize = %v, want ErrLeaseLost", err)
	}
	// And its failure path is fenced too.
	killed.fail(ctx, dels[0], time.Now(), errors.New("late failure"))
	var status string
	var attempt, effects, fromKilled int64
	if err := pool.QueryRow(ctx, `SELECT status, attempt, (SELECT count(*) FROM effects), (SELECT count(*) FROM effects WHERE attempt = 1)
		FROM reconcile_outbox`).Scan(&status, &attempt, &effects, &fromKilled); err != nil {
		t.Fatal(err)
	}
	if status != "done" || attempt != 2 || effects != 1 || fromKilled != 0 {
		t.Fatalf("status %s, attempt %d, %d effects (%d from the killed worker); want done, 2, 1, 0", status, attempt, effects, fromKilled)
	}
}

func TestBackoffDoublesWithinItsBoundsAndNeverOverflows(t *testing.T) {
	d := &Dispatcher{cfg: Config{BackoffBase: time.Second, BackoffMax: time.Hour}}
	for failures := 1; failures <= 200; failures++ {
		want := min(time.Second<<min(failures-1, 20), time.Hour)
		if b := d.backoff(failures); b <= want/2-1 || b > want {
			t.Fatalf("backoff(%d) = %v, want in (%v, %v]", failures, b, want/2, want)
		}
	}
}

// A cap near the largest Duration ("no cap") must not let the doubling wrap around to a
// negative wait, a retry at once.
func TestBackoffUnderTheLargestCapStaysPositive(t *testing.T) {
	d := &Dispatcher{cfg: Config{BackoffBase: 3, BackoffMax: math.MaxInt64}}
	for failures := 1; failures <= 100; failures++ {
		if b := d.backoff(failures); b <= 0 {
			t.Fatalf("backoff(%d) = %v, want positive", failures, b)
		}
	}
}

// A handler that crashes its process every time is never finalized: each claim of its expired
// lease counts a failure, and at MaxAttempts it is dead without running again.
func TestACommandWhoseHandlerKeepsCrashingEndsDead(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	ctx := context.Background()
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO reconcile_outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('payment', 'p1', 'Apply', '{}')`); err != nil {
		t.Fatal(err)
	}
	ran := 0
	d, err := NewDispatcher(pool, Config{MaxAttempts: 3, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Handle("Apply", func(context.Context, pgx.Tx, Delivery) error { ran++; return nil }); err != nil {
		t.Fatal(err)
	}
	for range 3 { // claim, then "crash": the lease expires
		if dels, err := d.claim(ctx, 1); err != nil || len(dels) != 1 {
			t.Fatalf("claim: %v, %v", dels, err)
		}
		if _, err := pool.Exec(ctx, `UPDATE reconcile_outbox SET available_at = now() - interval '1 second'`); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := d.Work(ctx); err != nil || n != 1 {
		t.Fatalf("Work: %d, %v", n, err)
	}
	var status, lastError string
	var failures int
	if err := pool.QueryRow(ctx, `SELECT status, failures, last_error FROM reconcile_outbox`).Scan(&status, &failures, &lastError); err != nil {
		t.Fatal(err)
	}
	if status != "dead" || ran != 0 || !strings.Contains(lastError, "lease expired 3 times") {
		t.Fatalf("status %s, failures %d, handler ran %d times, last error %q; want dead without running, saying why", status, failures, ran, lastError)
	}
}
