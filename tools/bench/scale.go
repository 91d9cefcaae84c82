package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
	"github.com/reconcilekit/reconcile/tools/scale"
)

// A process the scale subcommand starts as a worker runs the worker and exits here, before
// main: the scale subcommand re-executes this binary.
func init() { scale.MaybeRunWorker() }

// scaleRun is one worker count's figures in the scale subcommand's JSON.
type scaleRun struct {
	Workers           int     `json:"workers"`
	RowsPerS          float64 `json:"rows_per_s"`
	Seconds           float64 `json:"seconds"`
	APICalls          int     `json:"api_calls"`
	CallsPerS         float64 `json:"calls_per_s"`
	MaxGrants1s       int     `json:"max_grants_1s"`
	MaxSends1s        int     `json:"max_sends_1s"`
	MaxCalls1s        int     `json:"max_calls_1s"`
	MaxCallsAligned1s int     `json:"max_calls_aligned_1s"`
	// BudgetBinds reports that the calls came within a tenth of the budget's rate: the budget,
	// not the workers, set the pace.
	BudgetBinds bool `json:"budget_binds"`
}

// scaleResult is the scale subcommand's JSON line.
type scaleResult struct {
	Rows        int     `json:"rows"`
	LatencyMS   float64 `json:"latency_ms"`
	Mode        string  `json:"mode"`
	Batch       int     `json:"batch"`
	Shards      int     `json:"shards"`
	Concurrency int     `json:"concurrency"`
	Budget      struct {
		Rate  float64 `json:"rate"`
		Burst int     `json:"burst"`
		// Bound is what the budget may grant in no one-second window (see scale.Result).
		Bound float64 `json:"bound"`
	} `json:"budget"`
	Runs      []scaleRun `json:"runs"`
	GoVersion string     `json:"go_version"`
	CPUs      int        `json:"cpus"`
}

// scaleCommand is the scale subcommand: it loads one table and fake Stripe, then for each
// worker count runs one full cycle of a sharded job with that many worker processes sharing one
// rate budget, and prints the throughput of each.
func scaleCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	rows := fs.Int("rows", 200000, "payments rows (and PaymentIntents) to load")
	workers := fs.String("workers", "1,2,4", "comma-separated worker process counts, one run each")
	latency := fs.Duration("latency", 5*time.Millisecond, "latency stripetest adds to every request")
	rate := fs.Float64("rate", 100, "the shared budget in calls per second, of all workers together (Stripe's live-mode limit is 100)")
	burst := fs.Int("burst", 10, "the shared budget's burst")
	shards := fs.Int("shards", 0, "shards of the job; 0 means twice the largest worker count")
	batch := fs.Int("batch", 1000, "engine batch size")
	conc := fs.Int("concurrency", 4, "gateway calls in flight per worker (per-object mode)")
	mode := fs.String("mode", "bulk", `"bulk": the gateway lists in pages of 100; "per-object": one retrieve per row`)
	schema := fs.String("schema", "bench_scale", "schema to drop, recreate and work in")
	if err := parseFlags(fs, args, stderr,
		"usage: go run ./tools/bench scale [flags]",
		"One full cycle of a sharded job per worker count, each worker a process of its own (this",
		"binary, re-executed), all drawing from one rate budget kept in PostgreSQL, against an",
		"in-process stripetest over HTTP. Checks every row verified once; prints rows/s per count.",
	); err != nil {
		return err
	}
	var counts []int
	for _, f := range strings.Split(*workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("bench: scale: -workers %q: %q is not a positive number", *workers, f)
		}
		counts = append(counts, n)
	}
	switch {
	case *rows <= 0 || *batch <= 0 || *conc <= 0 || *rate <= 0 || *burst <= 0 || *shards < 0:
		return fmt.Errorf("bench: scale: -rows, -batch, -concurrency, -rate and -burst must be positive")
	case *mode != "bulk" && *mode != "per-object":
		return fmt.Errorf("bench: scale: -mode must be bulk or per-object, not %q", *mode)
	}
	pool, drop, err := benchSchema(ctx, *schema, stderr)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer drop()
	dbURL, _ := pgenv.URL("DATABASE_URL")
	res, err := runScale(ctx, pool, dbURL, *schema, scaleOptions{Rows: *rows, Workers: counts, Latency: *latency, Rate: *rate,
		Burst: *burst, Shards: *shards, Batch: *batch, Concurrency: *conc, PerObject: *mode == "per-object", Progress: stderr})
	if err != nil {
		return err
	}
	return emit(stdout, res)
}

// scaleOptions configures runScale.
type scaleOptions struct {
	Rows        int
	Workers     []int
	Latency     time.Duration
	Rate        float64
	Burst       int
	Shards      int // zero: twice the largest worker count
	Batch       int
	Concurrency int
	PerObject   bool
	Progress    io.Writer
}

// runScale loads opts.Rows rows into schema (which must exist and be empty), then runs one
// cycle per worker count and returns the figures.
func runScale(ctx context.Context, pool *pgxpool.Pool, dbURL, schema string, opts scaleOptions) (scaleResult, error) {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	if opts.Shards == 0 {
		for _, n := range opts.Workers {
			opts.Shards = max(opts.Shards, 2*n)
		}
	}
	res := scaleResult{Rows: opts.Rows, LatencyMS: float64(opts.Latency.Microseconds()) / 1000, Mode: "bulk", Batch: opts.Batch,
		Shards: opts.Shards, Concurrency: opts.Concurrency, GoVersion: runtime.Version(), CPUs: runtime.NumCPU()}
	if opts.PerObject {
		res.Mode = "per-object"
	}
	res.Budget.Rate, res.Budget.Burst = opts.Rate, opts.Burst
	fmt.Fprintf(progress, "scale: loading %d rows and PaymentIntents\n", opts.Rows)
	fix, err := scale.Load(ctx, pool, dbURL, schema, opts.Rows)
	if err != nil {
		return res, err
	}
	defer fix.Close()
	for _, n := range opts.Workers {
		if err := fix.Reset(ctx); err != nil {
			return res, err
		}
		fmt.Fprintf(progress, "scale: %d worker(s), %d shards, budget %v/s burst %d: one cycle\n", n, opts.Shards, opts.Rate, opts.Burst)
		r, err := scale.Run(ctx, fix, scale.Options{Workers: n, Shards: opts.Shards, Batch: opts.Batch, Concurrency: opts.Concurrency,
			PerObject: opts.PerObject, Rate: opts.Rate, Burst: opts.Burst, Latency: opts.Latency, Log: progress})
		if err != nil {
			return res, fmt.Errorf("bench: scale: %d workers: %w", n, err)
		}
		res.Budget.Bound = r.GrantBound
		res.Runs = append(res.Runs, scaleRun{Workers: n, RowsPerS: r.RowsPerS, Seconds: r.Seconds, APICalls: r.APICalls,
			CallsPerS: r.CallsPerS, MaxGrants1s: r.MaxGrants1s, MaxSends1s: r.MaxSends1s, MaxCalls1s: r.MaxCalls1s, MaxCallsAligned1s: r.MaxCallsAligned1s,
			BudgetBinds: r.CallsPerS >= 0.9*opts.Rate})
		fmt.Fprintf(progress, "scale: %d worker(s): %.0f rows/s, %d calls (%.1f/s; at most %d granted, %d received in a second)\n",
			n, r.RowsPerS, r.APICalls, r.CallsPerS, r.MaxGrants1s, r.MaxCalls1s)
	}
	return res, nil
}
