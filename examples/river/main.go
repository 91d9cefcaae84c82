// River schedules a sharded reconciliation job across several worker processes with River
// (github.com/riverqueue/river), the Postgres-backed job queue, on the same database as the
// reconciler.
//
//	go run ./examples/river
//
// It connects to $DATABASE_URL (by default postgres://postgres@127.0.0.1:5432/test?sslmode=disable),
// drops and creates the schema reconcile_river_demo, runs River's migrations there
// (rivermigrate) and the reconciler's (pgstore.Migrate), and loads a payments table whose rows
// mostly agree with their PaymentIntents in a fake Stripe (stripetest, served over HTTP by this
// process), with some drift planted: success webhooks that never arrived (repairable) and
// payments marked paid that Stripe canceled (for review).
//
// It then starts worker processes (this program again, with -worker), each a River client with
// the same configuration:
//
//   - one periodic job per shard slot, "reconcile_shard_tick" {slot: i}, every -interval. The
//     River leader inserts them; a unique option keeps at most one job per slot waiting or
//     running, so slow ticks never pile up;
//   - its worker calls pgshard.RunShard: it leases whichever shard of the job is free (not
//     the slot's: slots only set how many ticks run at once), runs batches until the shard
//     wraps or the tick's time budget is spent, and releases it. Leases, fencing and cycles are
//     the reconciler's (pgshard.Job), not River's: River only decides when and where a
//     tick runs, and a tick that River runs twice, or a worker that dies, costs a redone batch at
//     most. A dead worker's shard is taken over by another tick once its lease (10 s) expires;
//     its running River jobs keep their slots until River's rescuer frees them, 45 s after they
//     started (RescueStuckJobsAfter, just over the ticks' 35 s timeout);
//   - every worker draws from one pgbudget.Budget, so all processes together stay within
//     -rate calls per second to Stripe; a tick the budget or Stripe pushes back on is snoozed
//     for the wait asked.
//
// When the job has completed -cycles cycles (every shard wrapped that many times), it stops
// the workers (SIGTERM: River stops gracefully, letting running ticks finish within a minute,
// and cancels those that do not, which write nothing) and prints what happened: ticks per
// process, the shards with their ranges and leases, the findings and repair commands against
// what was planted, and the calls to Stripe. It exits with status 1 if a planted difference was
// missed or found twice, a row was never verified, or a single process did all the work.
// Interrupted (SIGINT or SIGTERM), it stops the workers the same way; on Linux they also die
// with it if it is killed.
//
// Flags:
//
//	-rows N       payments to load (default 20000)
//	-workers N    worker processes (default 3)
//	-slots N      ticks River runs at once per process (default 2)
//	-shards N     shards of the job (default 6)
//	-cycles N     job cycles to run before stopping (default 2)
//	-rate R       the shared budget, Stripe calls per second for all workers (default 50)
//	-latency D    latency stripetest adds to every request (default 5ms)
//	-interval D   period of the periodic jobs (default 1s)
//	-schema S     the schema to drop and create (default reconcile_river_demo)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

const defaultSchema = "reconcile_river_demo"

// options are the parent's flags.
type options struct {
	DatabaseURL string
	Schema      string
	Rows        int
	Workers     int
	Slots       int
	Shards      int
	Cycles      int64
	Rate        float64
	Latency     time.Duration
	Interval    time.Duration
	// Timeout bounds the whole run.
	Timeout time.Duration
}

func main() {
	maybeWorker() // a worker process runs here and exits
	// SIGTERM too: a parent stopped by a supervisor stops its workers before it exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := options{}
	flag.StringVar(&opts.Schema, "schema", defaultSchema, "the schema to drop and create")
	flag.IntVar(&opts.Rows, "rows", 20000, "payments to load")
	flag.IntVar(&opts.Workers, "workers", 3, "worker processes")
	flag.IntVar(&opts.Slots, "slots", 2, "ticks River runs at once per process")
	flag.IntVar(&opts.Shards, "shards", 6, "shards of the job")
	flag.Int64Var(&opts.Cycles, "cycles", 2, "job cycles to run before stopping")
	flag.Float64Var(&opts.Rate, "rate", 50, "the shared budget: Stripe calls per second, all workers together")
	flag.DurationVar(&opts.Latency, "latency", 5*time.Millisecond, "latency stripetest adds to every request")
	flag.DurationVar(&opts.Interval, "interval", time.Second, "period of the periodic jobs")
	worker := flag.Bool("worker", false, "internal: marks the worker processes this program starts")
	flag.Parse()
	if *worker {
		fmt.Fprintln(os.Stderr, "river example: -worker is set by the program for its own worker processes")
		os.Exit(2)
	}
	opts.DatabaseURL, _ = pgenv.URL("DATABASE_URL")
	opts.Timeout = 10 * time.Minute
	if err := run(ctx, os.Stdout, opts); err != nil {
		fmt.Fprintln(os.Stderr, "river example:", err)
		stop()
		os.Exit(1)
	}
}

// run sets up the schema, starts the worker processes, waits for the cycles, stops the workers
// and reports.
func run(ctx context.Context, out io.Writer, opts options) error {
	switch {
	case opts.Rows <= 0, opts.Workers <= 0, opts.Slots <= 0, opts.Shards <= 0, opts.Cycles <= 0, opts.Rate <= 0, opts.Interval < time.Second:
		return errors.New("-rows, -workers, -slots, -shards, -cycles and -rate must be positive, -interval at least 1s")
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	admin, err := pgenv.Connect(ctx, opts.DatabaseURL, "the database URL")
	if err != nil {
		return err
	}
	schema := pgx.Identifier{opts.Schema}.Sanitize()
	for _, q := range []string{"DROP SCHEMA IF EXISTS " + schema + " CASCADE", "CREATE SCHEMA " + schema} {
		if _, err := admin.Exec(ctx, q); err != nil {
			admin.Close()
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	// Everything else works in the demo's schema, as the workers do.
	pcfg := admin.Config()
	admin.Close()
	pcfg.ConnConfig.RuntimeParams["search_path"] = opts.Schema
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	// River's tables, in the same database and schema as the reconciler's.
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: opts.Schema})
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{Schema: opts.Schema}); err != nil {
		return err
	}
	fx, err := load(ctx, pool, opts.Schema, opts.Rows)
	if err != nil {
		return err
	}
	defer fx.stripe.Close()
	fx.stripe.SetLatency(opts.Latency)
	fmt.Fprintf(out, "Loaded %d payments into %s.payments and their PaymentIntents into stripetest (%s)\n", opts.Rows, opts.Schema, fx.stripe.URL())
	fmt.Fprintf(out, "Planted: %d missed success webhooks (repairable), %d payments paid here but canceled at Stripe (review)\n\n", fx.repairable, fx.review)

	exe, err := os.Executable()
	if err != nil {
		return err
	}
	workers := make([]*workerProc, opts.Workers)
	defer func() {
		// Workers still running (the run failed, or was interrupted by SIGINT or SIGTERM) are
		// asked to stop as they would be at the end, and killed if they take longer than a few
		// seconds: a killed worker's running ticks hold their River slots until rescued.
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, w := range workers {
			if w != nil && !w.exited() {
				_ = w.cmd.Process.Signal(syscall.SIGTERM)
			}
		}
		for _, w := range workers {
			if w == nil {
				continue
			}
			select {
			case <-w.done:
			case <-dctx.Done():
			}
			w.kill()
		}
	}()
	for i := range workers {
		cfg := workerConfig{
			ID: fmt.Sprintf("worker-%d", i), DatabaseURL: opts.DatabaseURL, Schema: opts.Schema,
			StripeURL: fx.stripe.URL(), StripeKey: fx.stripe.Key(),
			Slots: opts.Slots, Shards: opts.Shards, Rate: opts.Rate, Interval: opts.Interval,
		}
		if workers[i], err = startWorker(exe, cfg); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "Started %d worker processes, each a River client working %d ticks at a time; %d periodic jobs (one per shard slot) every %v\n",
		opts.Workers, opts.Slots, opts.Shards, opts.Interval)

	job, err := jobFor(pool, opts.Shards, "observer")
	if err != nil {
		return err
	}
	start := time.Now()
	for reported := int64(0); reported < opts.Cycles; {
		st, err := job.ShardStatus(ctx)
		if err != nil {
			return err
		}
		if st.CyclesCompleted > reported {
			reported = st.CyclesCompleted
			fmt.Fprintf(out, "  cycle %d completed after %v (every shard wrapped)\n", reported, time.Since(start).Round(100*time.Millisecond))
		}
		for _, w := range workers {
			if w.exited() {
				return fmt.Errorf("%s exited early: %v\n%s", w.cfg.ID, w.err(), w.stderr.String())
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d cycles: %w", opts.Cycles, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	fmt.Fprintln(out, "Stopping the workers (SIGTERM: River lets running ticks finish)")
	for _, w := range workers {
		if err := w.stop(ctx); err != nil {
			return err
		}
	}
	return report(ctx, out, pool, job, fx, opts, workers)
}

// report prints what the run did and checks it.
func report(ctx context.Context, out io.Writer, pool *pgxpool.Pool, job *pgshard.Job[string], fx *fixture, opts options, workers []*workerProc) error {
	var problems []string
	fmt.Fprintln(out, "\nTicks per worker process (River jobs completed, from river_job.attempted_by)")
	rows, err := pool.Query(ctx, `SELECT attempted_by[array_length(attempted_by, 1)], count(*) FROM river_job
		WHERE kind = 'reconcile_shard_tick' AND state = 'completed' GROUP BY 1 ORDER BY 1`)
	if err != nil {
		return err
	}
	perWorker := map[string]int64{}
	var id string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		perWorker[id] = n
		return nil
	}); err != nil {
		return err
	}
	busy := 0
	for _, w := range workers {
		s := w.summary()
		fmt.Fprintf(out, "  %-9s %3d jobs  %3d ticks that leased a shard  %7d rows  %4d Stripe calls  shards %v\n",
			w.cfg.ID, perWorker[w.cfg.ID], s.Leased, s.Scanned, s.Calls, s.Shards)
		if s.Scanned > 0 {
			busy++
		}
	}
	if busy < 2 && opts.Workers >= 2 {
		problems = append(problems, fmt.Sprintf("only %d worker process read rows", busy))
	}

	st, err := job.ShardStatus(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nShards of %s (cycles completed: %d)\n", job.Job(), st.CyclesCompleted)
	for _, s := range st.Shards {
		lower, upper := strings.Trim(s.Lower, "[]"), strings.Trim(s.Upper, "[]")
		if lower == "" {
			lower = "-inf"
		}
		if upper == "" {
			upper = "+inf"
		}
		fmt.Fprintf(out, "  shard %d  ids [%s, %s)  %6d rows  lag %-8v  %d leases, %d takeovers\n",
			s.Shard, lower, upper, s.Rows, s.Lag.Round(time.Second), s.Leases, s.Takeovers)
	}
	h, _, err := job.Health(ctx, reconcile.HealthPolicy{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Health: %s\n", h)

	var findings, repairable, review, commands, verified int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM reconcile_findings), (SELECT count(*) FROM reconcile_findings WHERE kind = 'missed_success'),
		(SELECT count(*) FROM reconcile_findings WHERE kind <> 'missed_success'), (SELECT count(*) FROM reconcile_outbox),
		(SELECT count(*) FROM payments p WHERE EXISTS (SELECT 1 FROM reconcile_observations o WHERE o.job = $1 AND o.record_id = p.id::text))`,
		job.Job()).Scan(&findings, &repairable, &review, &commands, &verified); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nFindings: %d missed_success (planted %d), %d for review (planted %d); repair commands queued: %d\n",
		repairable, fx.repairable, review, fx.review, commands)
	fmt.Fprintf(out, "Rows verified at least once: %d of %d\n", verified, opts.Rows)
	if repairable != fx.repairable || review != fx.review || commands != fx.repairable {
		problems = append(problems, "the findings or commands differ from what was planted")
	}
	if verified != int64(opts.Rows) {
		problems = append(problems, fmt.Sprintf("%d rows were never verified", int64(opts.Rows)-verified))
	}
	calls := fx.stripe.Log()
	var first, last time.Time
	for i, c := range calls {
		if i == 0 {
			first = c.Time
		}
		last = c.Time
	}
	perSecond := 0.0
	if d := last.Sub(first).Seconds(); d > 0 {
		perSecond = float64(len(calls)) / d
	}
	b, err := budget(pool)
	if err != nil {
		return err
	}
	state, err := b.State(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Stripe calls: %d (%.1f per second over the run; the shared budget granted %d at %v/s)\n",
		len(calls), perSecond, state.Granted, opts.Rate)
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	fmt.Fprintln(out, "\nEvery row was verified and every planted difference found once, by ticks River spread over the processes.")
	return nil
}

// workerProc is a running worker process.
type workerProc struct {
	cfg     workerConfig
	cmd     *exec.Cmd
	stdout  strings.Builder
	stderr  strings.Builder
	done    chan struct{}
	waitErr error
}

func startWorker(exe string, cfg workerConfig) (*workerProc, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	w := &workerProc{cfg: cfg, done: make(chan struct{})}
	w.cmd = exec.Command(exe, "-worker")
	w.cmd.Env = append(os.Environ(), workerEnv+"="+string(raw))
	w.cmd.Stdout, w.cmd.Stderr = &w.stdout, &w.stderr
	dieWithParent(w.cmd) // a parent that dies without stopping them (SIGKILL) takes them along
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
	}
	go func() {
		w.waitErr = w.cmd.Wait()
		close(w.done)
	}()
	return w, nil
}

func (w *workerProc) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

func (w *workerProc) err() error {
	<-w.done
	return w.waitErr
}

// stop asks the worker to stop and waits for it.
func (w *workerProc) stop(ctx context.Context) error {
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-ctx.Done():
		w.kill()
		return fmt.Errorf("%s did not stop: %w", w.cfg.ID, ctx.Err())
	}
	if w.waitErr != nil {
		return fmt.Errorf("%s: %v\n%s", w.cfg.ID, w.waitErr, w.stderr.String())
	}
	return nil
}

func (w *workerProc) kill() {
	if !w.exited() {
		_ = w.cmd.Process.Kill()
		<-w.done
	}
}

// summary reads the report the worker printed as its last line.
func (w *workerProc) summary() workerSummary {
	var s workerSummary
	lines := strings.Split(strings.TrimSpace(w.stdout.String()), "\n")
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &s)
	sort.Ints(s.Shards)
	return s
}
