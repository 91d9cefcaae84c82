package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
)

// engineOptions configures one engine run.
type engineOptions struct {
	// Rows is the number of payments rows loaded.
	Rows int
	// Batch is the engine's BatchSize.
	Batch int
	// Progress receives a line every ~10% of the cycle; nil means none.
	Progress io.Writer
	// NoAnalyze skips ANALYZE of the loaded table (the reference does not analyze).
	NoAnalyze bool
	// CPUProfile, if set, receives a CPU profile of the timed cycle only.
	CPUProfile io.Writer
}

// engineResult is the engine subcommand's JSON line.
type engineResult struct {
	Rows         int     `json:"rows"`
	Batch        int     `json:"batch"`
	Seconds      float64 `json:"seconds"`
	RowsPerS     float64 `json:"rows_per_s"`
	Findings     int64   `json:"findings"`
	Commands     int64   `json:"commands"`
	GatewayCalls int64   `json:"gateway_calls"`
	// Batches counts RunBatch calls, the final empty one that wraps the cycle included.
	Batches     int            `json:"batches"`
	PeakRSSMB   float64        `json:"peak_rss_mb"`
	LoadSeconds float64        `json:"load_seconds"`
	Verdicts    map[string]int `json:"verdicts"`
	GoVersion   string         `json:"go_version"`
	GOMAXPROCS  int            `json:"gomaxprocs"`
	Server      string         `json:"server_version"`
	Schema      string         `json:"schema"`
}

// engineCommand is the engine subcommand: it recreates its schema, runs runEngine in it and
// prints the result as its last stdout line.
func engineCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("engine", flag.ContinueOnError)
	rows := fs.Int("rows", 100000, "payments rows to load and reconcile")
	batch := fs.Int("batch", reconcile.DefaultBatchSize, "engine batch size")
	schema := fs.String("schema", "bench_engine", "schema to drop, recreate and work in")
	keep := fs.Bool("keep", false, "keep the schema after the run (it is always dropped and recreated at start)")
	analyze := fs.Bool("analyze", true, "ANALYZE the payments table after loading, before the timed cycle")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed cycle to this file")
	if err := parseFlags(fs, args, stderr,
		"usage: go run ./internal/bench engine [flags]",
		"Loads a seed-shaped payments table with COPY and times one full reconcile cycle over it",
		"with pgstore and a zero-latency in-process gateway. Database: $DATABASE_URL.",
	); err != nil {
		return err
	}
	if *rows <= 0 || *batch <= 0 {
		return fmt.Errorf("bench: engine: -rows and -batch must be positive")
	}

	pool, drop, err := benchSchema(ctx, *schema, stderr)
	if err != nil {
		return err
	}
	defer pool.Close()
	if !*keep {
		defer drop()
	}

	opts := engineOptions{Rows: *rows, Batch: *batch, Progress: stderr, NoAnalyze: !*analyze}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer f.Close()
		opts.CPUProfile = f
	}
	res, err := runEngine(ctx, pool, *schema, opts)
	if err != nil {
		return err
	}
	line, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\n", line)

	wantF, wantC := expected(*rows)
	if res.Findings != wantF || res.Commands != wantC || res.GatewayCalls != int64(*rows) {
		return fmt.Errorf("bench: engine: wrong results: findings=%d commands=%d gateway_calls=%d, want %d, %d, %d",
			res.Findings, res.Commands, res.GatewayCalls, wantF, wantC, *rows)
	}
	return nil
}

// runEngine loads opts.Rows payments rows into schema (which must exist and hold no payments
// table nor reconciler tables), migrates the reconciler's tables there, and times one full
// cycle: RunBatch until the cycle wraps. Only the cycle is timed and profiled.
func runEngine(ctx context.Context, pool *pgxpool.Pool, schema string, opts engineOptions) (engineResult, error) {
	res := engineResult{Rows: opts.Rows, Batch: opts.Batch, Schema: schema, GoVersion: runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), Verdicts: map[string]int{}}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&res.Server); err != nil {
		return res, fmt.Errorf("bench: %w", err)
	}

	tables := pgstore.Tables{Prefix: "reconcile_", Schema: schema}
	if err := pgstore.Migrate(ctx, pool, tables); err != nil {
		return res, err
	}
	loadStart := time.Now()
	if err := loadPayments(ctx, pool, schema, opts.Rows, !opts.NoAnalyze); err != nil {
		return res, err
	}
	res.LoadSeconds = round(time.Since(loadStart).Seconds(), 3)
	fmt.Fprintf(progress, "engine: loaded %d rows in %.2fs; reconciling with batch %d\n", opts.Rows, res.LoadSeconds, opts.Batch)

	store, err := pgstore.New(pool, pgstore.Config{
		Table:            paymentsTable,
		Schema:           schema,
		KeyColumns:       []string{"id"},
		ExternalIDColumn: "stripe_payment_intent_id",
		StateColumn:      "status",
		Tables:           tables,
	})
	if err != nil {
		return res, err
	}
	// Reading the catalog and building the statements happens once per store, not per batch.
	if err := store.Check(ctx); err != nil {
		return res, err
	}
	gw := &mixGateway{}
	rec, err := reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{
		Job:           "bench",
		Source:        store,
		Sink:          store,
		Gateway:       gw.gateway(),
		Classifier:    stripeadapter.PaymentIntentClassifier(),
		BatchSize:     opts.Batch,
		ExternalState: stripeadapter.PaymentIntentState,
	})
	if err != nil {
		return res, err
	}

	if opts.CPUProfile != nil {
		if err := pprof.StartCPUProfile(opts.CPUProfile); err != nil {
			return res, fmt.Errorf("bench: %w", err)
		}
	}
	scanned, nextTenth, reportCalls := 0, 1, 0
	start := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			pprof.StopCPUProfile()
			return res, err
		}
		rep, err := rec.RunBatch(ctx)
		res.Batches++
		if err != nil {
			pprof.StopCPUProfile()
			return res, err
		}
		scanned += rep.Scanned
		reportCalls += rep.GatewayCalls
		for v, n := range rep.Verdicts {
			res.Verdicts[v.String()] += n
		}
		for nextTenth <= 10 && scanned*10 >= opts.Rows*nextTenth {
			el := time.Since(start).Seconds()
			fmt.Fprintf(progress, "engine: %3d%% %d/%d rows, %d batches, %.2fs, %.0f rows/s\n",
				nextTenth*10, scanned, opts.Rows, res.Batches, el, float64(scanned)/el)
			nextTenth++
		}
		if rep.Wrapped {
			break
		}
	}
	elapsed := time.Since(start)
	pprof.StopCPUProfile()

	res.Seconds = round(elapsed.Seconds(), 3)
	res.RowsPerS = math.Round(float64(scanned) / elapsed.Seconds())
	res.GatewayCalls = gw.calls.Load()
	if scanned != opts.Rows {
		return res, fmt.Errorf("bench: the cycle scanned %d rows of %d", scanned, opts.Rows)
	}
	if int64(reportCalls) != res.GatewayCalls {
		return res, fmt.Errorf("bench: reports count %d gateway calls, the gateway %d", reportCalls, res.GatewayCalls)
	}
	if res.Findings, res.Commands, err = countFindings(ctx, pool, tables); err != nil {
		return res, err
	}
	res.PeakRSSMB = round(peakRSSMB(), 1)
	return res, nil
}

func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}
