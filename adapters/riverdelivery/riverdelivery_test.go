package riverdelivery_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/riverdelivery"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// world is a host that runs River: its payments table, the reconciler's store delivering
// repairs to River, and a River client whose worker applies them through markPaid.
type world struct {
	pool   *pgxpool.Pool
	store  *pgstore.Store[string]
	client *river.Client[pgx.Tx]
	gw     *reconciletest.Gateway
	// failing makes the writer fail, permanent fail with pgoutbox.Permanent.
	failing, permanent atomic.Bool
	// logs holds the worker's log.
	logs lockedBuffer
}

// lockedBuffer is a log destination that the worker's goroutines may share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fastRetry retries a failed job at once, so a test sees River's retries without waiting.
type fastRetry struct{}

func (fastRetry) NextRetry(*rivertype.JobRow) time.Time { return time.Now().Add(time.Millisecond) }

// newClient migrates River into the schema of pool and returns a client working worker's jobs,
// maxWorkers at once, which retries a failed job at once.
func newClient(t *testing.T, pool *pgxpool.Pool, schema string, worker *riverdelivery.Worker, maxWorkers int) *river.Client[pgx.Tx] {
	t.Helper()
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrator.Migrate(context.Background(), rivermigrate.DirectionUp, nil); err != nil {
		t.Fatal(err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, worker)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:            schema,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Workers:           workers,
		RetryPolicy:       fastRetry{},
		FetchPollInterval: 50 * time.Millisecond,
		FetchCooldown:     10 * time.Millisecond,
		TestOnly:          true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// newWorld migrates River and the reconciler into the test's schema and loads payments: rows
// 1 and 2 pending here though their PaymentIntents succeeded (repairable), 3 in sync, 4 paid
// here though canceled at Stripe (for review).
func newWorld(t *testing.T, maxAttempts int, wrap func(pgstore.Deliverer) pgstore.Deliverer) *world {
	t.Helper()
	ctx := context.Background()
	pool, schema := pgtest.PoolSchema(t)
	for _, q := range []string{shardtest.PaymentsDDL,
		`CREATE TABLE effects (payment_id bigint NOT NULL, finding_id bigint NOT NULL)`,
		`INSERT INTO payments (id, external_id, status, updated_at) SELECT id, 'pi_' || id, s, now() - interval '1 hour'
			FROM unnest(ARRAY[1, 2, 3, 4], ARRAY['pending', 'pending', 'paid', 'paid']) AS t(id, s)`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	w := &world{pool: pool, gw: reconciletest.NewGateway(map[string]string{
		"pi_1": "succeeded", "pi_2": "succeeded", "pi_3": "succeeded", "pi_4": "canceled"})}

	worker, err := riverdelivery.NewWorker(pool, riverdelivery.WorkerConfig{Logger: slog.New(slog.NewTextHandler(&w.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Handle("ApplyPaymentSucceeded", w.markPaid); err != nil {
		t.Fatal(err)
	}
	w.client = newClient(t, pool, schema, worker, 2)
	var d pgstore.Deliverer
	d, err = riverdelivery.New(w.client, riverdelivery.Config{MaxAttempts: maxAttempts})
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		d = wrap(d)
	}
	w.store, err = pgstore.New(pool, pgstore.Config{Table: "payments", Schema: schema, Deliver: d})
	if err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, w.store.Tables()); err != nil {
		t.Fatal(err)
	}
	return w
}

// markPaid is the host's canonical writer, as its webhook would call it: a guarded transition
// (a no-op once the row has moved on) that resolves the command's finding in the same
// transaction, and records each change it made in effects.
func (w *world) markPaid(ctx context.Context, tx pgx.Tx, cmd reconcile.Command) error {
	if w.failing.Load() {
		return errors.New("the ledger is down")
	}
	if w.permanent.Load() {
		return pgoutbox.Permanent(errors.New("the payment is archived"))
	}
	tag, err := tx.Exec(ctx, `UPDATE payments SET status = 'paid' WHERE id = $1::bigint AND status = $2`, cmd.RecordID, cmd.ExpectedLocal)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 1 {
		if _, err := tx.Exec(ctx, `INSERT INTO effects VALUES ($1::bigint, $2)`, cmd.RecordID, cmd.FindingID); err != nil {
			return err
		}
	}
	err = w.store.ResolveFindingIn(ctx, tx, cmd.FindingID, reconcile.Resolution{As: reconcile.ResolutionRepaired, By: reconcile.ResolvedByReconciler, Note: "marked paid"})
	if errors.Is(err, reconcile.ErrAlreadyResolved) {
		return nil
	}
	return err
}

func (w *world) config() reconcile.Config[string, string] {
	return reconcile.Config[string, string]{Job: "sweep", Source: w.store, Sink: w.store, Gateway: w.gw,
		Classifier: reconciletest.Classifier(), BatchSize: 10}
}

func (w *world) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := w.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// start starts the client and returns a channel of its job events (completed, failed,
// cancelled); the client stops when the test ends.
func (w *world) start(t *testing.T) <-chan *river.Event {
	t.Helper()
	events, cancel := w.client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled)
	t.Cleanup(cancel)
	if err := w.client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.client.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return events
}

// await waits for n events of kind, failing the test on any other event or if they never
// come (a bound on a hang, not a timing assertion).
func await(t *testing.T, events <-chan *river.Event, kind river.EventKind, n int) []*river.Event {
	t.Helper()
	var got []*river.Event
	deadline := time.After(2 * time.Minute)
	for len(got) < n {
		select {
		case e := <-events:
			if e.Kind != kind {
				t.Fatalf("job %d: event %s (state %s, errors %v); want %s", e.Job.ID, e.Kind, e.Job.State, e.Job.Errors, kind)
			}
			got = append(got, e)
		case <-deadline:
			t.Fatalf("%d of %d %s events after 2 minutes", len(got), n, kind)
		}
	}
	return got
}

func TestTheRepairsOfABatchAreRiverJobsAppliedOnceThroughTheWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, 0, nil)
	reconciletest.Cycle(t, w.config(), 3)

	// The commit enqueued one job per command, in its own transaction, and handed the outbox
	// rows over.
	if n := w.count(t, `SELECT count(*) FROM river_job WHERE kind = $1 AND state = 'available'`, riverdelivery.Kind); n != 2 {
		t.Fatalf("%d jobs available; want 2", n)
	}
	if n := w.count(t, `SELECT count(*) FROM river_job AS j JOIN reconcile_outbox AS o ON o.id = (j.args->>'outbox_id')::bigint
		WHERE o.lease_owner = 'river job ' || j.id AND o.processed_at IS NOT NULL AND o.status = 'pending'`); n != 2 {
		t.Fatalf("%d jobs named by a handed-over outbox row; want 2", n)
	}

	events := w.start(t)
	await(t, events, river.EventKindJobCompleted, 2)
	if n := w.count(t, `SELECT count(*) FROM payments WHERE status = 'paid'`); n != 4 {
		t.Errorf("%d payments paid; want 4", n)
	}
	if n := w.count(t, `SELECT count(*) FROM effects`); n != 2 {
		t.Errorf("the writer changed %d rows; want 2", n)
	}
	if n := w.count(t, `SELECT count(*) FROM reconcile_outbox WHERE status = 'done'`); n != 2 {
		t.Errorf("%d outbox rows done; want 2", n)
	}
	for _, f := range reconciletest.Findings(t, w.store, "sweep") {
		switch {
		case f.Kind == "missed_success" && (f.Open() || f.Resolution != reconcile.ResolutionRepaired):
			t.Errorf("finding %d of row %s: open %v, resolution %q; want repaired", f.ID, f.RecordID, f.Open(), f.Resolution)
		case f.Kind != "missed_success" && !f.Open():
			t.Errorf("finding %d (%s) was resolved; only people resolve it", f.ID, f.Kind)
		}
		if f.Command == "" {
			continue
		}
		detail, err := w.store.Finding(ctx, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, e := range detail.History {
			actions = append(actions, e.Action+" "+e.Resolution)
		}
		if !slices.Contains(actions, "resolved "+reconcile.ResolutionRepaired) || !slices.Contains(actions, "command done ") {
			t.Errorf("finding %d: history %q; want its resolution and its command done", f.ID, actions)
		}
	}

	// River running a completed job again (a retry by hand) applies nothing twice: its outbox
	// row is done. (deliverytest tries every such replay, after the finding was reopened.)
	jobs, err := w.client.JobList(ctx, river.NewJobListParams().Kinds(riverdelivery.Kind).States(rivertype.JobStateCompleted))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.client.JobRetry(ctx, jobs.Jobs[0].ID); err != nil {
		t.Fatal(err)
	}
	await(t, events, river.EventKindJobCompleted, 1)
	if n := w.count(t, `SELECT count(*) FROM effects`); n != 2 {
		t.Errorf("after the job ran again, the writer changed %d rows; want still 2", n)
	}
	// The next cycle finds nothing to repair and enqueues nothing.
	reconciletest.Cycle(t, w.config(), 3)
	if n := w.count(t, `SELECT count(*) FROM river_job`); n != 2 {
		t.Errorf("%d jobs after a clean cycle; want still 2", n)
	}
}

// failAfter delivers, then fails: the commit it is part of rolls back.
type failAfter struct{ pgstore.Deliverer }

func (f failAfter) Deliver(ctx context.Context, tx pgx.Tx, cmds []pgstore.QueuedCommand) error {
	if err := f.Deliverer.Deliver(ctx, tx, cmds); err != nil {
		return err
	}
	return errors.New("the commit fails after the jobs were inserted")
}

func TestARolledBackCommitLeavesNoJob(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 0, func(d pgstore.Deliverer) pgstore.Deliverer { return failAfter{d} })
	if _, err := reconcile.RunBatch(context.Background(), w.config()); err == nil {
		t.Fatal("the batch committed though its delivery failed")
	}
	for _, q := range []string{`SELECT count(*) FROM river_job`, `SELECT count(*) FROM reconcile_findings`, `SELECT count(*) FROM reconcile_outbox`} {
		if n := w.count(t, q); n != 0 {
			t.Errorf("%s = %d after the rolled-back commit; want 0", q, n)
		}
	}
}

func TestAFailingWriterIsRetriedByRiverThenDiscardedAndCanBeRetriedByHand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, 2, nil)
	w.failing.Store(true)
	reconciletest.Cycle(t, w.config(), 3)
	events := w.start(t)
	// Two commands, two attempts each: the first failure leaves a job to retry, the second
	// discards it.
	failed := await(t, events, river.EventKindJobFailed, 4)
	discarded := map[int64]bool{}
	for _, e := range failed {
		if e.Job.State == rivertype.JobStateDiscarded {
			discarded[e.Job.ID] = true
		}
	}
	if len(discarded) != 2 {
		t.Fatalf("%d jobs discarded; want 2", len(discarded))
	}
	// Dead commands show as River's discarded jobs, with every attempt's error; the outbox row
	// stays handed over, and the finding open (Status counts it stale after StaleAfter).
	jobs, err := w.client.JobList(ctx, river.NewJobListParams().Kinds(riverdelivery.Kind).States(rivertype.JobStateDiscarded))
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs.Jobs) != 2 || len(jobs.Jobs[0].Errors) != 2 {
		t.Fatalf("discarded jobs: %d, the first with %d errors; want 2 jobs with 2 errors", len(jobs.Jobs), len(jobs.Jobs[0].Errors))
	}
	if n := w.count(t, `SELECT count(*) FROM effects`); n != 0 {
		t.Errorf("the failing writer changed %d rows; want 0", n)
	}
	if n := w.count(t, `SELECT count(*) FROM reconcile_findings WHERE kind = 'missed_success' AND resolved_at IS NULL`); n != 2 {
		t.Errorf("%d repairable findings open; want 2", n)
	}
	if n := w.count(t, `SELECT count(*) FROM reconcile_outbox WHERE status = 'pending' AND processed_at IS NOT NULL`); n != 2 {
		t.Errorf("%d outbox rows still handed over; want 2", n)
	}
	// Once the writer works again, retrying the discarded jobs with River applies them.
	w.failing.Store(false)
	for _, j := range jobs.Jobs {
		if _, err := w.client.JobRetry(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	await(t, events, river.EventKindJobCompleted, 2)
	if n := w.count(t, `SELECT count(*) FROM effects`); n != 2 {
		t.Errorf("after the retry the writer changed %d rows; want 2", n)
	}
	if n := w.count(t, `SELECT count(*) FROM reconcile_findings WHERE kind = 'missed_success' AND resolution = 'repaired'`); n != 2 {
		t.Errorf("%d findings repaired; want 2", n)
	}
}

// The same command enqueued again, by the Deliverer and by River's own Insert with its args,
// applies once: the row names the Deliverer's last job, and the others apply nothing.
func TestAnEnqueueOfTheSameCommandAgainAppliesItOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, 0, nil)
	reconciletest.Cycle(t, w.config(), 3)
	var id int64
	var name string
	var payload []byte
	if err := w.pool.QueryRow(ctx, `SELECT id, event_type, payload FROM reconcile_outbox ORDER BY id LIMIT 1`).Scan(&id, &name, &payload); err != nil {
		t.Fatal(err)
	}
	cmd, err := reconcile.DecodeCommand(name, payload)
	if err != nil {
		t.Fatal(err)
	}
	d, err := riverdelivery.New(w.client, riverdelivery.Config{})
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		if err := d.Deliver(ctx, tx, []pgstore.QueuedCommand{{OutboxID: id, Tables: w.store.Tables(), Command: cmd, Payload: payload}}); err != nil {
			return err
		}
		_, err := w.client.InsertTx(ctx, tx, riverdelivery.Args{OutboxID: id, Schema: w.store.Tables().Schema, Prefix: w.store.Tables().Prefix}, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := w.count(t, `SELECT count(*) FROM river_job`); n != 4 {
		t.Fatalf("%d jobs; want 4, one per command and two more", n)
	}
	if n := w.count(t, `SELECT count(*) FROM river_job AS j JOIN reconcile_outbox AS o ON o.id = (j.args->>'outbox_id')::bigint
		WHERE o.lease_owner = 'river job ' || j.id`); n != 2 {
		t.Fatalf("%d outbox rows name a job of theirs; want 2", n)
	}
	// Its jobs by id: the commit's, the Deliverer's again, River's Insert's.
	if n := w.count(t, `SELECT count(*) FROM reconcile_outbox WHERE id = $1 AND lease_owner = 'river job ' ||
		(SELECT id FROM river_job WHERE (args->>'outbox_id')::bigint = $1 ORDER BY id OFFSET 1 LIMIT 1)`, id); n != 1 {
		t.Fatalf("outbox row %d does not name the Deliverer's last job", id)
	}
	events := w.start(t)
	await(t, events, river.EventKindJobCompleted, 4)
	if n := w.count(t, `SELECT count(*) FROM effects`); n != 2 {
		t.Errorf("the writer changed %d rows; want 2", n)
	}
}

func TestNewAndNewWorkerRejectBadArguments(t *testing.T) {
	t.Parallel()
	if _, err := riverdelivery.New(nil, riverdelivery.Config{}); err == nil {
		t.Error("New accepted a nil client")
	}
	client, err := river.NewClient(riverpgxv5.New(nil), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []riverdelivery.Config{{MaxAttempts: -1}, {Priority: 5}, {Priority: -1}} {
		if _, err := riverdelivery.New(client, cfg); err == nil {
			t.Errorf("New accepted %+v", cfg)
		}
	}
	if _, err := riverdelivery.NewWorker(nil, riverdelivery.WorkerConfig{}); err == nil {
		t.Error("NewWorker accepted a nil db")
	}
	wk, err := riverdelivery.NewWorker(&pgxpool.Pool{}, riverdelivery.WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	noop := func(context.Context, pgx.Tx, reconcile.Command) error { return nil }
	if err := wk.Handle("A", noop); err != nil {
		t.Fatal(err)
	}
	if err := wk.Handle("A", noop); err == nil {
		t.Error("a second writer for one command was accepted")
	}
	if err := wk.Handle("", noop); err == nil {
		t.Error("a writer without a name was accepted")
	}
}

func TestAPermanentErrorCancelsTheJobAtOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 5, nil)
	w.permanent.Store(true)
	reconciletest.Cycle(t, w.config(), 3)
	for _, e := range await(t, w.start(t), river.EventKindJobCancelled, 2) {
		if e.Job.State != rivertype.JobStateCancelled || len(e.Job.Errors) != 1 {
			t.Errorf("job %d: state %s after %d attempts; want cancelled after one", e.Job.ID, e.Job.State, len(e.Job.Errors))
		}
	}
	if n := w.count(t, `SELECT count(*) FROM reconcile_findings WHERE kind = 'missed_success' AND resolved_at IS NULL`); n != 2 {
		t.Errorf("%d repairable findings open; want 2", n)
	}
}

// A person who resolved a finding before its job ran is not overruled: the job completes
// without calling the writer, as the dispatcher's HandleCommand does.
func TestAJobWhoseFindingWasResolvedFirstCompletesWithoutCallingTheWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, 0, nil)
	reconciletest.Cycle(t, w.config(), 3)
	fs, err := w.store.ListFindings(ctx, reconcile.FindingQuery{Job: "sweep", RecordID: "1"})
	if err != nil || len(fs) != 1 {
		t.Fatalf("findings of row 1: %v, %v", fs, err)
	}
	if err := w.store.ResolveFinding(ctx, fs[0].ID, reconcile.Resolution{As: reconcile.ResolutionAccepted, By: "ana", Note: "refunded by hand"}); err != nil {
		t.Fatal(err)
	}
	await(t, w.start(t), river.EventKindJobCompleted, 2)
	if n := w.count(t, `SELECT count(*) FROM effects`); n != 1 {
		t.Errorf("the writer changed %d rows; want 1 (row 2 only)", n)
	}
	if n := w.count(t, `SELECT count(*) FROM payments WHERE id = 1 AND status = 'pending'`); n != 1 {
		t.Error("payment 1 was changed though a person had resolved its finding")
	}
	f, err := w.store.Finding(ctx, fs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if f.Resolution != reconcile.ResolutionAccepted || f.ResolvedBy != "ana" {
		t.Errorf("finding %d resolved %q by %q; want accepted by ana", f.ID, f.Resolution, f.ResolvedBy)
	}
}

// Two stores whose reconciler tables differ (another prefix here; another schema alike) number
// their outbox rows from 1 each: their commands must not be taken for duplicates of each
// other, and each job must mark done the row of its own outbox.
func TestTheCommandsOfStoresWithDifferentTablesAreNotTakenForEachOther(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, 0, nil)
	d, err := riverdelivery.New(w.client, riverdelivery.Config{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := pgstore.New(w.pool, pgstore.Config{Table: "payments", Schema: w.store.Config().Schema,
		Tables: pgstore.Tables{Prefix: "other_"}, Deliver: d})
	if err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, w.pool, other.Tables()); err != nil {
		t.Fatal(err)
	}
	reconciletest.Cycle(t, w.config(), 3)
	cfg := w.config()
	cfg.Source, cfg.Sink = other, other
	reconciletest.Cycle(t, cfg, 3)
	if n := w.count(t, `SELECT count(*) FROM reconcile_outbox`) + w.count(t, `SELECT count(*) FROM other_outbox`); n != 4 {
		t.Fatalf("%d commands queued; want 4, two per store", n)
	}
	if n := w.count(t, `SELECT count(*) FROM river_job`); n != 4 {
		t.Fatalf("%d jobs; want 4, one per command of each store", n)
	}
	events := w.start(t)
	await(t, events, river.EventKindJobCompleted, 4)
	for _, outbox := range []string{"reconcile_outbox", "other_outbox"} {
		if n := w.count(t, `SELECT count(*) FROM `+outbox+` WHERE status = 'done'`); n != 2 {
			t.Errorf("%s: %d commands done; want 2", outbox, n)
		}
	}
}

// A job its outbox row does not wait for completes having applied nothing, and says so in the
// worker's log and in the job's output, which River's UI shows.
func TestAJobItsOutboxRowDoesNotWaitForIsALoggedNoOp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, 0, nil)
	reconciletest.Cycle(t, w.config(), 3)
	events := w.start(t)
	await(t, events, river.EventKindJobCompleted, 2)
	var job int64
	if err := w.pool.QueryRow(ctx, `SELECT id FROM river_job ORDER BY id LIMIT 1`).Scan(&job); err != nil {
		t.Fatal(err)
	}
	if _, err := w.client.JobRetry(ctx, job); err != nil {
		t.Fatal(err)
	}
	await(t, events, river.EventKindJobCompleted, 1)
	if n := w.count(t, `SELECT count(*) FROM effects`); n != 2 {
		t.Errorf("the writer changed %d rows; want 2", n)
	}
	rows, err := w.pool.Query(ctx, `SELECT metadata->>'output' FROM river_job ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]int{}
	for _, o := range outs {
		outputs[o]++
	}
	// The retried job's output is the refusal, which replaced the delivery's.
	if want := map[string]int{`{"delivered": true}`: 1, `{"refused": "the command is done", "delivered": false}`: 1}; !maps.Equal(outputs, want) {
		t.Errorf("jobs' outputs %v; want %v", outputs, want)
	}
	logs := w.logs.String()
	if !strings.Contains(logs, "level=WARN msg=\"riverdelivery: the outbox row does not wait for this job; nothing applied\" job="+fmt.Sprint(job)) ||
		!strings.Contains(logs, `reason="the command is done"`) {
		t.Errorf("log %q; want a warning naming job %d and why", logs, job)
	}
}

// Redrive enqueues a new job for a command whose job is gone, as River's cleaner leaves it,
// or that names none; the job it replaces can no longer apply the command, and a command done
// or queued for a dispatcher is not re-driven.
func TestRedriveEnqueuesTheOneJobThatMayApplyAWaitingCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, 1, nil)
	w.failing.Store(true)
	reconciletest.Cycle(t, w.config(), 3)
	events := w.start(t)
	await(t, events, river.EventKindJobFailed, 2)
	d, err := riverdelivery.New(w.client, riverdelivery.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := w.pool.Query(ctx, `SELECT (args->>'outbox_id')::bigint, id FROM river_job WHERE state = 'discarded' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	discarded, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Command, Job int64 }])
	if err != nil || len(discarded) != 2 {
		t.Fatalf("discarded jobs %v: %v; want 2", discarded, err)
	}
	ids, jobs := []int64{discarded[0].Command, discarded[1].Command}, []int64{discarded[0].Job, discarded[1].Job}
	// The first command's job removed by River's cleaner; the second's row handed over by an
	// earlier version, naming no job.
	if _, err := w.client.JobDelete(ctx, jobs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := w.pool.Exec(ctx, `UPDATE reconcile_outbox SET lease_owner = NULL WHERE id = $1`, ids[1]); err != nil {
		t.Fatal(err)
	}
	w.failing.Store(false)
	if _, err := w.client.JobRetry(ctx, jobs[1]); err != nil {
		t.Fatal(err)
	}
	await(t, events, river.EventKindJobCompleted, 1)
	if n := w.count(t, `SELECT count(*) FROM effects`); n != 0 {
		t.Fatalf("a job the outbox row does not name changed %d rows", n)
	}

	for _, id := range ids {
		if _, err := d.Redrive(ctx, w.pool, w.store.Tables(), id, "ana"); err != nil {
			t.Fatal(err)
		}
	}
	await(t, events, river.EventKindJobCompleted, 2)
	if n := w.count(t, `SELECT count(*) FROM effects`); n != 2 {
		t.Errorf("after the re-drives the writer changed %d rows; want 2", n)
	}
	if n := w.count(t, `SELECT count(*) FROM reconcile_outbox WHERE status = 'done' AND lease_owner IS NULL`); n != 2 {
		t.Errorf("%d commands done; want 2", n)
	}
	if n := w.count(t, `SELECT count(*) FROM reconcile_finding_events WHERE action = 'command redriven' AND actor = 'ana'`); n != 2 {
		t.Errorf("%d re-drives in the findings' history; want 2", n)
	}

	// Done, missing or a dispatcher's: nothing to re-drive.
	if _, err := w.pool.Exec(ctx, `INSERT INTO reconcile_outbox (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('payments', '3', 'ApplyPaymentSucceeded', '{}')`); err != nil {
		t.Fatal(err)
	}
	var dispatchers int64
	if err := w.pool.QueryRow(ctx, `SELECT max(id) FROM reconcile_outbox`).Scan(&dispatchers); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{ids[0], dispatchers, dispatchers + 1} {
		if job, err := d.Redrive(ctx, w.pool, w.store.Tables(), id, "ana"); !errors.Is(err, riverdelivery.ErrNotWaiting) {
			t.Errorf("Redrive of command %d: job %d, %v; want ErrNotWaiting", id, job, err)
		}
	}
	if _, err := d.Redrive(ctx, w.pool, w.store.Tables(), ids[0], ""); err == nil {
		t.Error("a re-drive without an actor was accepted")
	}
	if n := w.count(t, `SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'discarded')`); n != 0 {
		t.Errorf("%d jobs enqueued by refused re-drives", n)
	}
}
