package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// lanesOptions configures one lanes benchmark run.
type lanesOptions struct {
	Rows     int // payments rows, each with its PaymentIntent
	Missed   int // pending rows whose intent succeeds with the webhook lost
	Noise    int // other status changes (pending intents moving to processing: InFlight)
	Orphans  int // intents with no row
	Settle   time.Duration
	Interval time.Duration // how often the events lane runs
	Progress io.Writer
}

// lanesResult is the lanes subcommand's JSON line.
type lanesResult struct {
	Rows      int     `json:"rows"`
	Missed    int     `json:"missed"`
	Events    int     `json:"events"`
	SettleS   float64 `json:"settle_s"`
	IntervalS float64 `json:"interval_s"`
	// DetectSeconds is the time from the last missed event to the moment all its findings
	// (and commands) were committed, with the events lane run every Interval.
	DetectSeconds float64 `json:"detect_seconds"`
	// StepSeconds is the wall time of the lane run that found them.
	StepSeconds float64 `json:"step_seconds"`
	// APICalls is the events lane's list calls to read all the events (after its anchor).
	APICalls       int     `json:"api_calls"`
	EventsPerCall  float64 `json:"events_per_call"`
	FoundMissed    int     `json:"found_missed"`
	Commands       int     `json:"commands"`
	ReverseObjects int     `json:"reverse_objects"`
	ReverseCalls   int     `json:"reverse_api_calls"`
	// APICallsPerObject is a full reverse pass's list calls per PaymentIntent in its window.
	APICallsPerObject float64 `json:"api_calls_per_object"`
	ReverseSeconds    float64 `json:"reverse_seconds"`
	Orphans           int     `json:"orphans"`
	OrphansFound      int     `json:"orphans_found"`
}

func lanesCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lanes", flag.ContinueOnError)
	var o lanesOptions
	fs.IntVar(&o.Rows, "rows", 20000, "payments rows (and PaymentIntents), created over the last 6 days")
	fs.IntVar(&o.Missed, "missed", 200, "pending rows whose PaymentIntent succeeds while the webhook is lost")
	fs.IntVar(&o.Noise, "noise", 1800, "other status changes the events lane reads (pending intents moving to processing)")
	fs.IntVar(&o.Orphans, "orphans", 20, "PaymentIntents with no row, for the reverse scan")
	fs.DurationVar(&o.Settle, "settle", 5*time.Second, "the events feed's settle time (production default 1m)")
	fs.DurationVar(&o.Interval, "interval", 5*time.Second, "how often the events lane runs (e.g. 1m in production)")
	schema := fs.String("schema", "bench_lanes", "schema to drop, recreate and work in")
	if err := parseFlags(fs, args, stderr,
		"usage: go run ./tools/bench lanes [flags]",
		"The events catch-up lane finding missed webhooks (detection time, API calls) and one full",
		"reverse-scan pass (API calls per object), over HTTP to stripetest. Database: $DATABASE_URL.",
	); err != nil {
		return err
	}
	switch {
	case o.Rows <= 0 || o.Missed < 0 || o.Noise < 0 || o.Orphans < 0 || o.Settle <= 0 || o.Interval <= 0:
		return errors.New("bench: lanes: -rows, -settle and -interval must be positive, the counts not negative")
	case o.Missed+o.Noise > o.Rows/2:
		return fmt.Errorf("bench: lanes: -missed + -noise (%d) must be at most half of -rows (the pending ones)", o.Missed+o.Noise)
	}
	pool, drop, err := benchSchema(ctx, *schema, stderr)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer drop()
	o.Progress = stderr
	res, err := runLanes(ctx, pool, *schema, o)
	if err != nil {
		return err
	}
	return emit(stdout, res)
}

// runLanes loads the rows (even ones pending, odd ones paid, all in sync), anchors the events
// lane, makes the status changes, runs the events lane every Interval until every missed
// success is found, then runs one reverse pass.
func runLanes(ctx context.Context, pool *pgxpool.Pool, schema string, o lanesOptions) (lanesResult, error) {
	res := lanesResult{Rows: o.Rows, Missed: o.Missed, Events: o.Missed + o.Noise, Orphans: o.Orphans,
		SettleS: o.Settle.Seconds(), IntervalS: o.Interval.Seconds()}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()
	start := time.Now().Add(-6 * 24 * time.Hour)
	step := 6 * 24 * time.Hour / time.Duration(o.Rows)
	local := func(i int) (string, stripe.PaymentIntentStatus) {
		if i%2 == 0 {
			return stripepolicy.LocalPending, stripe.PaymentIntentStatusRequiresPaymentMethod
		}
		return stripepolicy.LocalPaid, stripe.PaymentIntentStatusSucceeded
	}
	pis := make([]stripetest.PaymentIntent, o.Rows, o.Rows+o.Orphans)
	for i := range pis {
		_, st := local(i)
		pis[i] = stripetest.PaymentIntent{Status: st, Created: start.Add(time.Duration(i) * step), Amount: int64(1000 + i%5000)}
	}
	for i := range o.Orphans {
		pis = append(pis, stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Created: start.Add(time.Duration(i) * time.Hour)})
	}
	ids := srv.AddPaymentIntents(pis)

	rows := make([][]any, o.Rows)
	for i := range rows {
		st, _ := local(i)
		created := start.Add(time.Duration(i) * step)
		rows[i] = []any{fmt.Sprintf("o_%d", i), ids[i], st, created, created}
	}
	store, _, err := copyPayments(ctx, pool, schema, []string{"order_id", "stripe_payment_intent_id", "status", "created_at", "updated_at"}, rows)
	if err != nil {
		return res, err
	}
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}, stripeadapter.PaymentIntents())
	if err != nil {
		return res, err
	}
	newLane := func(name string, feed reconcile.Feed[*stripe.PaymentIntent], missing bool) (*reconcile.Lane[string, *stripe.PaymentIntent], error) {
		return reconcile.NewLane(reconcile.LaneConfig[string, *stripe.PaymentIntent]{Job: "bench", Lane: name, Feed: feed,
			Matcher: store, Sink: store, Classifier: stripepolicy.PaymentIntentPolicy(), ReportMissing: missing})
	}
	evFeed, err := gw.EventsFeed(stripeadapter.EventsOptions{Settle: o.Settle})
	if err != nil {
		return res, err
	}
	events, err := newLane("events", evFeed, false)
	if err != nil {
		return res, err
	}
	if _, err := events.RunBatch(ctx); err != nil { // the anchor
		return res, err
	}
	fmt.Fprintf(progress, "lanes: loaded %d rows; %d status changes at Stripe, %d of them missed successes\n", o.Rows, res.Events, o.Missed)

	// Pending rows are the even ones: the first Noise move to processing, the next Missed succeed.
	srv.ResetLog()
	for k := range o.Noise {
		if err := srv.SetStatus(ids[2*k], stripe.PaymentIntentStatusProcessing); err != nil {
			return res, err
		}
	}
	for k := range o.Missed {
		if err := srv.SetStatus(ids[2*(o.Noise+k)], stripe.PaymentIntentStatusSucceeded); err != nil {
			return res, err
		}
	}
	lastMissed := time.Now()

	found := func() (int, error) {
		var n int
		err := pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "reconcile_findings"}.Sanitize()+
			" WHERE kind = $1", stripepolicy.KindMissedSuccess).Scan(&n)
		return n, err
	}
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	deadline := time.After(o.Settle + 20*o.Interval + time.Minute)
	for res.FoundMissed < o.Missed {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-deadline:
			return res, fmt.Errorf("bench: lanes: only %d of %d missed successes found in time", res.FoundMissed, o.Missed)
		case <-tick.C:
		}
		stepStart := time.Now()
		tr, err := reconcile.RunTick(ctx, events, reconcile.TickBudget{MaxRows: 1 << 30})
		if err != nil {
			return res, err
		}
		if res.FoundMissed, err = found(); err != nil {
			return res, err
		}
		res.Commands += tr.NewCommands
		if res.FoundMissed == o.Missed {
			res.DetectSeconds = round(time.Since(lastMissed).Seconds(), 2)
			res.StepSeconds = round(time.Since(stepStart).Seconds(), 3)
		}
	}
	// Read whatever the last step left (events of the same second), so the count is complete.
	if _, err := reconcile.RunTick(ctx, events, reconcile.TickBudget{MaxRows: 1 << 30}); err != nil {
		return res, err
	}
	res.APICalls = srv.Requests(stripetest.ListEvents)
	if res.APICalls > 0 {
		res.EventsPerCall = round(float64(res.Events)/float64(res.APICalls), 1)
	}
	fmt.Fprintf(progress, "lanes: events lane found %d missed successes %.2f s after the last one, %d list calls\n",
		res.FoundMissed, res.DetectSeconds, res.APICalls)

	rvFeed, err := gw.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.PaymentIntent]{})
	if err != nil {
		return res, err
	}
	reverse, err := newLane("reverse", rvFeed, true)
	if err != nil {
		return res, err
	}
	srv.ResetLog()
	rvStart := time.Now()
	tr, err := reconcile.RunTick(ctx, reverse, reconcile.TickBudget{MaxRows: 1 << 30})
	if err != nil {
		return res, err
	}
	if !tr.Wrapped {
		return res, fmt.Errorf("bench: lanes: the reverse pass did not complete: %+v", tr)
	}
	res.ReverseSeconds = round(time.Since(rvStart).Seconds(), 3)
	res.ReverseCalls = srv.Requests(stripetest.ListPaymentIntents)
	res.ReverseObjects = o.Rows + o.Orphans
	res.APICallsPerObject = round(float64(res.ReverseCalls)/float64(res.ReverseObjects), 4)
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "reconcile_findings"}.Sanitize()+
		" WHERE kind = $1", reconcile.KindMissingLocally).Scan(&res.OrphansFound); err != nil {
		return res, err
	}
	switch {
	case res.Commands != o.Missed:
		return res, fmt.Errorf("bench: lanes: %d commands queued for %d missed successes", res.Commands, o.Missed)
	case res.OrphansFound != o.Orphans:
		return res, fmt.Errorf("bench: lanes: the reverse pass found %d of %d orphans", res.OrphansFound, o.Orphans)
	}
	return res, nil
}
