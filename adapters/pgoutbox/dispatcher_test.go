package pgoutbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/leaktest"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// outboxWorld is a schema with the reconciler's tables and an effects table that handlers
// write to: one row per application, so a duplicate shows as a second row.
func outboxWorld(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.Pool(t)
	ctx := context.Background()
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE effects (seq bigint GENERATED ALWAYS AS IDENTITY, command_id bigint NOT NULL,
		aggregate_id text NOT NULL, attempt bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return pool
}

// enqueue adds n commands named name, spread round-robin over aggregates, and returns their ids.
func enqueue(t *testing.T, pool *pgxpool.Pool, name string, n, aggregates int, payload string) []int64 {
	t.Helper()
	rows, err := pool.Query(context.Background(), `INSERT INTO reconcile_outbox (aggregate_type, aggregate_id, event_type, payload)
		SELECT 'payment', 'p' || (i % $2), $3, $4::jsonb FROM generate_series(0, $1 - 1) AS i ORDER BY i RETURNING id`,
		n, aggregates, name, payload)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// verifyNoLeaks checks, after the test and its cleanups (the pool's included), that no
// goroutine it started is left. Such tests do not run in parallel: other tests' goroutines
// would look like leaks.
func verifyNoLeaks(t *testing.T) {
	t.Helper()
	before := leaktest.IgnoreCurrent()
	t.Cleanup(func() { leaktest.VerifyNone(t, before) })
}

// recordEffect is a handler's business write.
func recordEffect(ctx context.Context, tx pgx.Tx, d pgoutbox.Delivery) error {
	_, err := tx.Exec(ctx, `INSERT INTO effects (command_id, aggregate_id, attempt) VALUES ($1, $2, $3)`, d.ID, d.AggregateID, d.Attempt)
	return err
}

func newDispatcher(t *testing.T, pool *pgxpool.Pool, cfg pgoutbox.Config, handlers map[string]pgoutbox.Handler) *pgoutbox.Dispatcher {
	t.Helper()
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 5 * time.Millisecond
	}
	if cfg.BackoffBase == 0 {
		cfg.BackoffBase, cfg.BackoffMax = time.Millisecond, 5*time.Millisecond
	}
	d, err := pgoutbox.NewDispatcher(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range handlers {
		if err := d.Handle(name, h); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// drain calls Work until a call finds nothing ready and nothing is waiting to retry soon.
func drain(t *testing.T, pool *pgxpool.Pool, d *pgoutbox.Dispatcher) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		n, err := d.Work(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			var left int
			if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM reconcile_outbox WHERE status IN ('pending', 'running')`).Scan(&left); err != nil {
				t.Fatal(err)
			}
			if left == 0 {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	t.Fatal("the outbox did not drain within 30s")
}

type commandRow struct {
	Status    string
	Attempt   int64
	Failures  int
	LastError string
}

func command(t *testing.T, pool *pgxpool.Pool, id int64) commandRow {
	t.Helper()
	var c commandRow
	if err := pool.QueryRow(context.Background(), `SELECT status, attempt, failures, coalesce(last_error, '') FROM reconcile_outbox WHERE id = $1`, id).
		Scan(&c.Status, &c.Attempt, &c.Failures, &c.LastError); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAHandlersEffectAndTheCompletionCommitTogether(t *testing.T) {
	t.Parallel()
	pool := outboxWorld(t)
	ids := enqueue(t, pool, "Apply", 2, 2, `{}`)
	var calls atomic.Int64
	d := newDispatcher(t, pool, pgoutbox.Config{MaxAttempts: 5}, map[string]pgoutbox.Handler{
		"Apply": func(ctx context.Context, tx pgx.Tx, del pgoutbox.Delivery) error {
			if err := recordEffect(ctx, tx, del); err != nil {
				return err
			}
			if del.ID == ids[1] && calls.Add(1) == 1 {
				return errors.New("the first try of the second command fails after writing")
			}
			return nil
		},
	})
	drain(t, pool, d)
	for _, id := range ids {
		if c := command(t, pool, id); c.Status != "done" {
			t.Fatalf("command %d: %+v, want done", id, c)
		}
	}
	var effects int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM effects`).Scan(&effects); err != nil || effects != 2 {
		t.Fatalf("%d effects (%v); want 2: the failed try's write must have been rolled back", effects, err)
	}
	var history string
	if err := pool.QueryRow(context.Background(), `SELECT errors::text FROM reconcile_outbox WHERE id = $1`, ids[1]).Scan(&history); err != nil {
		t.Fatal(err)
	}
	if c := command(t, pool, ids[1]); c.Failures != 1 || c.Attempt != 2 || c.LastError != "" || !strings.Contains(history, "first try") {
		t.Fatalf("second command %+v, errors %s; want 1 failure, 2 attempts, its error kept in the history", c, history)
	}
}

func TestFourDispatchersApplyTenThousandCommandsOnceInOrder(t *testing.T) {
	verifyNoLeaks(t)
	pool := outboxWorld(t)
	const n, aggregates = 10000, 2000 // five commands queued per payment
	enqueue(t, pool, "Apply", n, aggregates, `{}`)
	// Four dispatchers as four processes would run them: each with its own pool.
	var ds []*pgoutbox.Dispatcher
	for i := range 4 {
		own, err := pgxpool.NewWithConfig(context.Background(), pool.Config().Copy())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(own.Close)
		d := newDispatcher(t, own, pgoutbox.Config{Owner: fmt.Sprintf("d%d", i), Workers: 2}, map[string]pgoutbox.Handler{"Apply": recordEffect})
		if err := d.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var left int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM reconcile_outbox WHERE status <> 'done'`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d commands not done after 2 minutes", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, d := range ds {
		if err := d.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var total, distinct, outOfOrder int
	err := pool.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT command_id),
		(SELECT count(*) FROM (SELECT command_id < lag(command_id) OVER (PARTITION BY aggregate_id ORDER BY seq) AS bad FROM effects) x WHERE bad)
		FROM effects`).Scan(&total, &distinct, &outOfOrder)
	if err != nil {
		t.Fatal(err)
	}
	if total != n || distinct != n || outOfOrder != 0 {
		t.Fatalf("%d effects of %d distinct commands, %d out of aggregate order; want %d, %d, 0", total, distinct, outOfOrder, n, n)
	}
}

func TestAPoisonCommandGoesDeadKeepsItsErrorsAndCanBeRedriven(t *testing.T) {
	t.Parallel()
	pool := outboxWorld(t)
	ids := enqueue(t, pool, "Apply", 1, 1, `{}`)
	var healed atomic.Bool
	d := newDispatcher(t, pool, pgoutbox.Config{MaxAttempts: 3}, map[string]pgoutbox.Handler{
		"Apply": func(ctx context.Context, tx pgx.Tx, del pgoutbox.Delivery) error {
			if !healed.Load() {
				return fmt.Errorf("downstream refused attempt %d", del.Attempt)
			}
			return recordEffect(ctx, tx, del)
		},
	})
	drain(t, pool, d)
	c := command(t, pool, ids[0])
	if c.Status != "dead" || c.Failures != 3 || !strings.Contains(c.LastError, "attempt 3") {
		t.Fatalf("command %+v; want dead after 3 failures with the last error", c)
	}
	dead, err := d.DeadCommands(context.Background(), 0, 10)
	if err != nil || len(dead) != 1 || dead[0].ID != ids[0] || !strings.Contains(string(dead[0].Errors), "attempt 1") {
		t.Fatalf("DeadCommands = %+v, %v; want the command with its three errors", dead, err)
	}
	healed.Store(true)
	if err := d.Redrive(context.Background(), ids[0], "ops"); err != nil {
		t.Fatal(err)
	}
	if err := d.Redrive(context.Background(), ids[0], "ops"); !errors.Is(err, pgoutbox.ErrNotDead) {
		t.Fatalf("second Redrive = %v, want ErrNotDead", err)
	}
	drain(t, pool, d)
	if c := command(t, pool, ids[0]); c.Status != "done" {
		t.Fatalf("after re-drive: %+v, want done", c)
	}
}

type amountPayload struct {
	RecordID string `json:"record_id"`
	Amount   int    `json:"amount"`
}

func (p *amountPayload) Validate() error {
	if p.RecordID == "" {
		return errors.New("record_id is missing")
	}
	return nil
}

func TestBadPayloadsGoDeadAtOnceWithoutBlockingOtherAggregates(t *testing.T) {
	t.Parallel()
	pool := outboxWorld(t)
	ctx := context.Background()
	d := newDispatcher(t, pool, pgoutbox.Config{MaxAttempts: 10}, nil)
	var applied atomic.Int64
	if err := pgoutbox.HandleJSON(d, "Charge", func(ctx context.Context, tx pgx.Tx, p amountPayload, del pgoutbox.Delivery) error {
		applied.Add(1)
		return recordEffect(ctx, tx, del)
	}); err != nil {
		t.Fatal(err)
	}
	bad := []string{
		`{"amount": 5}`,                               // record_id missing: Validate
		`{"record_id": "1", "amount": "five"}`,        // a string for a number
		`{"record_id": "1", "amount": 5, "extra": 1}`, // a field nobody knows
		`[1, 2]`, // not an object at all
	}
	var badIDs []int64
	for i, payload := range bad {
		var id int64
		if err := pool.QueryRow(ctx, `INSERT INTO reconcile_outbox (aggregate_type, aggregate_id, event_type, payload)
			VALUES ('payment', $1, 'Charge', $2::jsonb) RETURNING id`, fmt.Sprintf("bad%d", i), payload).Scan(&id); err != nil {
			t.Fatal(err)
		}
		badIDs = append(badIDs, id)
	}
	unknown := enqueue(t, pool, "NoSuchCommand", 1, 1, `{}`)[0]
	good := enqueue(t, pool, "Charge", 5, 5, `{"record_id": "1", "amount": 5}`)
	drain(t, pool, d)
	for i, id := range badIDs {
		c := command(t, pool, id)
		if c.Status != "dead" || c.Failures != 1 || !strings.Contains(c.LastError, "Charge payload") {
			t.Errorf("bad payload %s: %+v; want dead after one attempt, saying what was wrong", bad[i], c)
		}
	}
	if c := command(t, pool, unknown); c.Status != "dead" || !strings.Contains(c.LastError, `no handler is registered for command "NoSuchCommand"`) {
		t.Errorf("unknown command: %+v; want dead saying no handler is registered", c)
	}
	for _, id := range good {
		if c := command(t, pool, id); c.Status != "done" {
			t.Errorf("good command %d: %+v, want done", id, c)
		}
	}
	if applied.Load() != 5 {
		t.Fatalf("handler applied %d payloads, want the 5 good ones", applied.Load())
	}
}

func TestRetryLaterWaitsWithoutSpendingAnAttempt(t *testing.T) {
	t.Parallel()
	pool := outboxWorld(t)
	ids := enqueue(t, pool, "Apply", 1, 1, `{}`)
	var tries atomic.Int64
	d := newDispatcher(t, pool, pgoutbox.Config{MaxAttempts: 1}, map[string]pgoutbox.Handler{
		"Apply": func(ctx context.Context, tx pgx.Tx, del pgoutbox.Delivery) error {
			if tries.Add(1) <= 3 {
				return pgoutbox.RetryLater(time.Millisecond, errors.New("the payment row is locked"))
			}
			return recordEffect(ctx, tx, del)
		},
	})
	drain(t, pool, d)
	if c := command(t, pool, ids[0]); c.Status != "done" || c.Failures != 0 || c.Attempt != 4 {
		t.Fatalf("command %+v; want done on the 4th claim with no failures spent (MaxAttempts is 1)", c)
	}
}

func TestLaterCommandsOfAnAggregateWaitForAnEarlierOneToRetry(t *testing.T) {
	t.Parallel()
	pool := outboxWorld(t)
	ids := enqueue(t, pool, "Apply", 2, 1, `{}`) // same aggregate
	var first atomic.Bool
	d := newDispatcher(t, pool, pgoutbox.Config{BackoffBase: 200 * time.Millisecond, BackoffMax: 200 * time.Millisecond}, map[string]pgoutbox.Handler{
		"Apply": func(ctx context.Context, tx pgx.Tx, del pgoutbox.Delivery) error {
			if del.ID == ids[0] && !first.Swap(true) {
				return errors.New("not yet")
			}
			return recordEffect(ctx, tx, del)
		},
	})
	if n, err := d.Work(context.Background()); err != nil || n != 1 {
		t.Fatalf("first Work claimed %d (%v); want only the older command", n, err)
	}
	if n, err := d.Work(context.Background()); err != nil || n != 0 {
		t.Fatalf("Work during the older command's backoff claimed %d (%v); want 0: the younger one must wait", n, err)
	}
	drain(t, pool, d)
	var order []int64
	rows, _ := pool.Query(context.Background(), `SELECT command_id FROM effects ORDER BY seq`)
	order, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(order) != 2 || order[0] != ids[0] {
		t.Fatalf("applied %v (%v); want %v in order", order, err, ids)
	}
}

func TestStopWaitsForRunningHandlersAndLeaksNothing(t *testing.T) {
	verifyNoLeaks(t)
	pool := outboxWorld(t)
	ids := enqueue(t, pool, "Apply", 1, 1, `{}`)
	started := make(chan struct{})
	d := newDispatcher(t, pool, pgoutbox.Config{Workers: 2}, map[string]pgoutbox.Handler{
		"Apply": func(ctx context.Context, tx pgx.Tx, del pgoutbox.Delivery) error {
			close(started)
			time.Sleep(300 * time.Millisecond)
			return recordEffect(ctx, tx, del)
		},
	})
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := command(t, pool, ids[0]); c.Status != "done" {
		t.Fatalf("after a graceful Stop the running command is %+v, want done", c)
	}
}

func TestAnImpatientStopCancelsHandlersAndGivesTheirCommandsBack(t *testing.T) {
	verifyNoLeaks(t)
	pool := outboxWorld(t)
	ids := enqueue(t, pool, "Apply", 1, 1, `{}`)
	started := make(chan struct{})
	d := newDispatcher(t, pool, pgoutbox.Config{}, map[string]pgoutbox.Handler{
		"Apply": func(ctx context.Context, tx pgx.Tx, del pgoutbox.Delivery) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		},
	})
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := d.Stop(ctx); err == nil {
		t.Fatal("Stop out of patience returned nil")
	}
	if c := command(t, pool, ids[0]); c.Status != "pending" || c.Failures != 0 {
		t.Fatalf("command %+v; want pending again with no failure counted", c)
	}
}

func TestAHeartbeatKeepsALongHandlersLease(t *testing.T) {
	t.Parallel()
	pool := outboxWorld(t)
	ids := enqueue(t, pool, "Apply", 1, 1, `{}`)
	started := make(chan struct{})
	slow := newDispatcher(t, pool, pgoutbox.Config{Owner: "slow", Lease: time.Second}, map[string]pgoutbox.Handler{
		"Apply": func(ctx context.Context, tx pgx.Tx, del pgoutbox.Delivery) error {
			close(started)
			time.Sleep(2500 * time.Millisecond) // two and a half leases
			return recordEffect(ctx, tx, del)
		},
	})
	thief := newDispatcher(t, pool, pgoutbox.Config{Owner: "thief"}, map[string]pgoutbox.Handler{"Apply": recordEffect})
	done := make(chan error)
	go func() {
		_, err := slow.Work(context.Background())
		done <- err
	}()
	<-started
	stolen := 0
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		n, err := thief.Work(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		stolen += n
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c := command(t, pool, ids[0]); stolen != 0 || c.Status != "done" || c.Attempt != 1 {
		t.Fatalf("stolen %d times, command %+v; want done by the slow dispatcher on its only attempt", stolen, c)
	}
}

func TestNewDispatcherRejectsBadConfig(t *testing.T) {
	pool := pgtest.Pool(t)
	for _, cfg := range []pgoutbox.Config{
		{Workers: -1}, {Lease: -time.Second}, {Lease: 10 * time.Millisecond}, {MaxAttempts: -1}, {Tables: pgstore.Tables{Prefix: "bad prefix"}},
		// An owner PostgreSQL cannot store would make every claim fail, each only logged.
		{Owner: "worker\x00one"}, {Owner: "worker \xff"},
	} {
		if _, err := pgoutbox.NewDispatcher(pool, cfg); err == nil {
			t.Errorf("NewDispatcher(%+v) succeeded", cfg)
		}
	}
	d, err := pgoutbox.NewDispatcher(pool, pgoutbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err == nil {
		t.Error("Start without handlers succeeded")
	}
	if err := d.Handle("A", recordEffect); err != nil {
		t.Fatal(err)
	}
	if err := d.Handle("A", recordEffect); err == nil {
		t.Error("a second handler for A was accepted")
	}
}

func TestRedriveRefusesToApplyACommandAfterAYoungerOneOfItsAggregate(t *testing.T) {
	t.Parallel()
	pool := outboxWorld(t)
	ids := enqueue(t, pool, "Apply", 2, 1, `{}`) // one aggregate
	d := newDispatcher(t, pool, pgoutbox.Config{MaxAttempts: 1}, map[string]pgoutbox.Handler{
		"Apply": func(ctx context.Context, tx pgx.Tx, del pgoutbox.Delivery) error {
			if del.ID == ids[0] {
				return errors.New("poison")
			}
			return recordEffect(ctx, tx, del)
		},
	})
	drain(t, pool, d)
	if c := command(t, pool, ids[1]); c.Status != "done" {
		t.Fatalf("the younger command: %+v, want done (a dead one does not block its aggregate)", c)
	}
	if err := d.Redrive(context.Background(), ids[0], "ops"); !errors.Is(err, pgoutbox.ErrOutOfOrder) {
		t.Fatalf("Redrive = %v, want ErrOutOfOrder", err)
	}
	if err := d.Redrive(context.Background(), ids[0], ""); err == nil {
		t.Fatal("Redrive without an actor succeeded")
	}
}

func TestNewDispatcherRefusesAPoolTooSmallForItsWorkers(t *testing.T) {
	pool := pgtest.Pool(t) // pgtest.MaxConns connections
	if _, err := pgoutbox.NewDispatcher(pool, pgoutbox.Config{Workers: pgtest.MaxConns}); err == nil {
		t.Fatalf("a pool of %d connections was accepted for %d workers", pgtest.MaxConns, pgtest.MaxConns)
	}
	if _, err := pgoutbox.NewDispatcher(pool, pgoutbox.Config{Workers: pgtest.MaxConns - 2}); err != nil {
		t.Fatal(err)
	}
}

func TestAWorkCancelledAroundItsClaimGivesTheCommandsBackUncharged(t *testing.T) {
	t.Parallel()
	pool := outboxWorld(t)
	ids := enqueue(t, pool, "Apply", 2, 2, `{}`)
	d := newDispatcher(t, pool, pgoutbox.Config{}, map[string]pgoutbox.Handler{"Apply": recordEffect})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Work(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Work on a cancelled context = %v", err)
	}
	for _, id := range ids {
		if c := command(t, pool, id); c.Status != "pending" || c.Failures != 0 {
			t.Fatalf("command %d: %+v; want pending again with no failure charged", id, c)
		}
	}
}
