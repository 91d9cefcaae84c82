package riverdelivery_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox/deliverytest"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/riverdelivery"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

func TestACommandAppliesOnceWhateverRiverDoes(t *testing.T) {
	deliverytest.Run(t, newRiverHarness)
}

// riverHarness runs the suite against a River client whose Worker applies the commands a
// Deliverer enqueued. Its ways to deliver a command again are River's: Client.JobRetry, another
// job with the same args, a job inserted again after the first was deleted, and args naming
// the tables another way; and any job at all, for a forgery.
type riverHarness struct {
	pool      *pgxpool.Pool
	schema    string
	worker    *riverdelivery.Worker
	client    *river.Client[pgx.Tx]
	deliverer *riverdelivery.Deliverer
	started   bool
}

func newRiverHarness(t *testing.T) deliverytest.Harness {
	h := &riverHarness{}
	h.pool, h.schema = pgtest.PoolSchema(t)
	var err error
	if h.worker, err = riverdelivery.NewWorker(h.pool, riverdelivery.WorkerConfig{}); err != nil {
		t.Fatal(err)
	}
	h.client = newClient(t, h.pool, h.schema, h.worker, 4)
	if h.deliverer, err = riverdelivery.New(h.client, riverdelivery.Config{}); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *riverHarness) DB() *pgxpool.Pool            { return h.pool }
func (h *riverHarness) Schema() string               { return h.schema }
func (h *riverHarness) Deliverer() pgstore.Deliverer { return h.deliverer }

func (h *riverHarness) Handle(t testing.TB, name string, w pgoutbox.CommandWriter) {
	if err := h.worker.Handle(name, w); err != nil {
		t.Fatal(err)
	}
}

// start starts the client once; it stops when the test ends.
func (h *riverHarness) start(t testing.TB) {
	t.Helper()
	if h.started {
		return
	}
	h.started = true
	if err := h.client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := h.client.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
}

// unfinished counts the jobs not yet completed, cancelled or discarded; those naming outbox
// row id only, if id is not zero.
func (h *riverHarness) unfinished(t testing.TB, id int64) int {
	t.Helper()
	var n int
	if err := h.pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job
		WHERE state NOT IN ('completed', 'cancelled', 'discarded') AND ($1 = 0 OR (args->>'outbox_id')::bigint = $1)`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (h *riverHarness) Drain(t testing.TB) {
	t.Helper()
	h.start(t)
	deliverytest.Eventually(t, "River worked every job", func() bool { return h.unfinished(t, 0) == 0 })
}

// jobs returns the ids and args of the jobs naming c's outbox row, oldest first.
func (h *riverHarness) jobs(t testing.TB, c deliverytest.Command) (ids []int64, args []map[string]any) {
	t.Helper()
	rows, err := h.pool.Query(context.Background(), `SELECT id, args FROM river_job
		WHERE kind = $1 AND (args->>'outbox_id')::bigint = $2 ORDER BY id`, riverdelivery.Kind, c.OutboxID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var a map[string]any
		if err := rows.Scan(&id, &a); err != nil {
			t.Fatal(err)
		}
		ids, args = append(ids, id), append(args, a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ids) == 0 {
		t.Fatalf("no job names outbox row %d", c.OutboxID)
	}
	return ids, args
}

// rawArgs are job args of kind riverdelivery.Kind written as given, without River's unique
// options: what anyone able to insert River jobs can enqueue.
type rawArgs struct{ args map[string]any }

func (rawArgs) Kind() string                   { return riverdelivery.Kind }
func (a rawArgs) MarshalJSON() ([]byte, error) { return json.Marshal(a.args) }

func (h *riverHarness) insert(t testing.TB, args map[string]any) {
	t.Helper()
	if _, err := h.client.Insert(context.Background(), rawArgs{args}, nil); err != nil {
		t.Fatal(err)
	}
}

func (h *riverHarness) Retry(t testing.TB, c deliverytest.Command) {
	ids, _ := h.jobs(t, c)
	for _, id := range ids {
		if _, err := h.client.JobRetry(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
}

func (h *riverHarness) Duplicate(t testing.TB, c deliverytest.Command) {
	_, args := h.jobs(t, c)
	h.insert(t, args[0])
}

func (h *riverHarness) Reinsert(t testing.TB, c deliverytest.Command) {
	ids, args := h.jobs(t, c)
	for _, id := range ids {
		if _, err := h.client.JobDelete(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	h.insert(t, args[0])
}

func (h *riverHarness) Rename(t testing.TB, c deliverytest.Command) {
	_, args := h.jobs(t, c)
	args[0]["prefix"] = "" // the Worker's own tables, the same
	h.insert(t, args[0])
}

func (h *riverHarness) Forge(t testing.TB, f deliverytest.Forgery) {
	h.insert(t, map[string]any{"outbox_id": f.OutboxID, "schema": f.Tables.Schema, "prefix": "reconcile_",
		"name": f.Command.Name, "record_id": f.Command.RecordID, "payload": f.Payload})
}

// Concurrently enqueues n-1 more jobs of c beside its own and lets the client, which works
// four at once, take them all.
func (h *riverHarness) Concurrently(t testing.TB, c deliverytest.Command, n int) (func() int, func()) {
	_, args := h.jobs(t, c)
	for range n - 1 {
		h.insert(t, args[0])
	}
	h.start(t)
	return func() int { return h.unfinished(t, c.OutboxID) }, func() {
		deliverytest.Eventually(t, "River worked every job of the command", func() bool { return h.unfinished(t, c.OutboxID) == 0 })
	}
}
