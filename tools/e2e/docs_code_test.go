package e2e_test

// The Go of the README and of the root package's doc, each block inside a function that
// declares what the block takes from the blocks before it or from the host (a pool, a context,
// the host's writer): it compiles here, so it compiles for a reader, and
// TestEveryGoBlockOfTheREADMEAndPackageDocIsHere checks that every block appears in this file
// verbatim. Change a block in both places.

import (
	"context"
	"database/sql"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgbudget"
	"github.com/reconcilekit/reconcile/adapters/pgledger"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/riverdelivery"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripemoney"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/console"
	"github.com/reconcilekit/reconcile/tieout"
)

// readmeEmbedding is "Embedding it": the status sweep.
func readmeEmbedding(ctx context.Context, pool *pgxpool.Pool) error {
	store, err := pgstore.New(pool, pgstore.Config{
		Table:            "payments",
		ExternalIDColumn: "stripe_payment_intent_id",
		StateColumn:      "status",
		// Schema: "billing", // the host table's schema and the reconciler's tables' (default: the search_path)
	})
	if err != nil {
		return err
	}
	// The reconciler's own tables, in the store's schema; store.Check says so if you forget.
	// (With your own migration tool instead: `reconcile migrate sql`, see "Command line".)
	if err := pgstore.Migrate(ctx, pool, store.Tables()); err != nil {
		return err
	}
	// A gateway of PaymentIntents, one of the object kit's descriptors.
	gateway, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: os.Getenv("STRIPE_SECRET_KEY")},
		stripeadapter.PaymentIntents())
	if err != nil {
		return err
	}
	limiter, err := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{}) // 5 requests/s, halves on a 429
	if err != nil {
		return err
	}
	r, err := reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{
		Job:           "payments-sweep",
		Source:        store,
		Sink:          store,
		Gateway:       gateway, // lists PaymentIntents 100 a call, falls back to one GET per row
		Classifier:    stripepolicy.PaymentIntentPolicy(),
		ExternalState: stripepolicy.PaymentIntentState,
		BatchSize:     1000,
		Limiter:       limiter, // share one per Stripe account: it is your whole budget
	})
	if err != nil {
		return err
	}
	report, err := r.RunBatch(ctx) // call it from your scheduler; each call checks one batch
	_ = report
	return err
}

// readmeMoney is "Embedding it": the money sweep, and "Lanes": its lanes.
func readmeMoney(pool *pgxpool.Pool, gateway *stripeadapter.ObjectGateway[*stripe.PaymentIntent], limiter reconcile.Limiter) error {
	type payment struct {
		Status         string
		Amount         int64          // minor units: 1000 is USD 10.00, JPY 1,000, KWD 1.000
		Currency       string         // any case
		AmountCaptured int64          `db:"amount_captured"` // 0: the whole amount (leave it out if you never capture part)
		AmountRefunded int64          `db:"amount_refunded"` // Payment.AmountRefunded(), as your writer books it
		DisputeStatus  sql.NullString `db:"dispute_status"`  // NULL: never disputed
	}
	store, err := pgstore.NewOf[payment](pool, pgstore.Config{
		Table:            "payments",
		ExternalIDColumn: "stripe_payment_intent_id",
		SearchColumns:    []string{"order_id"}, // the console's search box finds findings by order id too
	})
	if err != nil {
		return err
	}
	// The same list calls, each intent with its latest charge expanded, plus its disputes.
	payments, err := stripemoney.New(gateway, stripemoney.Config{})
	if err != nil {
		return err
	}
	money := stripepolicy.PaymentPolicy(func(p payment) stripepolicy.LocalPayment {
		return stripepolicy.LocalPayment{Status: p.Status, Amount: p.Amount, Currency: p.Currency,
			AmountCaptured: p.AmountCaptured, AmountRefunded: p.AmountRefunded, DisputeStatus: p.DisputeStatus.String}
	})
	r, err := reconcile.New(reconcile.Config[payment, *stripepolicy.Payment]{
		Job:        "payments-money",
		Source:     store,
		Sink:       store,
		Gateway:    payments,
		Classifier: money,
		BatchSize:  1000,
		Limiter:    limiter,
	})
	_ = r
	// The money job's lanes (store, payments, money and limiter as in "Embedding it").
	events, err := payments.EventsFeed(stripeadapter.EventsOptions{}) // intents, refunds, disputes; settle 1 min
	if err != nil {
		return err
	}
	reverse, err := payments.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.PaymentIntent]{}) // created in the last 7 days, but the last 10 minutes
	if err != nil {
		return err
	}
	eventsLane, err := reconcile.NewLane(reconcile.LaneConfig[payment, *stripepolicy.Payment]{
		Job: "payments-money", Lane: "events", Feed: events, Matcher: store, Sink: store,
		Classifier: money, Limiter: limiter,
	})
	if err != nil {
		return err
	}
	reverseLane, err := reconcile.NewLane(reconcile.LaneConfig[payment, *stripepolicy.Payment]{
		Job: "payments-money", Lane: "reverse", Feed: reverse, Matcher: store, Sink: store,
		Classifier: money, Limiter: limiter, ReportMissing: true,
	})
	// A Lane is a BatchRunner: schedule it with the Runner or RunTick, e.g. events every minute.
	_, _ = eventsLane, reverseLane
	return err
}

// readmeObjectKit is "Any Stripe object: the object kit".
func readmeObjectKit(cfg stripeadapter.GatewayConfig) error {
	refunds := stripeadapter.Object[*stripe.Refund]{
		Name: "refund", Path: "/v1/refunds", IDPrefix: "re_",
		EventTypes: []string{"refund.created", "refund.updated", "refund.failed"},
		ID:         func(r *stripe.Refund) string { return r.ID },
		Created:    func(r *stripe.Refund) int64 { return r.Created },
		State:      func(r *stripe.Refund) string { return string(r.Status) },
	}
	gateway, err := stripeadapter.NewObjectGateway(cfg, refunds)
	_ = gateway
	return err
}

// readmePayouts is "Payouts: the tie-out".
func readmePayouts(cfg stripeadapter.GatewayConfig, pool *pgxpool.Pool, store *pgstore.Store[string], limiter reconcile.Limiter) error {
	payouts, err := stripeadapter.NewObjectGateway(cfg, stripeadapter.Payouts())
	lister, err := stripepayouts.New(payouts, stripepayouts.Config{Limiter: limiter})
	ledger, err := pgledger.New(pool, pgledger.Config{Tables: []pgledger.Table{
		{Name: "payments", Kind: tieout.KindPayment, IDColumn: "stripe_payment_intent_id",
			SettledAtColumn: "paid_at", GroupColumn: "payout_id"},
		{Name: "refunds", Kind: tieout.KindRefund, IDColumn: "stripe_refund_id", Negate: true},
	}})
	sweep, err := tieout.NewStep(tieout.StepConfig{Job: "payouts", Lane: "sweep", Lister: lister, Ledger: ledger, Sink: store})
	events, err := lister.EventsLister(stripeadapter.EventsOptions{})
	lane, err := tieout.NewStep(tieout.StepConfig{Job: "payouts", Lane: "events", Lister: events, Ledger: ledger, Sink: store})
	unpaid, err := tieout.NewUnpaidStep(tieout.UnpaidConfig{Job: "payouts", Lane: "unpaid", Ledger: ledger, Sink: store})
	// Each is a BatchRunner: schedule them with the Runner or RunTick.
	_, _, _ = sweep, lane, unpaid
	return err
}

// readmeApplyingRepairs is "Applying repairs".
func readmeApplyingRepairs(ctx context.Context, pool *pgxpool.Pool, store *pgstore.Store[string],
	applyPaymentSucceeded func(ctx context.Context, tx pgx.Tx, id int64, actor string) error) error {
	// Up to 4 at once (fewer on a smaller pool: each needs a connection, plus 2), 30 s leases, 10 attempts.
	d, err := pgoutbox.NewDispatcher(pool, pgoutbox.Config{Tables: store.Tables()})
	if err != nil {
		return err
	}
	err = pgoutbox.HandleCommand(d, stripepolicy.CommandApplyPaymentSucceeded,
		func(ctx context.Context, tx pgx.Tx, cmd reconcile.Command) error {
			id, err := strconv.ParseInt(cmd.RecordID, 10, 64)
			if err != nil {
				return pgoutbox.Permanent(err) // a bad payload: dead at once, never retried
			}
			// The same function your webhook handler calls: a guarded update
			// (WHERE status = 'pending'), a no-op when already applied, and the finding
			// resolved in this transaction either way (store.ResolveFindingIn).
			return applyPaymentSucceeded(ctx, tx, id, "reconciler")
		})
	if err != nil {
		return err
	}
	if err := d.Start(ctx); err != nil {
		return err
	}
	defer d.Stop(context.Background()) // drains running handlers; a no-op if Start was never reached
	return nil
}

// readmeRiver is "Repair delivery on River".
func readmeRiver(pool *pgxpool.Pool, applyPaymentSucceeded pgoutbox.CommandWriter) error {
	worker, err := riverdelivery.NewWorker(pool, riverdelivery.WorkerConfig{})
	if err != nil {
		return err
	}
	// The same canonical writer a dispatcher would be given; it resolves the finding in tx.
	if err := worker.Handle(stripepolicy.CommandApplyPaymentSucceeded, applyPaymentSucceeded); err != nil {
		return err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, worker)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: "billing", Workers: workers,
		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}}})
	if err != nil {
		return err
	}
	deliverer, err := riverdelivery.New(client, riverdelivery.Config{})
	if err != nil {
		return err
	}
	store, err := pgstore.New(pool, pgstore.Config{Table: "payments", Schema: "billing", Deliver: deliverer})
	_ = store
	return err
}

// readmeRedrive is "Repair delivery on River": a re-drive.
func readmeRedrive(ctx context.Context, pool *pgxpool.Pool, store *pgstore.Store[string], deliverer *riverdelivery.Deliverer, outboxID int64) error {
	// outboxID: the job's outbox_id, or the pending outbox row whose finding_id is the finding's.
	jobID, err := deliverer.Redrive(ctx, pool, store.Tables(), outboxID, "ana@example.com")
	_ = jobID
	return err
}

// readmeRunner is "Operating it".
func readmeRunner(hot, cold reconcile.BatchRunner) error {
	runner, err := reconcile.NewRunner(reconcile.RunnerConfig{Jobs: []reconcile.RunnerJob{
		{Name: "payments-hot", Batches: hot, Interval: 5 * time.Minute},  // last 90 days or pending
		{Name: "payments-cold", Batches: cold, Interval: 24 * time.Hour}, // everything else
	}})
	_ = runner
	return err
}

// readmeHealth is "Operating it": the health endpoint.
func readmeHealth(logger *slog.Logger, hotStore, coldStore reconcile.StatusReader, mux *http.ServeMux) (*reconcile.Monitor, error) {
	monitor, err := reconcile.NewMonitor(reconcile.MonitorConfig{Logger: logger, Jobs: []reconcile.MonitorJob{
		{Name: "payments-hot", Status: hotStore, Policy: reconcile.HealthPolicy{LagSLO: 6 * time.Hour}},
		{Name: "payments-cold", Status: coldStore}, // the default policy: a lag SLO of 72 h
	}})
	if err != nil {
		return nil, err
	}
	health, err := reconcile.NewHealthHandler(monitor)
	mux.Handle("GET /reconcile/health", health)
	return monitor, err
}

// readmeConsole is "Operating it": the review console.
func readmeConsole(payments *pgstore.Store[string], monitor *reconcile.Monitor, reviewerOf func(*http.Request) (string, error), mux *http.ServeMux) error {
	// payments is a *pgstore.Store: the console reviews findings through it; the overview shows
	// the Monitor's jobs, judged as the health endpoint judges them. Kinds say what each policy
	// kind means, and which involve money.
	c, err := console.New(console.Config{Store: payments, Monitor: monitor, Kinds: stripepolicy.Kinds(),
		Authenticate: reviewerOf}) // func(*http.Request) (string, error)
	mux.Handle("/review/", http.StripPrefix("/review", c))
	return err
}

// readmeShards is "Scaling past one process".
func readmeShards(ctx context.Context, pool *pgxpool.Pool, store *pgstore.Store[string], gateway *stripeadapter.ObjectGateway[*stripe.PaymentIntent]) error {
	job, err := pgshard.NewJob(store, pgshard.Config{Job: "payments", Shards: 8})
	budget, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_main", Rate: 80, Burst: 10})
	// in each worker process, from any scheduler:
	tick, err := pgshard.RunShard(ctx, job, reconcile.Config[string, *stripe.PaymentIntent]{
		Job: "payments", Gateway: gateway, Classifier: stripepolicy.PaymentIntentPolicy(), Limiter: budget,
	}, reconcile.TickBudget{MaxTime: time.Minute})
	_, _ = tick, budget
	return err
}

// readmeConnect is "Many connected accounts (Connect)".
func readmeConnect(pool *pgxpool.Pool, key string, listAccountIDs func(context.Context) ([]string, error), budget reconcile.Limiter) error {
	platform, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: key}, stripeadapter.PaymentIntents())
	fan, err := reconcile.NewFanOut(reconcile.FanOutConfig{
		Name:     "payments@connect",
		Accounts: listAccountIDs, // SELECT stripe_account_id FROM accounts
		Build: func(acct string) ([]reconcile.FanOutJob, error) {
			store, err := pgstore.New(pool, pgstore.Config{Table: "payments", // this account's rows
				Filter: pgstore.Filter{AnyOf: [][]pgstore.Cond{{{Column: "account_id", Op: pgstore.Eq, Value: acct}}}}})
			if err != nil {
				return nil, err
			}
			gw, err := platform.ForAccount(acct) // the same client, with Stripe-Account: acct
			if err != nil {
				return nil, err
			}
			job := "payments@" + acct // its own cursor
			r, err := reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{Job: job, Source: store, Sink: store,
				Gateway: gw, Classifier: stripepolicy.PaymentIntentPolicy(), Limiter: budget}) // one budget for all
			return []reconcile.FanOutJob{{Job: job, Batches: r, Status: store}}, err
		},
	})
	// run fan like any job: reconcile.RunnerJob{Name: "payments@connect", Batches: fan}
	_ = fan
	return err
}

// pkgdocJob is the root package doc's first example.
func pkgdocJob(ctx context.Context, pool *pgxpool.Pool, key string) error {
	store, err := pgstore.New(pool, pgstore.Config{
		Table:            "payments",
		ExternalIDColumn: "stripe_payment_intent_id",
	})
	if err != nil {
		return err
	}
	gateway, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: key}, stripeadapter.PaymentIntents())
	if err != nil {
		return err
	}
	r, err := reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{
		Job:        "payments",
		Source:     store, // the rows after the job's cursor
		Sink:       store, // observations, findings, repair commands and the cursor
		Gateway:    gateway,
		Classifier: stripepolicy.PaymentIntentPolicy(),
	})
	if err != nil {
		return err
	}
	report, err := r.RunBatch(ctx) // one batch; a Runner calls it on a schedule
	_ = report
	return err
}

// pkgdocRuleTable is the root package doc's rule table.
func pkgdocRuleTable() error {
	classifier, err := reconcile.NewRuleTable(
		func(status string) string { return status },
		func(pi *stripe.PaymentIntent) string { return string(pi.Status) },
		reconcile.Rule[string, *stripe.PaymentIntent]{Local: []string{"pending"}, External: []string{"succeeded"},
			Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}},
		reconcile.Rule[string, *stripe.PaymentIntent]{Local: []string{"paid"}, External: []string{"succeeded"},
			Decision: reconcile.Decision{Verdict: reconcile.InSync}},
	)
	_ = classifier
	return err
}
