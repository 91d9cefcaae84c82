package deliverytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// CommandName is the name of the suite's repair command, the one its writer is registered for.
const CommandName = "ApplyPaymentSucceeded"

// Harness is a delivery under test, over a database schema of its own. A method that cannot
// do its work fails the test through the testing.TB it is given.
type Harness interface {
	// DB is a pool whose connections have the harness's schema as their search_path, holding
	// what the delivery itself needs (River's tables); the suite adds a payments table and the
	// reconciler's tables. Besides the delivery's connections, the suite needs two: it holds a
	// lock on one while it watches the deliveries on the other.
	DB() *pgxpool.Pool
	// Schema is that schema. The store's tables are pgstore.Tables{Schema: Schema()}.
	Schema() string
	// Deliverer is the store's pgstore.Config.Deliver: nil for a delivery that claims the
	// commands from the outbox.
	Deliverer() pgstore.Deliverer
	// Handle registers the canonical writer of the command name. The delivery applies nothing
	// before the first call of Drain, Retry, Duplicate, Reinsert, Rename or Concurrently.
	Handle(t testing.TB, name string, w pgoutbox.CommandWriter)
	// Drain delivers every command that is due, and returns once none is left to deliver.
	Drain(t testing.TB)

	// The ways to deliver a command again, each of which the suite follows with Drain.

	// Retry runs again the delivery that applied c (River: Client.JobRetry of its completed
	// job, or of every job of c).
	Retry(t testing.TB, c Command)
	// Duplicate makes a second delivery of c beside the first (River: another job with the
	// same args, its uniqueness bypassed).
	Duplicate(t testing.TB, c Command)
	// Reinsert removes the delivery that applied c and makes the same one again (River: the
	// job deleted, as River's cleaner does, and its args inserted again).
	Reinsert(t testing.TB, c Command)
	// Rename delivers c naming its tables another way that means the same tables (River: the
	// same outbox id with another Prefix).
	Rename(t testing.TB, c Command)
	// Forge makes the delivery f describes.
	Forge(t testing.TB, f Forgery)
	// Concurrently starts n deliveries of c at once, c not yet applied, and returns without
	// waiting for them: unfinished reports how many of them have not finished, and wait waits
	// until all have. The suite holds a lock the writer needs meanwhile, so a delivery that
	// reaches the writer waits inside it.
	Concurrently(t testing.TB, c Command, n int) (unfinished func() int, wait func())
}

// Command is a repair command the sweep queued, as the suite names it to a Harness.
type Command struct {
	// OutboxID is its outbox row, in Tables' outbox.
	OutboxID int64
	// Tables are the store's tables.
	Tables pgstore.Tables
	// FindingID is the finding it repairs; RecordID the payment.
	FindingID int64
	RecordID  string
}

// Forgery is a delivery nobody queued.
type Forgery struct {
	// OutboxID is the outbox row it names: one that does not exist, or another command's.
	OutboxID int64
	// Tables are the store's tables.
	Tables pgstore.Tables
	// Command is what it asks to apply, for a delivery that carries a command of its own (a
	// River job's args did): another payment, and another row's open finding for review.
	// Payload is Command as the outbox stores it.
	Command reconcile.Command
	Payload json.RawMessage
}

// Run runs the suite. open is called once per subtest, and each subtest runs in parallel.
func Run(t *testing.T, open func(t *testing.T) Harness) {
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newWorld(t, open(t)))
		})
	}
}

// world is one subtest's: the harness, the store, and what the sweep queued and opened.
type world struct {
	h      Harness
	pool   *pgxpool.Pool
	store  *pgstore.Store[string]
	tables pgstore.Tables
	// c1 and c2 repair payments 1 and 2; f4 is payment 4's finding for review.
	c1, c2 Command
	f4     int64
	// crash makes the writer's next transaction fail at its commit.
	crash atomic.Bool
}

func newWorld(t *testing.T, h Harness) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{h: h, pool: h.DB(), tables: pgstore.Tables{Schema: h.Schema()}}
	// Payments 1 and 2 missed their success (repairable), 3 is in sync, 4 is paid here though
	// canceled at Stripe (for review), 5 is pending and so is its payment (in flight: unpaid).
	// calls records every call of the writer; crash makes a commit fail, through a deferred
	// foreign key.
	for _, q := range []string{
		`CREATE TABLE payments (id bigint PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
			created_at timestamptz NOT NULL DEFAULT now() - interval '1 day', updated_at timestamptz NOT NULL)`,
		`INSERT INTO payments (id, external_id, status, updated_at) SELECT id, 'pi_' || id, s, now() - interval '1 hour'
			FROM unnest(ARRAY[1, 2, 3, 4, 5], ARRAY['pending', 'pending', 'paid', 'paid', 'pending']) AS t(id, s)`,
		`CREATE TABLE calls (finding_id bigint NOT NULL, record_id text NOT NULL)`,
		`CREATE TABLE crash_never (id int PRIMARY KEY)`,
		`CREATE TABLE crash (id int REFERENCES crash_never DEFERRABLE INITIALLY DEFERRED)`,
	} {
		if _, err := w.pool.Exec(ctx, q); err != nil {
			t.Fatalf("deliverytest: %s: %v", q, err)
		}
	}
	if err := pgstore.Migrate(ctx, w.pool, w.tables); err != nil {
		t.Fatal(err)
	}
	var err error
	w.store, err = pgstore.New(w.pool, pgstore.Config{Table: "payments", Schema: h.Schema(), Deliver: h.Deliverer()})
	if err != nil {
		t.Fatal(err)
	}
	h.Handle(t, CommandName, w.write)
	gw := reconciletest.NewGateway(map[string]string{
		"pi_1": "succeeded", "pi_2": "succeeded", "pi_3": "succeeded", "pi_4": "canceled", "pi_5": "processing"})
	reconciletest.Cycle(t, reconcile.Config[string, string]{Job: "sweep", Source: w.store, Sink: w.store, Gateway: gw,
		Classifier: reconciletest.Classifier(), BatchSize: 10}, 3)

	rows, err := w.pool.Query(ctx, `SELECT id, finding_id, aggregate_id FROM `+w.outbox()+` ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Command, error) {
		c := Command{Tables: w.tables}
		return c, r.Scan(&c.OutboxID, &c.FindingID, &c.RecordID)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 2 || cmds[0].RecordID != "1" || cmds[1].RecordID != "2" {
		t.Fatalf("deliverytest: the sweep queued %+v; want a command for payment 1 and one for 2", cmds)
	}
	w.c1, w.c2 = cmds[0], cmds[1]
	if err := w.pool.QueryRow(ctx, `SELECT id FROM `+w.table("findings")+` WHERE record_id = '4'`).Scan(&w.f4); err != nil {
		t.Fatalf("deliverytest: payment 4's finding: %v", err)
	}
	return w
}

func (w *world) table(name string) string {
	return pgx.Identifier{w.tables.Schema, "reconcile_" + name}.Sanitize()
}

func (w *world) outbox() string { return w.table("outbox") }

// write is the canonical writer, as a webhook would call it too: a guarded transition (a
// no-op once the payment has moved on) that resolves the command's finding in the same
// transaction. It records the call first, so that every call whose transaction commits counts,
// whatever it changed.
func (w *world) write(ctx context.Context, tx pgx.Tx, cmd reconcile.Command) error {
	if _, err := tx.Exec(ctx, `INSERT INTO calls VALUES ($1, $2)`, cmd.FindingID, cmd.RecordID); err != nil {
		return err
	}
	if w.crash.CompareAndSwap(true, false) {
		// The commit fails after everything else, as a crash between the apply and its mark.
		if _, err := tx.Exec(ctx, `INSERT INTO crash VALUES (1)`); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE payments SET status = 'paid' WHERE id = $1::bigint AND status = $2`,
		cmd.RecordID, cmd.ExpectedLocal); err != nil {
		return err
	}
	err := w.store.ResolveFindingIn(ctx, tx, cmd.FindingID, reconcile.Resolution{
		As: reconcile.ResolutionRepaired, By: reconcile.ResolvedByReconciler, Note: "marked paid"})
	if errors.Is(err, reconcile.ErrAlreadyResolved) {
		return nil
	}
	return err
}

// state is what the suite checks after a case.
type state struct {
	// Calls counts the writer's committed calls by finding.
	Calls map[int64]int
	// Payments are the payments' states by id.
	Payments map[string]string
	// Open tells which findings of payments 1, 2 and 4 are open.
	Open map[int64]bool
	// Outbox are the states of the two commands' outbox rows.
	Outbox map[int64]string
}

// applied is the state after both commands applied once each.
func (w *world) applied() state {
	return state{
		Calls:    map[int64]int{w.c1.FindingID: 1, w.c2.FindingID: 1},
		Payments: map[string]string{"1": "paid", "2": "paid", "3": "paid", "4": "paid", "5": "pending"},
		Open:     map[int64]bool{w.c1.FindingID: false, w.c2.FindingID: false, w.f4: true},
		Outbox:   map[int64]string{w.c1.OutboxID: "done", w.c2.OutboxID: "done"},
	}
}

func (w *world) read(t testing.TB) state {
	t.Helper()
	ctx := context.Background()
	s := state{Calls: map[int64]int{}, Payments: map[string]string{}, Open: map[int64]bool{}, Outbox: map[int64]string{}}
	scan := func(q string, args []any, each func(r pgx.Rows) error) {
		rows, err := w.pool.Query(ctx, q, args...)
		if err != nil {
			t.Fatalf("deliverytest: %s: %v", q, err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := each(rows); err != nil {
				t.Fatalf("deliverytest: %s: %v", q, err)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("deliverytest: %s: %v", q, err)
		}
	}
	scan(`SELECT finding_id, count(*)::int FROM calls GROUP BY finding_id`, nil, func(r pgx.Rows) error {
		var id int64
		var n int
		err := r.Scan(&id, &n)
		s.Calls[id] = n
		return err
	})
	scan(`SELECT id::text, status FROM payments`, nil, func(r pgx.Rows) error {
		var id, st string
		err := r.Scan(&id, &st)
		s.Payments[id] = st
		return err
	})
	scan(`SELECT id, resolved_at IS NULL FROM `+w.table("findings")+` WHERE id = ANY($1)`,
		[]any{[]int64{w.c1.FindingID, w.c2.FindingID, w.f4}}, func(r pgx.Rows) error {
			var id int64
			var open bool
			err := r.Scan(&id, &open)
			s.Open[id] = open
			return err
		})
	scan(`SELECT id, status FROM `+w.outbox()+` WHERE id = ANY($1)`, []any{[]int64{w.c1.OutboxID, w.c2.OutboxID}},
		func(r pgx.Rows) error {
			var id int64
			var st string
			err := r.Scan(&id, &st)
			s.Outbox[id] = st
			return err
		})
	return s
}

// check fails t unless the world is in state want.
func (w *world) check(t testing.TB, want state) {
	t.Helper()
	got := w.read(t)
	if !maps.Equal(got.Calls, want.Calls) {
		t.Errorf("writer calls committed, by finding: %s; want %s", label(w, got.Calls), label(w, want.Calls))
	}
	if !maps.Equal(got.Payments, want.Payments) {
		t.Errorf("payments: %v; want %v", got.Payments, want.Payments)
	}
	if !maps.Equal(got.Open, want.Open) {
		t.Errorf("findings open: %s; want %s", label(w, got.Open), label(w, want.Open))
	}
	if !maps.Equal(got.Outbox, want.Outbox) {
		t.Errorf("outbox rows: %v; want %v", got.Outbox, want.Outbox)
	}
}

// label prints a map by finding, naming each finding by its payment.
func label[V any](w *world, m map[int64]V) string {
	name := map[int64]string{w.c1.FindingID: "payment 1's", w.c2.FindingID: "payment 2's", w.f4: "payment 4's (review)"}
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(m)) {
		n := name[id]
		if n == "" {
			n = fmt.Sprintf("finding %d", id)
		}
		parts = append(parts, fmt.Sprintf("%s: %v", n, m[id]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// reopen is what a person does after c applied: its payment set back to pending (a refund
// reversed, a correction) and its finding reopened.
func (w *world) reopen(t testing.TB, c Command) {
	t.Helper()
	ctx := context.Background()
	if _, err := w.pool.Exec(ctx, `UPDATE payments SET status = 'pending' WHERE id = $1::bigint`, c.RecordID); err != nil {
		t.Fatal(err)
	}
	if err := w.store.ReopenFinding(ctx, c.FindingID, "ana", "the payment was reversed"); err != nil {
		t.Fatal(err)
	}
}

// reopened is the state after both commands applied and c1 was reopened.
func (w *world) reopened() state {
	s := w.applied()
	s.Payments[w.c1.RecordID] = "pending"
	s.Open[w.c1.FindingID] = true
	return s
}

// forged is a command for payment 5, which is unpaid, and payment 4's finding for review.
func (w *world) forged(outboxID int64) Forgery {
	cmd := reconcile.Command{Name: CommandName, Job: "sweep", RecordID: "5", FindingID: w.f4,
		Kind: "missed_success", ExpectedLocal: "pending", External: "succeeded"}
	payload, err := json.Marshal(cmd)
	if err != nil {
		panic(err)
	}
	return Forgery{OutboxID: outboxID, Tables: w.tables, Command: cmd, Payload: payload}
}

// hold takes the lock of c's payment, which the writer's update needs, and returns the backend
// holding it and a function that releases it.
func (w *world) hold(t testing.TB, c Command) (pid uint32, release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM payments WHERE id = $1::bigint FOR UPDATE`, c.RecordID).Scan(&pid); err != nil {
		_ = tx.Rollback(ctx)
		t.Fatal(err)
	}
	released := false
	release = func() {
		if !released {
			released = true
			_ = tx.Rollback(ctx)
		}
	}
	t.Cleanup(release)
	return pid, release
}

// holdFinding locks finding id, which a commit closing it and the writer resolving it need,
// and returns the backend holding the lock and a function that releases it.
func (w *world) holdFinding(t testing.TB, id int64) (pid uint32, release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM `+w.table("findings")+` WHERE id = $1 FOR UPDATE`, id).Scan(&pid); err != nil {
		_ = tx.Rollback(ctx)
		t.Fatal(err)
	}
	released := false
	release = func() {
		if !released {
			released = true
			_ = tx.Rollback(ctx)
		}
	}
	t.Cleanup(release)
	return pid, release
}

// blockedBy counts the backends waiting, directly or through others, for backend pid.
func (w *world) blockedBy(t testing.TB, pid uint32) int {
	t.Helper()
	var n int
	err := w.pool.QueryRow(context.Background(), `WITH RECURSIVE b(pid) AS (
			SELECT a.pid FROM pg_stat_activity AS a WHERE $1::int = ANY(pg_blocking_pids(a.pid))
			UNION
			SELECT a.pid FROM pg_stat_activity AS a, b WHERE b.pid = ANY(pg_blocking_pids(a.pid))
		) SELECT count(*) FROM b`, int(pid)).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Eventually polls cond until it holds, failing t if it does not within two minutes: a bound
// on a hang, not a timing assertion. Harnesses may use it to wait for their delivery.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("deliverytest: %s: not after 2 minutes", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
