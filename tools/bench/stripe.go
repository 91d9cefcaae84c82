package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// stripeOptions configures one stripe benchmark run.
type stripeOptions struct {
	Rows, Batch, Concurrency int
	// Hint is "aligned" (each PaymentIntent created 0–30 s after its row) or "none" (created
	// 200 days later: the rows' created_at says nothing about where the objects are).
	Hint string
	// PerObject hides the gateway's bulk ability: one retrieve per row.
	PerObject bool
	// Burst creates every row and every PaymentIntent within one second (a backfill, an
	// import), instead of one row every 10 s.
	Burst bool
	// Mix creates the rows a minute apart, each object 0–30 s after its row, except the middle
	// 60%: an import, every row and object created within one second (see mixImport).
	Mix bool
	// Latency is added by stripetest to every request.
	Latency  time.Duration
	Progress io.Writer
	// CPUProfile, if set, receives a CPU profile of the timed cycle (not of -money's). It is
	// the whole process's: stripetest's handlers are in it beside the gateway and the engine.
	CPUProfile io.Writer
	// MemProfile, if set, receives the allocation profile ("allocs") taken right after the
	// timed cycle; it counts the load's allocations too: pprof -focus=RunBatch keeps the
	// client's, -focus=stripetest the fake's.
	MemProfile io.Writer
}

// stripeResult is the stripe subcommand's JSON line.
type stripeResult struct {
	Object      string  `json:"object"`
	Rows        int     `json:"rows"`
	Batch       int     `json:"batch"`
	Mode        string  `json:"mode"`
	Hint        string  `json:"hint"`
	Burst       bool    `json:"burst"`
	ImportMix   bool    `json:"import_mix,omitempty"`
	Concurrency int     `json:"concurrency"`
	LatencyMS   float64 `json:"latency_ms"`
	APICalls    int     `json:"api_calls"`
	ListCalls   int     `json:"list_calls"`
	Retrieves   int     `json:"retrieve_calls"`
	CallsPerRow float64 `json:"calls_per_row"`
	Seconds     float64 `json:"seconds"`
	RowsPerS    float64 `json:"rows_per_s"`
	// CycleHoursAt5rps is how long the same cycle takes within the default budget of 5 calls
	// per second: api_calls / 5 / 3600.
	CycleHoursAt5rps float64        `json:"cycle_hours_at_5rps"`
	Findings         int64          `json:"findings"`
	Commands         int64          `json:"commands"`
	Verdicts         map[string]int `json:"verdicts"`
	GoVersion        string         `json:"go_version"`

	// With -money (see stripemoney.go): the mix, the disputes calls among api_calls, the
	// calls per row of the other mode and of a second bulk cycle (closed disputes kept), the
	// findings by kind, and whether both modes agree (the run fails when they do not).
	Money               bool           `json:"money,omitempty"`
	Mix                 string         `json:"mix,omitempty"`
	DisputeCalls        int            `json:"dispute_calls,omitempty"`
	ComparedMode        string         `json:"compared_mode,omitempty"`
	ComparedCallsPerRow float64        `json:"compared_calls_per_row,omitempty"`
	WarmCallsPerRow     float64        `json:"second_cycle_calls_per_row,omitempty"`
	SameVerdicts        bool           `json:"same_verdicts,omitempty"`
	SameFindings        bool           `json:"same_findings,omitempty"`
	Kinds               map[string]int `json:"kinds,omitempty"`
}

// stripeCommand is the stripe subcommand: it recreates its schema, runs runStripe in it and
// prints the result as its last stdout line.
func stripeCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("stripe", flag.ContinueOnError)
	rows := fs.Int("rows", 20000, "rows (and objects) to load")
	batch := fs.Int("batch", 1000, "engine batch size")
	hint := fs.String("hint", "aligned", `"aligned": PaymentIntents created 0-30 s after their rows; "none": no overlap at all`)
	mode := fs.String("mode", "bulk", `"bulk": the gateway lists in pages of 100; "per-object": one retrieve per row`)
	conc := fs.Int("concurrency", 8, "gateway calls in flight")
	latency := fs.Duration("latency", 0, "latency stripetest adds to every request")
	burst := fs.Bool("burst", false, "create all rows and PaymentIntents within one second (a backfill, an import)")
	mix := fs.Bool("mix", false, "create the rows a minute apart, but for 60% of them in the middle imported within one second")
	schema := fs.String("schema", "bench_stripe", "schema to drop, recreate and work in")
	money := fs.Bool("money", false, "the money policy over intents with charges, refunds and disputes, a typed row; runs both modes and compares them")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed cycle (client and stripetest alike) to this file")
	memProfile := fs.String("memprofile", "", "write the allocation profile, taken after the timed cycle, to this file (see pprof -sample_index=alloc_space)")
	object := fs.String("object", paymentIntentObject.name, `the Stripe object: "payment_intent", "subscription" (subscription policy, lists with status=all) or "invoice" (invoice policy over a typed row)`)
	if err := parseFlags(fs, args, stderr,
		"usage: go run ./tools/bench stripe [flags]",
		"One full cycle of the engine with pgstore and the Stripe gateway over HTTP to stripetest,",
		"-burst: every row and PaymentIntent created within one second (a backfill, an import);",
		"-mix: rows a minute apart, with 60% of them imported within one second in the middle;",
		"-money: the money policy (refunds, disputes, amounts) over a typed row, in both modes;",
		"-object subscription|invoice: the object kit's gateway and that object's policy;",
		"no rate limit; counts the API calls. Database: $DATABASE_URL.",
	); err != nil {
		return err
	}
	switch {
	case *rows <= 0 || *batch <= 0 || *conc <= 0:
		return fmt.Errorf("bench: stripe: -rows, -batch and -concurrency must be positive")
	case *hint != "aligned" && *hint != "none":
		return fmt.Errorf("bench: stripe: -hint must be aligned or none, not %q", *hint)
	case *mode != "bulk" && *mode != "per-object":
		return fmt.Errorf("bench: stripe: -mode must be bulk or per-object, not %q", *mode)
	case *object != paymentIntentObject.name && *object != subscriptionObject.name && *object != invoiceObject.name:
		return fmt.Errorf("bench: stripe: -object must be payment_intent, subscription or invoice, not %q", *object)
	case *burst && *mix:
		return fmt.Errorf("bench: stripe: -burst and -mix are two layouts of the rows; give one")
	case *money && *object != paymentIntentObject.name:
		return fmt.Errorf("bench: stripe: -money is the PaymentIntent money policy; it takes no -object %s", *object)
	}
	opts := stripeOptions{Rows: *rows, Batch: *batch, Concurrency: *conc, Hint: *hint,
		PerObject: *mode == "per-object", Burst: *burst, Mix: *mix, Latency: *latency, Progress: stderr}
	for _, p := range []struct {
		name string
		to   *io.Writer
	}{{*cpuProfile, &opts.CPUProfile}, {*memProfile, &opts.MemProfile}} {
		if p.name == "" {
			continue
		}
		f, err := os.Create(p.name)
		if err != nil {
			return fmt.Errorf("bench: stripe: %w", err)
		}
		defer f.Close()
		*p.to = f
	}
	pool, drop, err := benchSchema(ctx, *schema, stderr)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer drop()
	if *money {
		res, err := runStripeMoney(ctx, pool, *schema, opts)
		if err != nil {
			return err
		}
		return emit(stdout, res)
	}
	var res stripeResult
	switch *object {
	default:
		res, err = runObject(ctx, pool, *schema, opts, paymentIntentObject)
	case subscriptionObject.name:
		res, err = runObject(ctx, pool, *schema, opts, subscriptionObject)
	case invoiceObject.name:
		res, err = runObject(ctx, pool, *schema, opts, invoiceObject)
	}
	if err != nil {
		return err
	}
	return emit(stdout, res)
}

// stripeBase is the first row's created_at; row i is created 10 s·i later.
var stripeBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// stripeRowCreated is row n's created_at: 10 s·n after stripeBase, within stripeBase's second
// for a burst, or as mixImport says for a mix.
func stripeRowCreated(n int, opts stripeOptions) time.Time {
	if opts.Mix {
		switch first, last, at := mixImport(opts.Rows); {
		case n < first:
			return stripeBase.Add(time.Duration(n) * time.Minute)
		case n <= last:
			return at.Add(time.Duration(n-first+1) * time.Second / time.Duration(last-first+2))
		default:
			return at.Add(time.Duration(n-last) * time.Minute)
		}
	}
	if opts.Burst {
		return stripeBase.Add(time.Duration(n) * time.Second / time.Duration(opts.Rows+1))
	}
	return stripeBase.Add(time.Duration(n) * 10 * time.Second)
}

// mixImport returns the first and last row of a mix's import, the middle 60% of the rows,
// and the second they and their objects were created in: a minute after the row before them.
// The rows before are a minute apart from stripeBase, the rows after a minute apart from it.
func mixImport(rows int) (first, last int, at time.Time) {
	n := rows * 3 / 5
	first = (rows-n)/2 + 1
	return first, first + n - 1, stripeBase.Add(time.Duration(first) * time.Minute)
}

// stripeMix is seedMix without the unavailable share: stripetest answers every row, so that
// bulk and per-object runs must agree exactly.
func stripeMix(i int) (string, stripe.PaymentIntentStatus) {
	local, ext, ok := seedMix(i)
	if !ok {
		return stripepolicy.LocalPaid, stripe.PaymentIntentStatusSucceeded
	}
	return local, ext
}

// stripeObject is what the stripe bench needs of one Stripe object type: T is its stripe-go
// type, L the bench table's row as the store reads it. Every object's mix follows stripeMix's
// shares (90% in sync, 4% Repairable, 3% NeedsReview, 3% in sync or in flight), so that
// expected gives the findings and commands of every one.
type stripeObject[L, T any] struct {
	name           string
	list, retrieve stripetest.Route
	// load adds row n's object (n from 1), created at created[n-1], to srv, and returns their ids.
	load func(srv *stripetest.Server, created []time.Time) []string
	// table creates the bench's table in schema with row n referring to ids[n-1], created at
	// stripeRowCreated(n), and returns the store over it.
	table      func(ctx context.Context, pool *pgxpool.Pool, schema string, ids []string, opts stripeOptions) (*pgstore.Store[L], pgstore.Tables, error)
	gateway    func(stripeadapter.GatewayConfig) (reconcile.Gateway[T], error)
	classifier reconcile.Classifier[L, T]
}

// paymentIntentObject is the bench over PaymentIntents: the seed's payments table, its status
// alone, PaymentIntentPolicy, and the PaymentIntents gateway of the object kit.
var paymentIntentObject = stripeObject[string, *stripe.PaymentIntent]{
	name: "payment_intent", list: stripetest.ListPaymentIntents, retrieve: stripetest.RetrievePaymentIntent,
	load: func(srv *stripetest.Server, created []time.Time) []string {
		pis := make([]stripetest.PaymentIntent, len(created))
		for i := range pis {
			n := i + 1
			_, ext := stripeMix(n)
			pis[i] = stripetest.PaymentIntent{Status: ext, Created: created[i], Amount: int64(1000 + n%5000)}
		}
		return srv.AddPaymentIntents(pis)
	},
	table: func(ctx context.Context, pool *pgxpool.Pool, schema string, ids []string, opts stripeOptions) (*pgstore.Store[string], pgstore.Tables, error) {
		rows := make([][]any, len(ids))
		for i := range rows {
			n := i + 1
			local, _ := stripeMix(n)
			rows[i] = []any{fmt.Sprintf("o_%d", n), ids[i], local, stripeRowCreated(n, opts)}
		}
		return copyPayments(ctx, pool, schema, []string{"order_id", "stripe_payment_intent_id", "status", "created_at"}, rows)
	},
	gateway: func(cfg stripeadapter.GatewayConfig) (reconcile.Gateway[*stripe.PaymentIntent], error) {
		return stripeadapter.NewObjectGateway(cfg, stripeadapter.PaymentIntents())
	},
	classifier: stripepolicy.PaymentIntentPolicy(),
}

// stripeCreated is object n's created time: 0-30 s after its row, in one second for a burst
// or a mix's import, 200 days later without a hint.
func stripeCreated(n int, opts stripeOptions) time.Time {
	created := stripeRowCreated(n, opts).Add(time.Duration(n*7%31) * time.Second)
	switch first, last, at := mixImport(opts.Rows); {
	case opts.Burst:
		created = stripeBase // Stripe's created is whole seconds: all in one
	case opts.Mix && n >= first && n <= last:
		created = at
	}
	if opts.Hint == "none" {
		created = created.Add(200 * 24 * time.Hour)
	}
	return created
}

// runStripe runs the bench over PaymentIntents.
func runStripe(ctx context.Context, pool *pgxpool.Pool, schema string, opts stripeOptions) (stripeResult, error) {
	return runObject(ctx, pool, schema, opts, paymentIntentObject)
}

// runObject loads opts.Rows rows into schema and as many objects into a stripetest server,
// then times one full cycle and checks its results.
func runObject[L, T any](ctx context.Context, pool *pgxpool.Pool, schema string, opts stripeOptions, obj stripeObject[L, T]) (stripeResult, error) {
	res := stripeResult{Object: obj.name, Rows: opts.Rows, Batch: opts.Batch, Hint: opts.Hint, Burst: opts.Burst, ImportMix: opts.Mix, Mode: "bulk", Concurrency: opts.Concurrency,
		LatencyMS: float64(opts.Latency.Microseconds()) / 1000, Verdicts: map[string]int{}, GoVersion: runtime.Version()}
	if opts.PerObject {
		res.Mode = "per-object"
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()
	created := make([]time.Time, opts.Rows)
	for i := range created {
		created[i] = stripeCreated(i+1, opts)
	}
	ids := obj.load(srv, created)
	store, tables, err := obj.table(ctx, pool, schema, ids, opts)
	if err != nil {
		return res, err
	}
	// Enough idle connections for every worker: the default keeps two and would reconnect.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: opts.Concurrency + 2}}
	gateway, err := obj.gateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL(), HTTPClient: hc})
	if err != nil {
		return res, err
	}
	if opts.PerObject {
		gateway = reconcile.PerObject(gateway)
	}
	rec, err := reconcile.New(reconcile.Config[L, T]{
		Job: "bench", Source: store, Sink: store, Gateway: gateway, Classifier: obj.classifier,
		BatchSize: opts.Batch, Concurrency: opts.Concurrency,
	})
	if err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "stripe: loaded %d rows and %ss; one cycle, mode %s, hint %s, batch %d\n", opts.Rows, obj.name, res.Mode, opts.Hint, opts.Batch)
	srv.ResetLog()
	srv.SetLatency(opts.Latency)
	if opts.CPUProfile != nil {
		if err := pprof.StartCPUProfile(opts.CPUProfile); err != nil {
			return res, fmt.Errorf("bench: stripe: %w", err)
		}
		defer pprof.StopCPUProfile() // on an error; stopping twice is harmless
	}
	scanned, reported := 0, 0
	start := time.Now()
	for {
		rep, err := rec.RunBatch(ctx)
		if err != nil {
			return res, err
		}
		scanned += rep.Scanned
		reported += rep.GatewayCalls
		for v, n := range rep.Verdicts {
			res.Verdicts[v.String()] += n
		}
		if rep.Wrapped {
			break
		}
	}
	elapsed := time.Since(start)
	pprof.StopCPUProfile()
	if opts.MemProfile != nil {
		if err := pprof.Lookup("allocs").WriteTo(opts.MemProfile, 0); err != nil {
			return res, fmt.Errorf("bench: stripe: %w", err)
		}
	}
	res.Seconds = round(elapsed.Seconds(), 3)
	res.RowsPerS = math.Round(float64(scanned) / elapsed.Seconds())
	res.ListCalls = srv.Requests(obj.list)
	res.Retrieves = srv.Requests(obj.retrieve)
	res.APICalls = res.ListCalls + res.Retrieves
	res.CallsPerRow = round(float64(res.APICalls)/float64(opts.Rows), 4)
	res.CycleHoursAt5rps = round(float64(res.APICalls)/5/3600, 3)
	if res.Findings, res.Commands, err = countFindings(ctx, pool, tables); err != nil {
		return res, err
	}
	switch wantF, wantC := expected(opts.Rows); {
	case scanned != opts.Rows:
		return res, fmt.Errorf("bench: stripe: the cycle scanned %d rows of %d", scanned, opts.Rows)
	case reported != res.APICalls:
		return res, fmt.Errorf("bench: stripe: the engine counted %d calls, stripetest received %d", reported, res.APICalls)
	case res.Findings != wantF || res.Commands != wantC || res.Verdicts[reconcile.Unverifiable.String()] != 0:
		return res, fmt.Errorf("bench: stripe: wrong results: %d findings, %d commands, verdicts %v; want %d, %d, none unverifiable",
			res.Findings, res.Commands, res.Verdicts, wantF, wantC)
	}
	return res, nil
}
