// Payments reconciles a PostgreSQL payments table against a fake Stripe with all three of the
// library's ways of looking, over a table seeded with the drift a real payments service
// accumulates, and then repairs what they found through the same canonical writer the Stripe
// webhook handler uses.
//
// It is the first thing to run:
//
//	go run ./examples/payments
//
// It connects to $DATABASE_URL (by default postgres://postgres@127.0.0.1:5432/test?sslmode=disable;
// with nothing set and no server there, on a machine with Docker, it starts a PostgreSQL
// container with testcontainers and says so), drops and creates the schema reconcile_demo, and fills its payments table with rows that
// mostly agree with their Stripe PaymentIntents, and some that do not: success and cancel
// webhooks that never arrived, orders marked paid whose payment did not go through, a payment
// that succeeded for an order marked failed, PaymentIntents Stripe never saw, rows changed a
// moment ago, and calls that fail. Stripe also holds PaymentIntents no row refers to (our
// transaction rolled back after creating them), one of them created a moment ago by a
// checkout still under way. The stories and their shares are in drift.go. The PaymentIntents
// are loaded into stripetest, a fake Stripe API served over HTTP in-process, with a 503
// injected for every retrieve of the ones whose calls fail.
//
// Then three lanes look, all under one job (lanes.go), so that a drift two of them see is one
// finding with one repair command:
//
//   - The events lane, started first: its first run only anchors at Stripe's newest event.
//   - The sweep (pgstore over the table, the Stripe PaymentIntent classifier, and the real
//     Stripe gateway of stripeadapter, stripe-go over HTTP to stripetest) runs batch by batch
//     until the cursor wraps, printing a line per batch, the Stripe API calls it made (a list
//     call per hundred rows, and a retrieve for each row the lists did not show) and its
//     verdicts.
//   - Then some payments the sweep found in sync, awaiting payment, succeed at Stripe and their
//     webhooks are lost. The events lane waits out its settle time (2 seconds here, a minute in
//     production) and runs until it has caught up with Stripe's event log: it finds each of
//     them as a missed success with one repair command, in one run, with one API call per
//     hundred events.
//   - The reverse scan lists the PaymentIntents created in the last 7 days (but the last 10
//     minutes) for one full pass, a hundred per call, and reports those no row refers to as
//     missing_locally, for a person; it adds nothing for the drifts the others opened.
//
// The run prints what a host would look at: open findings by kind, the repair commands queued
// in the outbox, the monitoring figures and the health checks (the lanes' among them), and the
// findings a person must review.
//
// Then the repairs. One of the missed success webhooks arrives after all, late: a signed
// payment_intent.succeeded goes through the webhook handler (webhook.go). Then a
// pgoutbox.Dispatcher applies the queued repair commands (repair.go), the sweep's and the
// events lane's. Both go through the canonical writer (writer.go), the one place a payment's
// status changes: a guarded update, a ledger row for a payment that becomes paid, and the
// findings about the payment resolved in the same transaction. The late webhook's payment is
// therefore repaired once: its repair command finds its finding resolved, is skipped, and is
// done. The run prints what the repairs did and the findings left for a person.
//
// It exits with status 1 if the sweep or either lane found anything but what was planted, if a
// lane's health check fails, or if the repairs left a repairable finding open, changed a
// payment other than those, booked a payment twice, or left a command dead or waiting.
//
// Flags:
//
//	-rows N      payments to load (default 3000; 40 in real mode)
//	-batch N     rows per batch (default 200)
//	-rps R       Stripe API calls per second, paced by a reconcile.AdaptiveLimiter as a host
//	             would pace the real API, shared by the sweep and the lanes (default 0:
//	             unpaced; 20 in real mode, where it paces the planting too and must be
//	             positive). A run longer than the 10-minute grace period lets the rows changed
//	             "in the last minute" age out of it; they are then asked about and reported as
//	             differences.
//	-seed N      seed for the table's content; the same seed gives the same table (default 1)
//	-schema S    the schema to drop and create (default reconcile_demo)
//	-console A   after the run, serve the review console on address A, such as
//	             127.0.0.1:8080, until interrupted (see console.go; default: none)
//
// With STRIPE_SECRET_KEY set, the run talks to Stripe's test mode instead of stripetest
// (real.go):
//
//	STRIPE_SECRET_KEY=sk_test_... go run ./examples/payments
//
// Only a test-mode secret or restricted key (sk_test_..., rk_test_...) is taken; a live key is
// refused, and the key is never printed. The reconciler is the same, built the same way
// (stripeadapter.NewGateway with the key and no BaseURL, its events feed and reverse scan):
// only the planting differs. The PaymentIntents are created in the test account with
// stripe-go and Stripe's test payment methods (pm_card_visa confirmed for succeeded,
// pm_card_authenticationRequired for requires_action, created and left, created and
// canceled), each marked with the metadata reconcile_demo=<run id>, which the reverse scan
// and the checks go by: the account holds other objects. The rows' created_at is their
// intent's created time, read back from Stripe. The stories no test payment method can
// make (processing, an outage) are left out, and say so. -rows defaults to 40 and -rps to 20
// (test mode allows 25 requests a second), for the planting and the reconciling. Stripe lists
// events a moment late, so the events lane keeps a 30-second settle time and the run waits it
// out twice: a real-mode run takes a minute or two. The created PaymentIntents stay in the
// test account.
//
// Real mode has been run only against stripe-mock, Stripe's own mock of its API, which
// validates every request against Stripe's OpenAPI specification but keeps no state
// (real_test.go): it was written where there is no network. Its requests are known to be
// accepted; what real Stripe answers over time (statuses, event delays, list consistency) has
// not been observed.
//
// The tables stay until the next run, to be looked at:
//
//	psql "${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" -c 'TABLE reconcile_demo.reconcile_findings LIMIT 5'
//
// Two runs against one database at the same time get in each other's way unless they are
// given different schemas.
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
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"
	"golang.org/x/time/rate"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/examples/internal/pgcontainer"
	"github.com/reconcilekit/reconcile/internal/pgenv"
)

// job names the sweep; its cursor, observations and findings are kept under this name.
const job = "payments-sweep"

// options are run's parameters; main fills them from flags and the environment.
type options struct {
	DatabaseURL    string
	DatabaseSource string // where DatabaseURL came from, for the error if it does not answer
	Rows           int
	BatchSize      int
	RPS            float64 // Stripe calls per second; 0 means unpaced
	Seed           uint64
	Schema         string // empty means defaultSchema
	// StripeKey, from $STRIPE_SECRET_KEY, selects real mode (real.go): a Stripe test-mode key.
	// Its type prints as [redacted].
	StripeKey secretKey
	// stripeMock, set only by the stripe-mock test, is where real mode sends its requests
	// instead of api.stripe.com; there the checks are printed, not enforced (wireTimes and
	// realStripe.enforce in real_stripe.go). Nothing sets it from the environment or a flag.
	stripeMock string
}

func main() {
	var opts options
	opts.DatabaseURL, opts.DatabaseSource = pgenv.URL("DATABASE_URL")
	flag.IntVar(&opts.Rows, "rows", 3000, "payments to load")
	flag.IntVar(&opts.BatchSize, "batch", reconcile.DefaultBatchSize, "rows per batch")
	flag.Float64Var(&opts.RPS, "rps", 0, "Stripe calls per second (0: unpaced)")
	flag.Uint64Var(&opts.Seed, "seed", 1, "seed for the table's content")
	flag.StringVar(&opts.Schema, "schema", defaultSchema, "the schema to drop and create")
	consoleAddr := flag.String("console", "", "after the run, serve the review console on this address, such as 127.0.0.1:8080, until interrupted (see console.go)")
	flag.Parse()
	opts.StripeKey = secretKey(strings.TrimSpace(os.Getenv("STRIPE_SECRET_KEY")))
	setRealDefaults(&opts, flag.CommandLine)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		stop()
		os.Exit(1)
	}
	if err := serveConsole(ctx, os.Stdout, *consoleAddr, opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		stop()
		os.Exit(1)
	}
}

// run loads the planted table, reconciles it for one full cycle, repairs what the cycle found,
// prints the results to out, and returns an error if they differ from what was planted.
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
	}
	if opts.StripeKey != "" {
		return runReal(ctx, out, opts, schema)
	}
	p, err := newPlan(opts.Rows, opts.Seed)
	if err != nil {
		return err
	}

	pool, stopContainer, err := connect(ctx, out, opts, schema)
	if err != nil {
		return err
	}
	defer stopContainer()
	defer pool.Close()
	createdAt, err := setUp(ctx, pool, schema, p)
	if err != nil {
		return err
	}
	srv := newStripe(p, createdAt)
	defer srv.Close()
	printPlan(out, schema, p)

	store, err := newStore(pool, schema)
	if err != nil {
		return err
	}
	// Declared as the interface so that no pacing stays a nil interface, not a nil pointer.
	var limiter reconcile.Limiter
	if opts.RPS > 0 {
		// It halves its rate when Stripe answers 429, and grows back.
		if limiter, err = reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{Rate: rate.Limit(opts.RPS), Burst: 1}); err != nil {
			return fmt.Errorf("payments: -rps %g: %w", opts.RPS, err)
		}
	}
	rec, err := newReconciler(store, srv, opts.BatchSize, limiter)
	if err != nil {
		return err
	}

	l, err := newLanes(store, srv, limiter)
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
	res, err := collect(ctx, pool, schema, store, srv, p, c)
	if err != nil {
		return err
	}
	printCycle(out, p, res)

	if err := runLanes(ctx, out, pool, schema, store, srv, p, l, &lr); err != nil {
		return err
	}
	printSummary(out, p, res, lr)
	if err := check(out, p, res, lr); err != nil {
		return err
	}

	rr, err := repair(ctx, pool, schema, store, p, slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	printRepairs(out, p, rr)
	return checkRepairs(out, p, rr)
}

// connect returns a pool over the run's database. With nothing configured and no server at the
// default URL, on a machine with Docker, a PostgreSQL container is started for the run; stop
// removes it.
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

// newStore returns the store over schema's payments table, with the reconciler's tables next
// to it.
func newStore(pool *pgxpool.Pool, schema string) (*pgstore.Store, error) {
	// pgstore reads each row's created_at (Config.CreatedAtColumn, by default "created_at"),
	// which the gateway uses to list the PaymentIntents created near a batch's rows.
	return pgstore.New(pool, pgstore.Config{
		Table:         "payments",
		Schema:        schema,
		Tables:        pgstore.Tables{Schema: schema},
		AggregateType: "payment",
	})
}

// newGateway returns the Stripe gateway a host uses against Stripe itself, pointed at srv.
func newGateway(srv *stripetest.Server) (*stripeadapter.Gateway, error) {
	// A host gives its own key and no BaseURL.
	return stripeadapter.NewGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()})
}

// newReconciler returns the reconciler of store's payments against srv, through the Stripe
// gateway. A nil limiter means unpaced.
func newReconciler(store *pgstore.Store, srv *stripetest.Server, batchSize int, limiter reconcile.Limiter) (*reconcile.Reconciler[string, *stripe.PaymentIntent], error) {
	gateway, err := newGateway(srv)
	if err != nil {
		return nil, err
	}
	return reconcilerOver(store, gateway, batchSize, limiter)
}

// reconcilerOver returns the reconciler of store's payments through gateway, stripetest's or
// real Stripe's: the one the run uses either way.
func reconcilerOver(store *pgstore.Store, gateway *stripeadapter.Gateway, batchSize int, limiter reconcile.Limiter) (*reconcile.Reconciler[string, *stripe.PaymentIntent], error) {
	return reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{
		Job:        job,
		Source:     store,
		Sink:       store,
		Gateway:    gateway,
		Classifier: stripeadapter.PaymentIntentClassifier(),
		BatchSize:  batchSize,
		Limiter:    limiter,
		// Real Stripe calls take a few hundred milliseconds; several in flight keep a batch short
		// while the limiter sets the pace.
		Concurrency:   8,
		ExternalState: stripeadapter.PaymentIntentState,
	})
}

// repair delivers the success webhook of one missed success late, through the webhook handler,
// then applies every queued repair command with a dispatcher, and reads back what they did.
func repair(ctx context.Context, pool *pgxpool.Pool, schema string, store *pgstore.Store, p plan, logger *slog.Logger) (repairResults, error) {
	var r repairResults
	// Rows changed from now on were changed by the repairs.
	if err := pool.QueryRow(ctx, "SELECT now()").Scan(&r.since); err != nil {
		return r, fmt.Errorf("payments: read the clock: %w", err)
	}
	r.late = p.lateWebhook()
	body, header := signedEvent(demoWebhookSecret, stripe.EventTypePaymentIntentSucceeded, r.late.externalID, r.late.amount)
	resp := deliver(ctx, newWebhookHandler(pool, store, demoWebhookSecret, logger), body, header)
	r.webhookStatus, r.webhookBody = resp.Code, strings.TrimSpace(resp.Body.String())

	var stats repairStats
	d, err := newDispatcher(pool, schema, store, &stats, logger)
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
