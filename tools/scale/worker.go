package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"
	"golang.org/x/time/rate"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgbudget"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// workerEnv carries a worker's configuration, as JSON, to a worker process.
const workerEnv = "RECONCILE_SCALE_WORKER"

// WorkerConfig is what a worker process is told.
type WorkerConfig struct {
	Owner       string
	DatabaseURL string
	Schema      string
	StripeURL   string
	StripeKey   string
	Shards      int
	Batch       int
	Concurrency int
	// Rate, Burst and MaxLate configure the budget shared by all workers.
	Rate    float64
	Burst   int
	MaxLate time.Duration
	Lease   time.Duration
	// Cycles: the worker stops once the job has completed this many cycles.
	Cycles int64
	// PerObject hides the gateway's bulk ability: one retrieve per row.
	PerObject bool
	// HangOnFetch, if positive, makes the worker hang inside its HangOnFetch-th bulk fetch,
	// after the fetch's calls were made and before the batch commits, until it is killed; it
	// says so in the hangs table first.
	HangOnFetch int
}

// WorkerReport is what a worker prints as its last stdout line.
type WorkerReport struct {
	Owner       string `json:"owner"`
	Ticks       int    `json:"ticks"`
	Batches     int    `json:"batches"`
	Scanned     int    `json:"scanned"`
	Calls       int    `json:"calls"`
	TookOver    int    `json:"took_over"`
	LeasesLost  int    `json:"leases_lost"`
	Errors      int    `json:"errors"`
	ShardsRun   []int  `json:"shards_run"`
	NoShardFree int    `json:"no_shard_free"`
	// Sends are the times (Unix nanoseconds) at which the worker sent its requests to Stripe,
	// read just before each went to the HTTP transport. Run takes them out of the report.
	Sends []int64 `json:"sends,omitempty"`
}

// MaybeRunWorker runs a worker and exits the process if this process was started as one by
// Run; otherwise it returns at once. Call it first thing in main or TestMain.
func MaybeRunWorker() {
	raw := os.Getenv(workerEnv)
	if raw == "" {
		return
	}
	var cfg WorkerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "scale worker: bad configuration:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	rep, err := RunWorker(ctx, cfg, os.Stderr)
	stop()
	line, _ := json.Marshal(rep)
	fmt.Println(string(line))
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale worker "+cfg.Owner+":", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// RunWorker works on the job until it has completed cfg.Cycles cycles (or ctx is done).
func RunWorker(ctx context.Context, cfg WorkerConfig, log io.Writer) (WorkerReport, error) {
	rep := WorkerReport{Owner: cfg.Owner}
	pcfg, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return rep, err
	}
	// A batch's read and commit, the lease renewer, the budget's grants (one per call in
	// flight) and the cycle watcher.
	pcfg.MaxConns = int32(cfg.Concurrency + 4)
	pcfg.ConnConfig.RuntimeParams["search_path"] = cfg.Schema
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return rep, err
	}
	defer pool.Close()
	store, err := pgstore.New(pool, pgstore.Config{Table: "payments", ExternalIDColumn: "stripe_payment_intent_id"})
	if err != nil {
		return rep, err
	}
	job, err := pgshard.NewJob(store, pgshard.Config{Job: Job, Shards: cfg.Shards, Owner: cfg.Owner, Lease: cfg.Lease})
	if err != nil {
		return rep, err
	}
	budget, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_scale", Rate: rate.Limit(cfg.Rate), Burst: cfg.Burst, MaxLate: cfg.MaxLate})
	if err != nil {
		return rep, err
	}
	sends := &sendClock{base: &http.Transport{MaxIdleConnsPerHost: cfg.Concurrency + 2}}
	hc := &http.Client{Transport: sends}
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: cfg.StripeKey, BaseURL: cfg.StripeURL, HTTPClient: hc}, stripeadapter.PaymentIntents())
	if err != nil {
		return rep, err
	}
	var gateway reconcile.Gateway[*stripe.PaymentIntent] = gw
	switch {
	case cfg.PerObject && cfg.HangOnFetch > 0:
		return rep, errors.New("scale: HangOnFetch needs the bulk gateway")
	case cfg.PerObject:
		gateway = reconcile.PerObject[*stripe.PaymentIntent](gw)
	case cfg.HangOnFetch > 0:
		gateway = &hangingGateway{ObjectGateway: gw, pool: pool, owner: cfg.Owner, at: cfg.HangOnFetch}
	}
	engine := reconcile.Config[string, *stripe.PaymentIntent]{
		Gateway: gateway, Classifier: stripepolicy.PaymentIntentPolicy(), ExternalState: stripepolicy.PaymentIntentState,
		BatchSize: cfg.Batch, Concurrency: cfg.Concurrency, Limiter: budget,
	}

	// Stop as soon as the job has completed its cycles, also in the middle of a batch (which
	// then writes nothing), so that a run does no work past the cycles it measures.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		for {
			var cycles int64
			err := pool.QueryRow(ctx, `SELECT cycles_completed FROM reconcile_cursors WHERE job = $1`, Job).Scan(&cycles)
			if err == nil && cycles >= cfg.Cycles {
				return
			}
			if err != nil && !errors.Is(err, pgx.ErrNoRows) && ctx.Err() == nil {
				fmt.Fprintln(log, "scale worker "+cfg.Owner+": reading the cycle count:", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	defer func() { <-done }()

	err = work(ctx, &rep, log, func(ctx context.Context) (pgshard.Tick, error) {
		return pgshard.RunShard(ctx, job, engine, reconcile.TickBudget{})
	})
	rep.Sends = sends.times()
	return rep, err
}

// work runs ticks until ctx is done, and counts what they did in rep.
func work(ctx context.Context, rep *WorkerReport, log io.Writer, tick func(context.Context) (pgshard.Tick, error)) error {
	for ctx.Err() == nil {
		t, err := tick(ctx)
		// Count a tick that leased a shard first, whatever its end: the tick that takes the
		// killed worker's shard over usually completes the job's cycle, and this worker's
		// watcher may cancel ctx (the cycles are done) before the tick returns; its claim of
		// the expired lease is in the database all the same (reconcile_shards.takeovers).
		if t.Leased {
			rep.Ticks++
			rep.Batches += t.Tick.Batches
			rep.Scanned += t.Tick.Scanned
			rep.Calls += t.Tick.GatewayCalls
			rep.ShardsRun = append(rep.ShardsRun, t.Shard)
			if t.TookOver {
				rep.TookOver++
			}
			if t.LeaseLost {
				rep.LeasesLost++
			}
		}
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			rep.Errors++
			fmt.Fprintln(log, "scale worker "+rep.Owner+":", err)
			if rep.Errors > 20 {
				return fmt.Errorf("scale worker %s: too many failed ticks: %w", rep.Owner, err)
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if !t.Leased {
			rep.NoShardFree++
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// sendClock notes when each request is sent: the time nearest to the budget's grant that the
// worker can read, after its wait for the grant and before the request's way to Stripe.
type sendClock struct {
	base http.RoundTripper
	mu   sync.Mutex
	at   []int64
}

// RoundTrip implements http.RoundTripper.
func (c *sendClock) RoundTrip(req *http.Request) (*http.Response, error) {
	now := time.Now().UnixNano()
	c.mu.Lock()
	c.at = append(c.at, now)
	c.mu.Unlock()
	return c.base.RoundTrip(req)
}

func (c *sendClock) times() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.at)
}

// hangingGateway hangs, as a worker stuck mid-batch would, inside its at-th bulk fetch: after
// the fetch's calls, before the batch can commit. It says so in the hangs table first.
type hangingGateway struct {
	*stripeadapter.ObjectGateway[*stripe.PaymentIntent]
	pool  *pgxpool.Pool
	owner string
	at, n int
}

// FetchBatch implements reconcile.BatchGateway.
func (g *hangingGateway) FetchBatch(ctx context.Context, lookups []reconcile.Lookup, wait func(context.Context) error) (map[string]*stripe.PaymentIntent, error) {
	found, err := g.ObjectGateway.FetchBatch(ctx, lookups, wait)
	g.hang(ctx)
	return found, err
}

// FetchBatchSince implements reconcile.DatedBatchGateway, which the engine calls instead of
// FetchBatch.
func (g *hangingGateway) FetchBatchSince(ctx context.Context, lookups []reconcile.Lookup, since time.Time,
	wait func(context.Context) error) (map[string]reconcile.Answer[*stripe.PaymentIntent], error) {
	found, err := g.ObjectGateway.FetchBatchSince(ctx, lookups, since, wait)
	g.hang(ctx)
	return found, err
}

// hang hangs in the at-th bulk fetch, after saying so in the hangs table.
func (g *hangingGateway) hang(ctx context.Context) {
	if g.n++; g.n == g.at {
		if _, err := g.pool.Exec(context.WithoutCancel(ctx), `INSERT INTO hangs (owner) VALUES ($1)`, g.owner); err != nil {
			fmt.Fprintln(os.Stderr, "scale worker "+g.owner+": recording the hang:", err)
		}
		select {} // until killed
	}
}
