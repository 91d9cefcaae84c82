package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/reconcilekit/reconcile"
)

// Real mode: with STRIPE_SECRET_KEY set to a test-mode key, the run plants its PaymentIntents in
// that Stripe account (demo_real_plant.go) and reconciles against Stripe itself. The reconciler, the
// lanes, the repairs and the checks are the ones run uses against stripetest; what differs is
// forced by Stripe:
//
//   - Stripe stamps a PaymentIntent with the time it is created, so the rows are created during
//     the run too, each when its PaymentIntent was (created_at read back from Stripe). Their
//     updated_at is set back 15 minutes, past the sweep's grace period, so that the sweep asks
//     about them as it would about older rows: the one liberty the demo takes with its data.
//   - The account holds other PaymentIntents and events than the run's. Every PaymentIntent the
//     run creates carries the metadata reconcile_demo=<run id>; the reverse scan accounts only
//     for those (ObjectReverseOptions.Include), and the checks count only the run's rows and intents.
//     The lanes' calls, which page through the whole account, are only bounded below.
//   - Stripe lists an event a moment after it happens, so the events feed keeps a 30-second
//     settle time (production keeps a minute), and the run waits it out twice: once after the
//     planting, so that the events lane anchors after the planting's events, and once after
//     the lost webhooks.
//   - The reverse scan's window is the last hour and its grace 30 seconds: every planted intent
//     is minutes old, the Stripe-only ones over a minute old when the scan starts, and the
//     checkout under way is created just before it.
//   - Calls are paced at -rps, 20 a second by default, planting included: test mode allows 25.

// Real mode's defaults and times.
const (
	realRows = 40
	realRPS  = 20
	// realSettle is the events feed's settle time in real mode.
	realSettle = 30 * time.Second
	// clockMargin is added to every wait measured against Stripe's clock: its times are whole
	// seconds, and this machine's clock may be a little off.
	clockMargin = 2 * time.Second
	realWindow  = time.Hour
	realGrace   = 30 * time.Second
	// realUpdatedAgo is how long ago the rows of real mode last changed, but those of a recent
	// story: past the sweep's grace period (reconcile.DefaultGrace).
	realUpdatedAgo = quietBefore
	// metadataKey is the PaymentIntent metadata key whose value is the run's id.
	metadataKey = "reconcile_demo"
)

// realTimes are the lanes' times in real mode.
var realTimes = laneTimes{settle: realSettle, window: realWindow, grace: realGrace, young: "a moment"}

// secretKey is a Stripe API key. It formats as [redacted], so that printing the options, or an
// error built from them, shows no key.
type secretKey string

func (secretKey) String() string   { return "[redacted]" }
func (secretKey) GoString() string { return `"[redacted]"` }

// LogValue logs the key redacted.
func (secretKey) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// testKeyRE matches the keys real mode takes: test-mode secret and restricted keys.
var testKeyRE = regexp.MustCompile(`^(sk|rk)_test_[A-Za-z0-9]+$`)

// checkTestKey refuses any key but a test-mode secret or restricted key, without saying what the
// key is.
func checkTestKey(k secretKey) error {
	s := string(k)
	switch {
	case testKeyRE.MatchString(s):
		return nil
	case strings.HasPrefix(s, "sk_live_"), strings.HasPrefix(s, "rk_live_"):
		return errors.New("payments: STRIPE_SECRET_KEY is a live-mode key, and is refused: real mode creates and confirms " +
			"payments, so it runs in test mode only. Use a test-mode secret key (sk_test_...) or restricted key (rk_test_...), " +
			"from https://dashboard.stripe.com/test/apikeys")
	case strings.HasPrefix(s, "pk_"):
		return errors.New("payments: STRIPE_SECRET_KEY is a publishable key (pk_...), which can neither read nor create " +
			"PaymentIntents: use a test-mode secret key (sk_test_...) or restricted key (rk_test_...)")
	}
	return errors.New("payments: STRIPE_SECRET_KEY is not a Stripe test-mode secret key (sk_test_...) or restricted key " +
		"(rk_test_...); unset it to run against the in-process fake, stripetest")
}

// setRealDefaults gives real mode its defaults for the flags of fs that were not given: fewer
// rows, and a pace under test mode's rate limit.
func setRealDefaults(opts *options, fs *flag.FlagSet) {
	if opts.StripeKey == "" {
		return
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["rows"] {
		opts.Rows = realRows
	}
	if !given["rps"] {
		opts.RPS = realRPS
	}
}

// runReal is run in real mode: the same reconciler, lanes, repairs and checks, over
// PaymentIntents planted in Stripe's test mode.
func runReal(ctx context.Context, out io.Writer, opts options, schema string) error {
	if err := checkTestKey(opts.StripeKey); err != nil {
		return err
	}
	if opts.RPS <= 0 {
		return fmt.Errorf("payments: -rps %g: real mode paces every call to Stripe, planting included; "+
			"give a positive rate under test mode's 25 a second (the default is %d)", opts.RPS, realRPS)
	}
	p, left, err := realPlan(opts.Rows, opts.Seed)
	if err != nil {
		return err
	}
	// One budget for the planting, the sweep and the lanes: the account has one rate limit. It
	// halves its rate when Stripe answers 429, and grows back.
	limiter, err := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{Rate: rate.Limit(opts.RPS), Burst: 1})
	if err != nil {
		return fmt.Errorf("payments: -rps %g: %w", opts.RPS, err)
	}
	rs, err := newRealStripe(opts, limiter)
	if err != nil {
		return err
	}
	times, margin := realTimes, clockMargin
	if rs.wire {
		times, margin = wireTimes, 0
	}

	pool, stopContainer, err := connect(ctx, out, opts, schema)
	if err != nil {
		return err
	}
	defer stopContainer()
	defer pool.Close()

	fmt.Fprintf(out, "Real mode: %s, with %s from STRIPE_SECRET_KEY; run %s.\n", rs.describe(), keyKind(opts.StripeKey), rs.runID)
	if rs.wire {
		fmt.Fprintln(out, "stripe-mock checks every request against Stripe's API specification, but keeps no state: its answers are fixtures.")
	}
	start := time.Now()
	createdAt, err := rs.plant(ctx, p)
	if err != nil {
		return err
	}
	planting := time.Since(start)
	if _, err := load(ctx, pool, schema, p, insertPaymentsAt, createdAt); err != nil {
		return err
	}
	printRealPlan(out, schema, p, left, rs, planting)

	store, err := newStore(pool, schema)
	if err != nil {
		return err
	}
	// What a host gives: its key and no BaseURL (see gatewayConfig).
	gateway, err := newPayments(rs.gatewayConfig())
	if err != nil {
		return fmt.Errorf("payments: %w", err)
	}
	rec, err := reconcilerOver(store, gateway, opts.BatchSize, limiter)
	if err != nil {
		return err
	}
	l, err := lanesOver(store, gateway, times, rs.ours, limiter)
	if err != nil {
		return err
	}

	wait := time.Until(rs.plantedAt.Add(times.settle + margin))
	fmt.Fprintf(out, "\nWaiting %s for Stripe's event log to list the planting's events (the events lane's settle time, %s,\n",
		max(wait, 0).Round(time.Second), times.settle)
	fmt.Fprintf(out, "and %s for the clocks), so that the events lane anchors after them.\n", margin)
	if err := sleep(ctx, wait); err != nil {
		return err
	}
	lr, err := anchorEvents(ctx, out, l, rs.log)
	if err != nil {
		return err
	}
	lr.sharedAccount = true

	fmt.Fprintf(out, "\nReconciling (job %s, the Stripe gateway over HTTP to %s):\n", job, rs.describe())
	c, err := runCycle(ctx, out, rec)
	if err != nil {
		return err
	}
	be := &pgBackend{pool: pool, schema: schema, s: store}
	res, err := collect(ctx, be, rs.log, p, c)
	if err != nil {
		return err
	}
	res.logName = "the gateway's request log"
	printCycle(out, p, res)

	lost := p.where(func(s *story) bool { return s.later != "" })
	changedAt, err := rs.loseWebhooks(ctx, p)
	if err != nil {
		return err
	}
	wait = time.Until(changedAt.Add(times.settle + margin))
	fmt.Fprintf(out, "\nLost webhooks: %d payments the sweep found in sync, awaiting payment, are confirmed at Stripe now with %s;\n",
		len(lost), pmVisa)
	fmt.Fprintf(out, "Stripe records payment_intent.succeeded for each, no webhook reaches this run, and the rows stay pending.\n")
	printMoneyAfter(out, p)
	fmt.Fprintf(out, "Waiting %s for the events to settle.\n", max(wait, 0).Round(time.Second))
	if err := runEventsLane(ctx, out, be, rs.log, p, l, &lr, changedAt, wait); err != nil {
		return err
	}

	if err := rs.checkoutUnderWay(ctx, p); err != nil {
		return err
	}
	// The Stripe-only PaymentIntents must be past the scan's grace by Stripe's clock; after the
	// two waits above they are, unless the planting was slow.
	if wait := time.Until(rs.newestOrphan.Add(times.grace + margin)); wait > 0 {
		fmt.Fprintf(out, "\nWaiting %s for the PaymentIntents only at Stripe to be older than the reverse scan's grace, %s.\n",
			wait.Round(time.Second), times.grace)
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
	if err := runReverseScan(ctx, out, be, rs.log, p, l, &lr); err != nil {
		return err
	}
	printSummary(out, p, res, lr)
	if err := rs.enforce(out, check(out, p, res, lr)); err != nil {
		return err
	}

	rr, err := repair(ctx, pool, schema, store, gateway, p, slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	printRepairs(out, p, rr)
	if err := rs.enforce(out, checkRepairs(out, p, rr)); err != nil {
		return err
	}
	return serveConsole(ctx, out, opts.Console, newReviewer(pool, store, gateway))
}

// keyKind says what kind of key k is, without showing it.
func keyKind(k secretKey) string {
	if strings.HasPrefix(string(k), "rk_") {
		return "a test-mode restricted key"
	}
	return "a test-mode secret key"
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
