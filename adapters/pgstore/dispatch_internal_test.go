package pgstore

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// A dispatcher killed mid-handler is one that claimed a command and then went silent: no
// heartbeat, no finalize. This test plays it step by step: the claim, the lease running out,
// another dispatcher delivering the command again, and the first one waking up to finalize.
func TestAWorkerThatLostItsLeaseChangesNothing(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	ctx := context.Background()
	if err := Migrate(ctx, pool, Tables{}); err != nil {
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
		d, err := NewDispatcher(pool, DispatcherConfig{Owner: owner})
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
	killed.fail(ctx, dels[0], errors.New("late failure"))
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
