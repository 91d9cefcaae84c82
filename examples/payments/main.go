// main.go is the demo's driver: flags, then plant, sweep, lanes, checks and repairs in order.
// A host's own wiring is in the files doc.go lists under "Reading it".

package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"
	"golang.org/x/time/rate"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/examples/internal/pgcontainer"
	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

// options are run's parameters; main fills them from flags and the environment.
type options struct {
	DatabaseURL    string
	DatabaseSource string // where DatabaseURL came from, for the error if it does not answer
	Rows           int
	BatchSize      int
	RPS            float64 // Stripe calls per second; 0 means unpaced
	Seed           uint64
	Schema         string // empty means defaultSchema
	// Store, from -store, is where the payments are kept: storeAuto (empty too), storePostgres
	// or storeMemory (demo_backend.go).
	Store string
	// Console, from -console, is where the run ends by serving the review console once its
	// checks pass (demo_console.go); empty means it does not.
	Console string
	// StripeKey, from $STRIPE_SECRET_KEY, selects real mode (demo_real.go): a Stripe test-mode key.
	// Its type prints as [redacted].
	StripeKey secretKey
	// stripeMock, set only by the stripe-mock test, is where real mode sends its requests
	// instead of api.stripe.com; there the checks are printed, not enforced (wireTimes and
	// realStripe.enforce in demo_real_stripe.go). Nothing sets it from the environment or a flag.
	stripeMock string
	// docker, if set, stands in for pgcontainer.DockerUsable: tests say there is no Docker.
	docker func() error
}

func main() {
	var opts options
	opts.DatabaseURL, opts.DatabaseSource = pgenv.URL("DATABASE_URL")
	flag.IntVar(&opts.Rows, "rows", 3000, "payments to load")
	flag.IntVar(&opts.BatchSize, "batch", reconcile.DefaultBatchSize, "rows per batch")
	flag.Float64Var(&opts.RPS, "rps", 0, "Stripe calls per second (0: unpaced)")
	flag.Uint64Var(&opts.Seed, "seed", 1, "seed for the table's content")
	flag.StringVar(&opts.Schema, "schema", defaultSchema, "the schema to drop and create")
	flag.StringVar(&opts.Store, "store", storeAuto, "where the payments are kept: auto (PostgreSQL, or memory when none is reachable), postgres or memory")
	consoleAddr := flag.String("console", "", "after the run, serve the review console on this address, such as 127.0.0.1:8080, until interrupted (see demo_console.go)")
	flag.Parse()
	opts.Console = *consoleAddr
	opts.StripeKey = secretKey(strings.TrimSpace(os.Getenv("STRIPE_SECRET_KEY")))
	setRealDefaults(&opts, flag.CommandLine)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		stop()
		os.Exit(1)
	}
}

// run loads the planted table, reconciles it for one full cycle, repairs what the cycle found,
// prints the results to out, and returns an error if they differ from what was planted. On a
// backend in memory (demo_backend.go) the repairs and the console, which are PostgreSQL's, are
// skipped, and the output says so.
func run(ctx context.Context, out io.Writer, opts options) error {
	schema := cmp.Or(opts.Schema, defaultSchema)
	switch {
	case opts.Rows <= 0:
		return fmt.Errorf("payments: -rows %d must be positive", opts.Rows)
	case opts.BatchSize <= 0:
		return fmt.Errorf("payments: -batch %d must be positive", opts.BatchSize)
	case opts.RPS < 0 || math.IsNaN(opts.RPS):
		return fmt.Errorf("payments: -rps %g must be zero or positive", opts.RPS)
	case !schemaRE.MatchString(schema):
		return fmt.Errorf("payments: -schema %q is not a plain lower-case SQL identifier", schema)
	case !slices.Contains([]string{"", storeAuto, storePostgres, storeMemory}, opts.Store):
		return fmt.Errorf("payments: -store %q: want %s, %s or %s", opts.Store, storeAuto, storePostgres, storeMemory)
	case opts.StripeKey != "" && opts.Store == storeMemory:
		return fmt.Errorf("payments: -store %s: real mode (STRIPE_SECRET_KEY) keeps its payments in PostgreSQL only", storeMemory)
	}
	if opts.StripeKey != "" {
		return runReal(ctx, out, opts, schema)
	}
	p, err := newPlan(opts.Rows, opts.Seed)
	if err != nil {
		return err
	}

	be, release, err := openBackend(ctx, out, opts, schema)
	if err != nil {
		return err
	}
	defer release()
	createdAt, err := be.load(ctx, p)
	if err != nil {
		return err
	}
	srv, err := newStripe(p, createdAt)
	if err != nil {
		return err
	}
	defer srv.Close()
	printPlan(out, be.table(), p)

	store := be.store()
	// Declared as the interface so that no pacing stays a nil interface, not a nil pointer.
	var limiter reconcile.Limiter
	if opts.RPS > 0 {
		// It halves its rate when Stripe answers 429, and grows back.
		if limiter, err = reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{Rate: rate.Limit(opts.RPS), Burst: 1}); err != nil {
			return fmt.Errorf("payments: -rps %g: %w", opts.RPS, err)
		}
	}
	// One gateway for the sweep, the lanes and the repairs, as a host has: they share the
	// disputes' final outcomes it keeps.
	gateway, err := newGateway(srv)
	if err != nil {
		return err
	}
	rec, err := reconcilerOver(store, gateway, opts.BatchSize, limiter)
	if err != nil {
		return err
	}
	l, err := lanesOver(store, gateway, demoTimes, nil, limiter)
	if err != nil {
		return err
	}
	lr, err := anchorEvents(ctx, out, l, srv)
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "\nReconciling (job %s, the Stripe gateway over HTTP to stripetest at %s):\n", job, srv.URL())
	c, err := runCycle(ctx, out, rec)
	if err != nil {
		return err
	}
	res, err := collect(ctx, be, srv, p, c)
	if err != nil {
		return err
	}
	printCycle(out, p, res)

	if err := runLanes(ctx, out, be, srv, p, l, &lr); err != nil {
		return err
	}
	printSummary(out, p, res, lr)
	if err := check(out, p, res, lr); err != nil {
		return err
	}

	pg, ok := be.(*pgBackend)
	if !ok {
		printSkippedInMemory(out, opts, sum(lr.commands))
		return nil
	}
	rr, err := repair(ctx, pg.pool, schema, pg.s, gateway, p, slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	printRepairs(out, p, rr)
	if err := checkRepairs(out, p, rr); err != nil {
		return err
	}
	return serveConsole(ctx, out, opts.Console, newReviewer(pg.pool, pg.s, gateway))
}

// connect returns a pool over the run's database, for real mode, which keeps its payments in
// PostgreSQL only. With nothing configured and no server at the default URL, on a machine with
// Docker, a PostgreSQL container is started for the run; stop removes it.
func connect(ctx context.Context, out io.Writer, opts options, schema string) (pool *pgxpool.Pool, stop func(), err error) {
	pool, stop, err = pgcontainer.ConnectOrStart(ctx, opts.DatabaseURL, cmp.Or(opts.DatabaseSource, "options.DatabaseURL"), out)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("payments: the example needs a database it may create the schema %s in.\n%w", schema, err)
	}
	return pool, stop, nil
}

// repair delivers the success webhook of one missed success late, through the webhook handler,
// then applies every queued repair command with a dispatcher, and reads back what they did.
// Both read refunds and disputes from Stripe through gateway.
func repair(ctx context.Context, pool *pgxpool.Pool, schema string, store *pgstore.Store[paymentRow], gateway paymentReader, p plan, logger *slog.Logger) (repairResults, error) {
	var r repairResults
	// Rows changed from now on were changed by the repairs.
	if err := pool.QueryRow(ctx, "SELECT now()").Scan(&r.since); err != nil {
		return r, fmt.Errorf("payments: read the clock: %w", err)
	}
	r.late = p.lateWebhook()
	body, header := signedEvent(demoWebhookSecret, stripe.EventTypePaymentIntentSucceeded, r.late.externalID, r.late.amount)
	resp := deliver(ctx, newWebhookHandler(pool, store, gateway, demoWebhookSecret, logger), body, header)
	r.webhookStatus, r.webhookBody = resp.Code, strings.TrimSpace(resp.Body.String())

	var stats repairStats
	d, err := newDispatcher(pool, schema, store, gateway, &stats, logger)
	if err != nil {
		return r, err
	}
	start := time.Now()
	if r.rounds, r.claimed, err = drain(ctx, d); err != nil {
		return r, err
	}
	r.elapsed = time.Since(start)
	r.changed, r.unchanged = int(stats.changed.Load()), int(stats.unchanged.Load())
	return r, collectRepairs(ctx, pool, schema, store, &r)
}

// cycle adds up the batches of one cycle, or the steps of a lane's run.
type cycle struct {
	batches  int
	scanned  int
	verdicts map[reconcile.Verdict]int
	findings int // opened
	commands int // queued
	calls    int // Stripe API calls, as the batches reported them
	elapsed  time.Duration
}

// runCycle runs batches until the cursor wraps: one full pass over the table. A host calls
// RunBatch from its own scheduler instead, one batch every few seconds or minutes; the cursor
// in the database carries the cycle across runs and restarts.
func runCycle(ctx context.Context, out io.Writer, rec reconcile.BatchRunner) (cycle, error) {
	return untilWrapped(ctx, rec, func(n int, rep reconcile.Report) { printBatch(out, n, rep) })
}

// untilWrapped runs b, a sweep or a lane, batch after batch until it reports Wrapped: the end
// of a cycle, of a reverse pass, or of the event log. A batch deferred by a rate limit wrote
// nothing and is run again after the wait it asked for. each, if not nil, is told of every
// other batch.
func untilWrapped(ctx context.Context, b reconcile.BatchRunner, each func(n int, rep reconcile.Report)) (cycle, error) {
	c := cycle{verdicts: map[reconcile.Verdict]int{}}
	start := time.Now()
	for {
		rep, err := b.RunBatch(ctx)
		if errors.Is(err, reconcile.ErrConcurrentRun) {
			return c, fmt.Errorf("payments: another process is running job %s on this database: %w", job, err)
		}
		if err != nil {
			return c, err
		}
		c.calls += rep.GatewayCalls // a refused call is a call too
		if rep.Deferred {
			select {
			case <-ctx.Done():
				return c, ctx.Err()
			case <-time.After(max(rep.RetryAfter, 100*time.Millisecond)):
			}
			continue
		}
		c.batches++
		c.scanned += rep.Scanned
		c.findings += rep.NewFindings
		c.commands += rep.NewCommands
		for v, n := range rep.Verdicts {
			c.verdicts[v] += n
		}
		if each != nil {
			each(c.batches, rep)
		}
		if rep.Wrapped {
			c.elapsed = time.Since(start)
			return c, nil
		}
	}
}
