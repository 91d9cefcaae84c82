package pgoutbox_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
)

// attemptLog records attempts.
type attemptLog struct {
	mu  sync.Mutex
	all []reconcile.CommandAttempt
}

func (l *attemptLog) CommandAttempted(a reconcile.CommandAttempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, a)
}

// outcomes returns "command outcome" per attempt, sorted.
func (l *attemptLog) outcomes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, a := range l.all {
		out = append(out, a.Command+" "+a.Outcome)
		if (a.Err == nil) != (a.Outcome == reconcile.AttemptDone) {
			out = append(out, "error and outcome disagree: "+a.Outcome)
		}
	}
	slices.Sort(out)
	return out
}

func TestTheObserverSeesEveryAttemptsOutcomeByCommand(t *testing.T) {
	t.Parallel()
	pool := outboxWorld(t)
	enqueue(t, pool, "Apply", 2, 2, `{}`)
	enqueue(t, pool, "Flaky", 1, 1, `{}`)
	enqueue(t, pool, "Poison", 1, 1, `{}`)
	enqueue(t, pool, "Busy", 1, 1, `{}`)
	enqueue(t, pool, "Unknown", 1, 1, `{}`)
	var flaky, busy int
	log := &attemptLog{}
	d := newDispatcher(t, pool, pgoutbox.Config{MaxAttempts: 3, Observer: log, Workers: 1}, map[string]pgoutbox.Handler{
		"Apply": recordEffect,
		"Flaky": func(ctx context.Context, tx pgx.Tx, del pgoutbox.Delivery) error {
			if flaky++; flaky == 1 {
				return errors.New("downstream timed out")
			}
			return recordEffect(ctx, tx, del)
		},
		"Poison": func(context.Context, pgx.Tx, pgoutbox.Delivery) error {
			return pgoutbox.Permanent(errors.New("no such payment"))
		},
		"Busy": func(ctx context.Context, tx pgx.Tx, del pgoutbox.Delivery) error {
			if busy++; busy == 1 {
				return pgoutbox.RetryLater(time.Millisecond, errors.New("row locked"))
			}
			return recordEffect(ctx, tx, del)
		},
	})
	drain(t, pool, d)
	want := []string{"Apply done", "Apply done", "Busy deferred", "Busy done", "Flaky done", "Flaky retry", "Poison dead", "Unknown dead"}
	if got := log.outcomes(); !slices.Equal(got, want) {
		t.Fatalf("attempts:\n got %v\nwant %v", got, want)
	}
}

func TestOutboxStatsCountTheBacklogAndTheDeadByCommand(t *testing.T) {
	t.Parallel()
	pool := outboxWorld(t)
	ctx := context.Background()
	outbox := pgoutbox.Outbox{DB: pool}
	st, err := outbox.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Queued != 0 || !st.OldestQueuedAt.IsZero() || st.OldestQueuedAge() != 0 || len(st.Dead) != 0 {
		t.Fatalf("an empty outbox: %+v", st)
	}
	enqueue(t, pool, "Poison", 2, 2, `{}`)
	enqueue(t, pool, "Other", 1, 1, `{}`)
	d := newDispatcher(t, pool, pgoutbox.Config{MaxAttempts: 1}, map[string]pgoutbox.Handler{
		"Poison": func(context.Context, pgx.Tx, pgoutbox.Delivery) error { return errors.New("refused") },
	})
	drain(t, pool, d)
	// Three waiting, the oldest queued an hour ago; one done, which counts nowhere.
	enqueue(t, pool, "Apply", 3, 3, `{}`)
	if _, err := pool.Exec(ctx, `UPDATE reconcile_outbox SET created_at = now() - interval '1 hour'
		WHERE id = (SELECT min(id) FROM reconcile_outbox WHERE event_type = 'Apply')`); err != nil {
		t.Fatal(err)
	}
	enqueue(t, pool, "Done", 1, 1, `{}`)
	if _, err := pool.Exec(ctx, `UPDATE reconcile_outbox SET status = 'done', processed_at = now() WHERE event_type = 'Done'`); err != nil {
		t.Fatal(err)
	}
	st, err = outbox.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Queued != 3 || st.OldestQueuedAge() < time.Hour || st.OldestQueuedAge() > 2*time.Hour {
		t.Errorf("backlog: %d queued, oldest %s old; want 3, an hour", st.Queued, st.OldestQueuedAge())
	}
	if len(st.Dead) != 2 || st.Dead["Poison"] != 2 || st.Dead["Other"] != 1 {
		t.Errorf("dead: %v; want Poison 2, Other 1 (no handler)", st.Dead)
	}
}
