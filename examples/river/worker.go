package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stripe/stripe-go/v82"
	"golang.org/x/time/rate"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgbudget"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// workerEnv carries a worker process's configuration, as JSON.
const workerEnv = "RECONCILE_RIVER_WORKER"

// jobName is the sharded job's name.
const jobName = "payments-sweep"

// workerConfig is what a worker process is told.
type workerConfig struct {
	ID          string
	DatabaseURL string
	Schema      string
	StripeURL   string
	StripeKey   string
	Slots       int
	Shards      int
	Rate        float64
	Interval    time.Duration
}

// workerSummary is what a worker prints as its last line when it stops.
type workerSummary struct {
	Leased  int   `json:"leased"`
	Scanned int   `json:"scanned"`
	Calls   int   `json:"calls"`
	Shards  []int `json:"shards"`
}

// maybeWorker runs a worker process and exits, if this process was started as one.
func maybeWorker() {
	raw := os.Getenv(workerEnv)
	if raw == "" {
		return
	}
	var cfg workerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker: bad configuration:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	sum, err := runWorker(ctx, cfg)
	line, _ := json.Marshal(sum)
	fmt.Println(string(line))
	if err != nil {
		fmt.Fprintln(os.Stderr, cfg.ID+":", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// ShardTickArgs is the River job that runs one tick of the sharded job. Slot only tells the
// periodic jobs apart, so that -shards of them can wait or run at once; the tick works on
// whichever shard is free.
type ShardTickArgs struct {
	Slot int `json:"slot"`
}

// Kind is the job's name in River.
func (ShardTickArgs) Kind() string { return "reconcile_shard_tick" }

// InsertOpts keeps at most one job per slot waiting or running: a periodic insert while the
// slot's last tick still runs is skipped rather than queued behind it.
func (ShardTickArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		MaxAttempts: 5,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateRetryable, rivertype.JobStateScheduled,
		}},
	}
}

// tickBudget bounds one tick, well within River's job timeout, so that shards change hands
// between ticks and a stopping worker finishes soon.
var tickBudget = reconcile.TickBudget{MaxTime: 5 * time.Second}

// tickTimeout is River's job timeout for a tick: its budget and a margin for the batch under way.
var tickTimeout = tickBudget.MaxTime + 30*time.Second

// rescueAfter is how long River lets a tick stay running before its rescuer deems it stuck and
// makes it available again: just over tickTimeout (River requires at least that), since a live
// worker's tick is cancelled by then. A tick still running later was a dead worker's (SIGKILL,
// a crash, a lost host), and until it is rescued its unique job keeps its slot from being
// scheduled again; River's default, an hour, would keep the slot idle that long. (The dead
// worker's shard does not wait for this: its lease expires and any other tick takes it over.)
var rescueAfter = tickTimeout + 10*time.Second

// stopTimeout bounds a graceful stop: running ticks may finish. Past it they are cancelled.
const stopTimeout = time.Minute

// shardTickWorker works ShardTickArgs jobs: one pgshard.RunShard each.
type shardTickWorker struct {
	river.WorkerDefaults[ShardTickArgs]
	job    *pgshard.Job[string]
	engine reconcile.Config[string, *stripe.PaymentIntent]

	mu  sync.Mutex
	sum workerSummary
}

// Work runs one tick and acts on what follows it (Tick.After). A failed tick is retried by
// River with backoff; a tick the external system or the budget pushed back on, or one that
// found the job's next cycle not yet due (pgshard.Config.MinCycleInterval), is snoozed for the
// wait asked, without spending an attempt.
func (w *shardTickWorker) Work(ctx context.Context, j *river.Job[ShardTickArgs]) error {
	t, err := pgshard.RunShard(ctx, w.job, w.engine, tickBudget)
	if err != nil {
		return err
	}
	if t.Leased {
		w.mu.Lock()
		w.sum.Leased++
		w.sum.Scanned += t.Tick.Scanned
		w.sum.Calls += t.Tick.GatewayCalls
		w.sum.Shards = append(w.sum.Shards, t.Shard)
		w.mu.Unlock()
	}
	switch t.Tick.After {
	case reconcile.AfterRateLimit, reconcile.AfterDeferred, reconcile.AfterOutage:
		return river.JobSnooze(max(t.Tick.RetryAfter, time.Second))
	case reconcile.AfterIdle:
		if t.Tick.RetryAfter > 0 { // the next cycle is not due yet
			return river.JobSnooze(t.Tick.RetryAfter)
		}
		// No shard free: other workers hold them all, and the next periodic job tries again.
	}
	return nil
}

// Timeout bounds a tick in River: tickTimeout.
func (w *shardTickWorker) Timeout(*river.Job[ShardTickArgs]) time.Duration {
	return tickTimeout
}

// runWorker runs a River client until ctx is done, then stops it gracefully: running ticks
// may finish, within stopTimeout; past it they are cancelled (a cancelled batch writes nothing).

func runWorker(ctx context.Context, cfg workerConfig) (workerSummary, error) {
	pcfg, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return workerSummary{}, err
	}
	// River's own needs (its listener, producer, elector and maintenance) and, per tick, a
	// batch's read and commit, the lease renewer and the budget's grants.
	pcfg.MaxConns = int32(8 + 4*cfg.Slots)
	pcfg.ConnConfig.RuntimeParams["search_path"] = cfg.Schema
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return workerSummary{}, err
	}
	defer pool.Close()

	job, err := jobFor(pool, cfg.Shards, cfg.ID)
	if err != nil {
		return workerSummary{}, err
	}
	limiter, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_demo", Rate: rate.Limit(cfg.Rate), Burst: 5})
	if err != nil {
		return workerSummary{}, err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * cfg.Slots}}
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: cfg.StripeKey, BaseURL: cfg.StripeURL, HTTPClient: hc}, stripeadapter.PaymentIntents())
	if err != nil {
		return workerSummary{}, err
	}
	w := &shardTickWorker{job: job, engine: reconcile.Config[string, *stripe.PaymentIntent]{
		Gateway: gw, Classifier: stripepolicy.PaymentIntentPolicy(), ExternalState: stripepolicy.PaymentIntentState,
		BatchSize: 500, Concurrency: 2, Limiter: limiter,
	}}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, w); err != nil {
		return workerSummary{}, err
	}
	periodic := make([]*river.PeriodicJob, cfg.Shards)
	for i := range periodic {
		periodic[i] = river.NewPeriodicJob(river.PeriodicInterval(cfg.Interval),
			func() (river.JobArgs, *river.InsertOpts) { return ShardTickArgs{Slot: i}, nil },
			&river.PeriodicJobOpts{ID: fmt.Sprintf("reconcile_shard_tick_%d", i), RunOnStart: true})
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		ID:           cfg.ID,
		Schema:       cfg.Schema,
		Queues:       map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Slots}},
		Workers:      workers,
		PeriodicJobs: periodic,
		// The client's default timeout too, so that rescueAfter is checked against it.
		JobTimeout:           tickTimeout,
		RescueStuckJobsAfter: rescueAfter,
		Logger:               slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return workerSummary{}, err
	}
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return workerSummary{}, err
	}
	<-ctx.Done()
	err = stopClient(client, stopTimeout)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sum, err
}

// stopClient stops c gracefully, letting running jobs finish within patience; if they do not,
// it cancels them (StopAndCancel) rather than leave them running, still holding their slots,
// while the process exits.
func stopClient(c interface {
	Stop(context.Context) error
	StopAndCancel(context.Context) error
}, patience time.Duration) error {
	sctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	err := c.Stop(sctx)
	if err == nil {
		return nil
	}
	hctx, hcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer hcancel()
	if herr := c.StopAndCancel(hctx); herr != nil {
		return fmt.Errorf("stop river: %w; then cancelling the running ticks: %w", err, herr)
	}
	fmt.Fprintf(os.Stderr, "river worker: graceful stop failed (%v); running ticks cancelled, nothing of them written\n", err)
	return nil
}

// jobFor returns the sharded job over the demo's payments table, for the worker owner.
func jobFor(pool *pgxpool.Pool, shards int, owner string) (*pgshard.Job[string], error) {
	store, err := pgstore.New(pool, pgstore.Config{Table: "payments", ExternalIDColumn: "stripe_payment_intent_id"})
	if err != nil {
		return nil, err
	}
	return pgshard.NewJob(store, pgshard.Config{Job: jobName, Shards: shards, Owner: owner, Lease: 10 * time.Second})
}

// budget returns the shared rate budget, to read its state.
func budget(pool *pgxpool.Pool) (*pgbudget.Budget, error) {
	return pgbudget.New(pool, pgbudget.Config{Key: "acct_demo"})
}
