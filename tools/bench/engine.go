package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
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
	// CPUProfile, if set, receives a CPU profile of the first one-column cycle only.
	CPUProfile io.Writer
	// MemProfile, if set, receives the allocation profile ("allocs") taken right after the
	// first one-column cycle. It counts every allocation since the program started, the load's
	// included: pprof -focus=RunBatch keeps the cycle's.
	MemProfile io.Writer
	// Typed also times a cycle over the same rows read as a typed row of four columns.
	Typed bool
	// Rounds is how many times each cycle is timed, the best counting; zero means one.
	Rounds int
	// Floor also times the SQL floor (floor.go) over the same rows, each round.
	Floor bool
	// FloorRanges also times the floor's ranges variant (floorRanges) over the same rows, each
	// round.
	FloorRanges bool
	// Cycles is how many cycles the one-column engine and the floor run in a row over the same
	// tables, each round; zero means one. From the second on, every verified row's observation
	// is an update, as in a job's steady state, not an insert.
	Cycles int
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
	// GCs and AllocMB are the garbage collections and the MB allocated during that cycle, the
	// whole process's (the Go side of the engine, the zero-latency gateway's answers included).
	GCs        uint32  `json:"gcs"`
	AllocMB    float64 `json:"alloc_mb"`
	GoVersion  string  `json:"go_version"`
	GOMAXPROCS int     `json:"gomaxprocs"`
	Server     string  `json:"server_version"`
	Schema     string  `json:"schema"`
	// TypedRowsPerS is the rows/s of the cycle over the typed row (-typed), and TypedRatio
	// that over RowsPerS, the one-column row's in the same run.
	TypedRowsPerS float64 `json:"typed_rows_per_sec,omitempty"`
	TypedRatio    float64 `json:"typed_ratio,omitempty"`
	// SQLFloorRowsPerS is the rows/s of the same cycle's database work as the plainest SQL by
	// hand (-floor, floor.go), and FloorRatio RowsPerS over it.
	SQLFloorRowsPerS float64 `json:"sql_floor_rows_per_s,omitempty"`
	FloorRatio       float64 `json:"floor_ratio,omitempty"`
	// SQLFloorRangesRowsPerS is the rows/s of the floor's ranges variant (-floor-ranges): the
	// floor with a batch's in-sync rows recorded as one row of their key range, not an
	// observation each.
	SQLFloorRangesRowsPerS float64 `json:"sql_floor_ranges_rows_per_s,omitempty"`
	// SecondCycleRowsPerS is the rows/s of the one-column row's second cycle over the same
	// tables (-cycles 2), and SQLFloorSecondCycleRowsPerS the floor's: the steady state's
	// figures, where the observations are updated. The best round's each.
	SecondCycleRowsPerS         float64 `json:"second_cycle_rows_per_s,omitempty"`
	SQLFloorSecondCycleRowsPerS float64 `json:"sql_floor_second_cycle_rows_per_s,omitempty"`
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
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the first one-column cycle to this file")
	memProfile := fs.String("memprofile", "", "write the allocation profile, taken after the first one-column cycle, to this file (see pprof -sample_index=alloc_space, -focus=RunBatch)")
	typed := fs.Bool("typed", true, "also time a cycle over the same rows read as a typed row of four columns (typed_rows_per_sec, typed_ratio)")
	rounds := fs.Int("rounds", 3, "time each cycle this many times, in turns, and report the best of each")
	floor := fs.Bool("floor", true, "also time the same database work as the plainest SQL by hand, without the engine (sql_floor_rows_per_s, floor_ratio)")
	floorRanges := fs.Bool("floor-ranges", false, "also time the floor with each batch's in-sync rows recorded as one row of their key range instead of an observation each: the headroom of such a storage design, which is not built (sql_floor_ranges_rows_per_s)")
	cycles := fs.Int("cycles", 1, "cycles of the one-column engine and of the floor, one after the other over the same tables; 2 also times the steady state's second (second_cycle_rows_per_s, sql_floor_second_cycle_rows_per_s)")
	if err := parseFlags(fs, args, stderr,
		"usage: go run ./tools/bench engine [flags]",
		"Loads a seed-shaped payments table with COPY and times one full reconcile cycle over it",
		"with pgstore and a zero-latency in-process gateway, then (-typed) one over the same rows",
		"read as a typed row of four columns, and (-floor) the same database work as hand-written",
		"SQL without the engine; with -cycles 2, the engine and the floor each run a second cycle",
		"over the same tables right after the first, timed too (the steady state). Database: $DATABASE_URL.",
	); err != nil {
		return err
	}
	if *rows <= 0 || *batch <= 0 || *rounds <= 0 || *cycles <= 0 || *cycles > 2 {
		return fmt.Errorf("bench: engine: -rows, -batch and -rounds must be positive, -cycles 1 or 2")
	}

	pool, drop, err := benchSchema(ctx, *schema, stderr)
	if err != nil {
		return err
	}
	defer pool.Close()
	if !*keep {
		defer drop()
	}

	opts := engineOptions{Rows: *rows, Batch: *batch, Progress: stderr, NoAnalyze: !*analyze, Typed: *typed, Rounds: *rounds, Floor: *floor, FloorRanges: *floorRanges, Cycles: *cycles}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer f.Close()
		opts.CPUProfile = f
	}
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer f.Close()
		opts.MemProfile = f
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
// cycle: RunBatch until the cycle wraps, opts.Rounds times. Only the cycles are timed, and the
// first one profiled. With opts.Typed each round also times a cycle over the same rows read as a
// typed row of four columns, which must reach the same verdicts and findings.
func runEngine(ctx context.Context, pool *pgxpool.Pool, schema string, opts engineOptions) (engineResult, error) {
	res := engineResult{Rows: opts.Rows, Batch: opts.Batch, Schema: schema, GoVersion: runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0)}
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

	cfg := pgstore.Config{
		Table:            paymentsTable,
		Schema:           schema,
		KeyColumns:       []string{"id"},
		ExternalIDColumn: "stripe_payment_intent_id",
		StateColumn:      "status",
	}
	statuses := stripepolicy.PaymentIntentPolicy()
	policy := reconcile.ClassifierFunc[typedPayment, *stripe.PaymentIntent](func(p typedPayment, pi *stripe.PaymentIntent) reconcile.Decision {
		return statuses.Classify(p.Status, pi)
	})
	// Each round times the one-column row and the typed row, in turns first, each cycle with
	// reconciler tables of its own; the best of each counts, so that a moment of load on a
	// shared machine does not decide the ratio.
	var one, typed, floor, floorRanges, oneSecond, floorSecond []cycle
	// timeFloor times a first cycle of the floor (or of its ranges variant) into fresh tables.
	timeFloor := func(label, prefix string, ranges bool) (cycle, pgstore.Tables, error) {
		ft := pgstore.Tables{Prefix: prefix, Schema: schema}
		cy, err := floorCycle(ctx, pool, schema, ft, opts.Batch, ranges)
		if err == nil {
			fmt.Fprintf(progress, "%s: %d rows, %d batches, %.2fs, %.0f rows/s\n", label, opts.Rows, cy.Batches, cy.Seconds, cy.RowsPerS)
		}
		return cy, ft, err
	}
	for r := range max(opts.Rounds, 1) {
		if opts.Floor {
			cy, ft, err := timeFloor("floor", fmt.Sprintf("floor_%d_", r), false)
			if err != nil {
				return res, err
			}
			floor = append(floor, cy)
			if opts.Cycles > 1 {
				cy, err := floorNextCycle(ctx, pool, schema, ft, opts.Batch)
				if err != nil {
					return res, err
				}
				fmt.Fprintf(progress, "floor, second cycle: %d rows, %d batches, %.2fs, %.0f rows/s\n", opts.Rows, cy.Batches, cy.Seconds, cy.RowsPerS)
				floorSecond = append(floorSecond, cy)
			}
		}
		if opts.FloorRanges {
			cy, _, err := timeFloor("floor, ranges", fmt.Sprintf("floor_ranges_%d_", r), true)
			if err != nil {
				return res, err
			}
			floorRanges = append(floorRanges, cy)
		}
		for v := range 2 {
			isTyped := (v+r)%2 == 1
			if isTyped && !opts.Typed {
				continue
			}
			c := cfg
			c.Tables = tables
			if r > 0 || isTyped {
				c.Tables = pgstore.Tables{Prefix: fmt.Sprintf("reconcile_%s%d_", map[bool]string{true: "typed_"}[isTyped], r), Schema: schema}
				if err := pgstore.Migrate(ctx, pool, c.Tables); err != nil {
					return res, err
				}
			}
			o := opts
			if r > 0 || isTyped {
				o.CPUProfile, o.MemProfile = nil, nil // the first one-column cycle is profiled
			}
			if isTyped {
				store, err := pgstore.NewOf[typedPayment](pool, c)
				if err != nil {
					return res, err
				}
				cy, err := timeCycle(ctx, pool, store, c.Tables, policy, func(p typedPayment) string { return p.Status }, o, "typed")
				if err != nil {
					return res, err
				}
				typed = append(typed, cy)
				continue
			}
			store, err := pgstore.New(pool, c)
			if err != nil {
				return res, err
			}
			cy, err := timeCycle(ctx, pool, store, c.Tables, statuses, nil, o, "engine")
			if err != nil {
				return res, err
			}
			one = append(one, cy)
			if opts.Cycles > 1 {
				o.CPUProfile, o.MemProfile = nil, nil
				cy, err := timeCycle(ctx, pool, store, c.Tables, statuses, nil, o, "engine, second cycle")
				if err != nil {
					return res, err
				}
				oneSecond = append(oneSecond, cy)
			}
		}
	}
	// A second cycle finds the same and opens nothing new: the tables' counts stay the first's.
	for _, c := range slices.Concat(one[1:], typed, floor, floorRanges, oneSecond, floorSecond) {
		if c.Findings != one[0].Findings || c.Commands != one[0].Commands || c.GatewayCalls != one[0].GatewayCalls || !maps.Equal(c.Verdicts, one[0].Verdicts) {
			return res, fmt.Errorf("bench: cycles disagree: %+v and %+v", c, one[0])
		}
	}
	best := slices.MaxFunc(one, func(a, b cycle) int { return cmp.Compare(a.RowsPerS, b.RowsPerS) })
	res.Seconds, res.RowsPerS, res.Batches, res.Verdicts = best.Seconds, best.RowsPerS, best.Batches, best.Verdicts
	res.GCs, res.AllocMB = best.GCs, best.AllocMB
	res.Findings, res.Commands, res.GatewayCalls = best.Findings, best.Commands, best.GatewayCalls
	if len(typed) > 0 {
		res.TypedRowsPerS = bestRate(typed)
		res.TypedRatio = round(res.TypedRowsPerS/res.RowsPerS, 3)
	}
	if len(floor) > 0 {
		res.SQLFloorRowsPerS = bestRate(floor)
		res.FloorRatio = round(res.RowsPerS/res.SQLFloorRowsPerS, 3)
	}
	if len(floorRanges) > 0 {
		res.SQLFloorRangesRowsPerS = bestRate(floorRanges)
	}
	if len(oneSecond) > 0 {
		res.SecondCycleRowsPerS = bestRate(oneSecond)
	}
	if len(floorSecond) > 0 {
		res.SQLFloorSecondCycleRowsPerS = bestRate(floorSecond)
	}
	res.PeakRSSMB = round(peakRSSMB(), 1)
	return res, nil
}

// typedPayment is the typed row the engine benchmark reads: four columns of three types, as a
// money row's status, amount, currency and change time would be. Only the status is judged.
type typedPayment struct {
	Status    string
	OrderID   string `db:"order_id"`
	Version   int64
	UpdatedAt time.Time `db:"updated_at"`
}

// bestRate is the highest rows/s of cs, which must not be empty.
func bestRate(cs []cycle) float64 {
	return slices.MaxFunc(cs, func(a, b cycle) int { return cmp.Compare(a.RowsPerS, b.RowsPerS) }).RowsPerS
}

// cycle is one timed cycle's figures.
type cycle struct {
	Seconds, RowsPerS                float64
	Batches                          int
	GCs                              uint32
	AllocMB                          float64
	Findings, Commands, GatewayCalls int64
	Verdicts                         map[string]int
}

// timeCycle times one full cycle of a job over store, judged by policy (local names the local
// state for findings; nil for a string), and counts what it found in tables. Only the cycle is
// timed and profiled.
func timeCycle[L any](ctx context.Context, pool *pgxpool.Pool, store *pgstore.Store[L], tables pgstore.Tables,
	policy reconcile.Classifier[L, *stripe.PaymentIntent], local func(L) string, opts engineOptions, label string) (cycle, error) {
	c := cycle{Verdicts: map[string]int{}}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	// Reading the catalog and building the statements happens once per store, not per batch.
	if err := store.Check(ctx); err != nil {
		return c, err
	}
	gw := &mixGateway{}
	rec, err := reconcile.New(reconcile.Config[L, *stripe.PaymentIntent]{
		Job:           "bench",
		Source:        store,
		Sink:          store,
		Gateway:       gw.gateway(),
		Classifier:    policy,
		BatchSize:     opts.Batch,
		LocalState:    local,
		ExternalState: stripepolicy.PaymentIntentState,
	})
	if err != nil {
		return c, err
	}

	if opts.CPUProfile != nil {
		if err := pprof.StartCPUProfile(opts.CPUProfile); err != nil {
			return c, fmt.Errorf("bench: %w", err)
		}
	}
	scanned, nextTenth, reportCalls := 0, 1, 0
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			pprof.StopCPUProfile()
			return c, err
		}
		rep, err := rec.RunBatch(ctx)
		c.Batches++
		if err != nil {
			pprof.StopCPUProfile()
			return c, err
		}
		scanned += rep.Scanned
		reportCalls += rep.GatewayCalls
		for v, n := range rep.Verdicts {
			c.Verdicts[v.String()] += n
		}
		for nextTenth <= 10 && scanned*10 >= opts.Rows*nextTenth {
			el := time.Since(start).Seconds()
			fmt.Fprintf(progress, "%s: %3d%% %d/%d rows, %d batches, %.2fs, %.0f rows/s\n",
				label, nextTenth*10, scanned, opts.Rows, c.Batches, el, float64(scanned)/el)
			nextTenth++
		}
		if rep.Wrapped {
			break
		}
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	pprof.StopCPUProfile()
	c.GCs, c.AllocMB = after.NumGC-before.NumGC, round(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), 1)
	if opts.MemProfile != nil {
		if err := pprof.Lookup("allocs").WriteTo(opts.MemProfile, 0); err != nil {
			return c, fmt.Errorf("bench: %w", err)
		}
	}

	c.Seconds = round(elapsed.Seconds(), 3)
	c.RowsPerS = math.Round(float64(scanned) / elapsed.Seconds())
	c.GatewayCalls = gw.calls.Load()
	if scanned != opts.Rows {
		return c, fmt.Errorf("bench: the %s cycle scanned %d rows of %d", label, scanned, opts.Rows)
	}
	if int64(reportCalls) != c.GatewayCalls {
		return c, fmt.Errorf("bench: reports count %d gateway calls, the gateway %d", reportCalls, c.GatewayCalls)
	}
	if c.Findings, c.Commands, err = countFindings(ctx, pool, tables); err != nil {
		return c, err
	}
	return c, nil
}

func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}
