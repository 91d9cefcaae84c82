package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/stripemock"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stripemock.Stop() // no stripe-mock outlives the test binary
	os.Exit(code)
}

// There is no network where these tests run: real mode is checked against stripe-mock, Stripe's
// own mock, which validates every request against Stripe's OpenAPI specification (a parameter
// Stripe does not know is a 400) but keeps no state. What real Stripe does over time is not
// tested here.

// wireKey is the key of the wire test; stripe-mock takes any test key.
const wireKey = "sk_test_wireTest0123456789abcdef"

func TestRealModeAgainstStripeMockSendsOnlyRequestsStripeAccepts(t *testing.T) {
	var out bytes.Buffer
	opts := testOptions(t)
	opts.Rows, opts.BatchSize, opts.RPS, opts.Seed = realRows, 200, 1000, 1
	opts.StripeKey, opts.stripeMock = wireKey, stripemock.URL(t)
	// Any request stripe-mock refused would fail the planting or a lane's step, and so the run.
	if err := run(t.Context(), &out, opts); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	got := out.String()
	if strings.Contains(got, wireKey) || strings.Contains(got, "wireTest") {
		t.Errorf("the output shows the key:\n%s", got)
	}

	p, _, err := realPlan(realRows, 1)
	if err != nil {
		t.Fatal(err)
	}
	var creates, cancels, refunds int
	for _, pay := range slices.Concat(p.payments, p.stripeOnly) {
		r, cannot := recipeOf(pay.story)
		switch {
		case cannot != "":
			t.Errorf("the real plan holds %q, which cannot be made: %s", pay.story.name, cannot)
		case pay.story.notFound, pay.story.young:
		default:
			creates++
			if r.cancel {
				cancels++
			}
			if r.refund && !pay.story.money.afterSweep {
				refunds++
			}
		}
	}
	if refunds == 0 {
		t.Error("the real plan refunds nothing before the sweep")
	}
	for _, want := range []string{
		"Real mode: stripe-mock at " + opts.stripeMock,
		"with a test-mode secret key from STRIPE_SECRET_KEY; run ",
		fmt.Sprintf(": %d PaymentIntents, %d API calls (%d creates, %d cancels, %d refunds), each with the metadata\nreconcile_demo=",
			creates, creates+cancels+refunds, creates, cancels, refunds),
		`Left out in real mode, their rows planted as "in sync: paid" instead:`,
		"    in flight: processing at Stripe         2 rows: no test card stays processing\n",
		"    Stripe unavailable                      1 row: an outage cannot be ordered\n",
		"created with pm_card_authenticationRequired, confirm=true",
		"Events lane (job payments-sweep, lane events): anchored at Stripe's newest event, 1 API call",
		"Reconciling (job payments-sweep, the Stripe gateway over HTTP to stripe-mock at ",
		"  batch   1  scanned   40",
		"short read: the cycle is complete",
		"Stripe API calls (the gateway's request log)",
		"Lost webhooks: 1 payments the sweep found in sync, awaiting payment, are confirmed at Stripe now with pm_card_visa;",
		"Events lane: waited out its 1ms settle time, then ran until caught up: 1 step,",
		"Reverse scan: one full pass over the PaymentIntents created in the last 1 hour but the last 30 seconds,",
		"POST /webhooks/stripe  200  payment ",
		"(stripe-mock answers with fixtures, not the planted drift: these differences are expected there and not enforced.)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}

	// stripe-mock's answers are fixtures, so the counts of what was found differ from what was
	// planted; but the counts of how the reconciler went about it hold whatever Stripe answers.
	diffs := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  (\S.*?) +want +-?\d+, got +-?\d+$`).FindAllStringSubmatch(got, -1) {
		diffs[m[1]] = true
	}
	if len(diffs) == 0 {
		t.Errorf("no differences printed: against stripe-mock's fixtures some are expected:\n%s", got)
	}
	for _, mechanical := range []string{
		"API calls the batches reported, one per request to Stripe",
		"Stripe requests about rows inside the grace period",
		"PaymentIntents retrieved more than once",
		"Stripe requests answered with an error not planted",
		"cycles completed",
		"events lane: anchor steps, judging nothing",
		"events lane: anchor API calls",
		"events lane: API calls reported, one per request to Stripe",
		"events lane: API calls, one per hundred events",
		"reverse scan: API calls reported, one per request to Stripe",
		"reverse scan: API calls, one per hundred listed",
		"reverse scan: commands queued",
		"other PaymentIntents reported missing_locally",
		"lanes in store.Status",
		"events lane: catch-ups completed",
		"reverse scan: passes completed",
		"lane health checks failing",
		"repair commands dead or waiting",
	} {
		if diffs[mechanical] {
			t.Errorf("against stripe-mock, %q differs:\n%s", mechanical, got)
		}
	}
}

func TestRealModePlantsWithRequestsStripeAccepts(t *testing.T) {
	// The planting alone, every recipe, the later confirmation and the checkout under way.
	opts := options{RPS: 1000, StripeKey: wireKey, stripeMock: stripemock.URL(t)}
	rs, err := newRealStripe(opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs.limiter = unlimited{}
	p, _, err := realPlan(realRows, 3)
	if err != nil {
		t.Fatal(err)
	}
	planIDs := externalIDs(slices.Concat(p.payments, p.stripeOnly))
	createdAt, err := rs.plant(t.Context(), p)
	if err != nil {
		t.Fatalf("plant against stripe-mock: %v", err)
	}
	if len(createdAt) != len(p.payments) {
		t.Fatalf("%d created times for %d rows", len(createdAt), len(p.payments))
	}
	ids := map[string]bool{}
	for i, pay := range slices.Concat(p.payments, p.stripeOnly) {
		switch {
		case pay.story.notFound || pay.story.young:
			if pay.externalID != planIDs[i] {
				t.Errorf("%q: id %s changed to %s", pay.story.name, planIDs[i], pay.externalID)
			}
		case pay.externalID == planIDs[i] || !stripeadapter.ValidPaymentIntentID(pay.externalID):
			t.Errorf("%q: id %s, want the one stripe-mock made", pay.story.name, pay.externalID)
		case ids[pay.externalID]:
			t.Errorf("%q: id %s given twice", pay.story.name, pay.externalID)
		}
		ids[pay.externalID] = true
		if i < len(createdAt) && createdAt[i].IsZero() {
			t.Errorf("row %d has no created_at", i)
		}
	}
	if _, err := rs.loseWebhooks(t.Context(), p); err != nil {
		t.Fatalf("confirm against stripe-mock: %v", err)
	}
	if err := rs.checkoutUnderWay(t.Context(), p); err != nil {
		t.Fatalf("create the checkout under way against stripe-mock: %v", err)
	}
	if young := p.stripeOnly[len(p.stripeOnly)-1]; !young.story.young || young.externalID == planIDs[len(planIDs)-1] {
		t.Errorf("the checkout under way has id %s, want the one stripe-mock made", young.externalID)
	}
	if rs.confirms.Load() != int64(len(p.where(func(s *story) bool { return s.later != "" }))) {
		t.Errorf("%d confirmations, want one per lost webhook", rs.confirms.Load())
	}
	refunded := p.where(func(s *story) bool { r, _ := recipeOf(s); return r.refund })
	if len(refunded) == 0 || rs.refunds.Load() != int64(len(refunded)) {
		t.Errorf("%d refunds, want one per payment of a refunded story (%d)", rs.refunds.Load(), len(refunded))
	}
}

// unlimited is a limiter that never waits.
type unlimited struct{}

func (unlimited) Wait(ctx context.Context) error { return ctx.Err() }

func TestRealModeRefusesEveryKeyButATestKey(t *testing.T) {
	for _, tc := range []struct {
		name, key, says string
	}{
		{"a live secret key", "sk_live_51AbCdEfGhIjKlMnOpQrStUv", "live-mode key, and is refused"},
		{"a live restricted key", "rk_live_51AbCdEfGhIjKlMnOpQrStUv", "live-mode key, and is refused"},
		{"a publishable key", "pk_test_51AbCdEfGhIjKlMnOpQrStUv", "publishable key"},
		{"a webhook secret", "whsec_51AbCdEfGhIjKlMnOpQrStUv", "not a Stripe test-mode secret key"},
		{"a test prefix alone", "sk_test_", "not a Stripe test-mode secret key"},
		{"a test key with a quote in it", `sk_test_51AbCd"EfGh`, "not a Stripe test-mode secret key"},
	} {
		t.Run(tc.name+" is refused without being shown", func(t *testing.T) {
			var out bytes.Buffer
			// A database that does not answer: the key is refused before it is needed.
			err := run(t.Context(), &out, options{DatabaseURL: "postgres://nobody@127.0.0.1:1/none?sslmode=disable",
				Rows: 40, BatchSize: 200, RPS: 20, Seed: 1, StripeKey: secretKey(tc.key)})
			if err == nil {
				t.Fatal("run succeeded")
			}
			if !strings.Contains(err.Error(), tc.says) || !strings.HasPrefix(err.Error(), "payments: STRIPE_SECRET_KEY is ") {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
			secret := tc.key[strings.LastIndex(tc.key, "_")+1:]
			if secret != "" && (strings.Contains(err.Error(), secret) || strings.Contains(out.String(), secret)) {
				t.Errorf("the key shows: error %q, output %q", err, out.String())
			}
		})
	}
	for _, key := range []string{"sk_test_51AbCdEfGhIjKlMnOpQrStUv", "rk_test_51AbCdEfGhIjKlMnOpQrStUv"} {
		if err := checkTestKey(secretKey(key)); err != nil {
			t.Errorf("checkTestKey(%s...): %v", key[:8], err)
		}
	}
}

func TestRealModeNeedsAPace(t *testing.T) {
	err := run(t.Context(), io.Discard, options{DatabaseURL: "postgres://nobody@127.0.0.1:1/none?sslmode=disable",
		Rows: 40, BatchSize: 200, RPS: 0, Seed: 1, StripeKey: wireKey})
	if err == nil || !strings.Contains(err.Error(), "-rps 0: real mode paces every call") {
		t.Errorf("run with -rps 0 in real mode: %v", err)
	}
}

func TestTheKeyPrintsRedacted(t *testing.T) {
	opts := options{StripeKey: wireKey, DatabaseURL: "postgres://x"}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("options", "key", opts.StripeKey)
	for _, s := range []string{fmt.Sprint(opts), fmt.Sprintf("%+v", opts), fmt.Sprintf("%#v", opts), logged.String()} {
		if strings.Contains(s, "wireTest") || !strings.Contains(s, "[redacted]") {
			t.Errorf("the key is not redacted: %s", s)
		}
	}
	rs := &realStripe{key: func() secretKey { return wireKey }}
	msg := `Invalid API Key provided: sk_test_****cdef; also ` + wireKey + ` and rk_live_abc`
	if got := rs.redact(msg); strings.Contains(got, "_test_") || strings.Contains(got, "rk_live") || strings.Contains(got, "wireTest") {
		t.Errorf("redact(%q) = %q", msg, got)
	}
}

func TestRealDefaultsApplyOnlyToFlagsNotGiven(t *testing.T) {
	for _, tc := range []struct {
		name      string
		key       secretKey
		args      []string
		rows      int
		rps       float64
		unchanged bool
	}{
		{name: "without a key nothing changes", args: nil, rows: 3000, rps: 0},
		{name: "with a key the defaults are real mode's", key: wireKey, rows: realRows, rps: realRPS},
		{name: "with a key given flags stay", key: wireKey, args: []string{"-rows", "100", "-rps", "5"}, rows: 100, rps: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("payments", flag.ContinueOnError)
			opts := options{StripeKey: tc.key}
			fs.IntVar(&opts.Rows, "rows", 3000, "")
			fs.Float64Var(&opts.RPS, "rps", 0, "")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			setRealDefaults(&opts, fs)
			if opts.Rows != tc.rows || opts.RPS != tc.rps {
				t.Errorf("rows %d, rps %g; want %d, %g", opts.Rows, opts.RPS, tc.rows, tc.rps)
			}
		})
	}
}

func TestRealPlanLeavesOutWhatNoTestCardMakes(t *testing.T) {
	p, left, err := realPlan(realRows, 1)
	if err != nil {
		t.Fatal(err)
	}
	full, _ := newPlan(realRows, 1)
	if len(p.payments) != realRows {
		t.Fatalf("%d rows, want %d", len(p.payments), realRows)
	}
	var leftNames []string
	leftRows := 0
	for _, l := range left {
		leftNames = append(leftNames, l.story.name)
		leftRows += l.rows
	}
	if want := []string{"in flight: processing at Stripe", "Stripe unavailable", "dispute lost", "refund fails after the sweep",
		"disputed after the sweep"}; !slices.Equal(leftNames, want) {
		t.Errorf("left out %q, want %q", leftNames, want)
	}
	for i := range stories {
		s := &stories[i]
		_, cannot := recipeOf(s)
		switch {
		case cannot != "" && p.counts[i] != 0:
			t.Errorf("%q cannot be made but has %d rows", s.name, p.counts[i])
		case i == 0 && p.counts[i] != full.counts[i]+leftRows:
			t.Errorf("%q has %d rows, want %d and the %d left out", s.name, p.counts[i], full.counts[i], leftRows)
		case i > 0 && cannot == "" && p.counts[i] != full.counts[i]:
			t.Errorf("%q has %d rows, want %d as in the default plan", s.name, p.counts[i], full.counts[i])
		}
	}
	for i, pay := range p.payments {
		if _, cannot := recipeOf(pay.story); cannot != "" {
			t.Errorf("row %d tells %q, which cannot be made", i, pay.story.name)
		}
		if pay.intentAfter < 0 || pay.intentAfter > intentLag {
			t.Errorf("row %d: intent created %v after it", i, pay.intentAfter)
		}
		if want := realUpdatedAgo; !pay.story.recent && pay.updatedAgo != want {
			t.Errorf("row %d last changed %v ago, want %v", i, pay.updatedAgo, want)
		}
	}
	// What must be found is what was planted, and some of every kind of drift is.
	e := p.expected()
	if e.unavailable != 0 || e.notFound == 0 || e.missed == 0 || e.orphans == 0 || len(e.commands) != 3 ||
		e.commands[stripepolicy.CommandApplyRefund] == 0 || e.findings[stripepolicy.KindCurrencyMismatch] == 0 {
		t.Errorf("the real plan expects %+v", e)
	}
}

func TestRequestLogCountsWhatStripetestCounts(t *testing.T) {
	// The same gateway calls through the log to stripetest: the client's log and the server's
	// must agree on every request.
	srv := stripetest.NewServer(stripetest.Options{})
	t.Cleanup(srv.Close)
	srv.AddPaymentIntent(stripetest.PaymentIntent{ID: "pi_known", Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000,
		Created: time.Now().Add(-time.Hour)}) // past the reverse scan's grace
	if _, err := srv.Dispute("pi_known", 1000, stripe.DisputeStatusNeedsResponse, time.Now().Add(disputeDue)); err != nil {
		t.Fatal(err)
	}
	reqs := newRequestLog(nil)
	g, err := newPayments(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL(),
		HTTPClient: &http.Client{Transport: reqs}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// The calls the run makes: a payment whose charge is disputed, read with its disputes; one
	// Stripe does not have; a reverse scan's page, the disputed charge's disputes again (its
	// outcome is not final); the events lane's anchor.
	_, _ = g.Fetch(ctx, "pi_known")
	_, _ = g.Fetch(ctx, "pi_unknown")
	feed, err := g.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.PaymentIntent]{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := feed.Next(ctx, "", func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	events, err := g.EventsFeed(stripeadapter.EventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := events.Next(ctx, "", func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}

	type seen struct {
		route  stripetest.Route
		path   string
		query  string
		status int
	}
	simplify := func(log []stripetest.Request) []seen {
		var out []seen
		for _, r := range log {
			out = append(out, seen{r.Route, r.Path, r.Query.Encode(), r.Status})
		}
		return out
	}
	client, server := simplify(reqs.Log()), simplify(srv.Log())
	if !slices.Equal(client, server) || len(client) != 6 {
		t.Errorf("the client logged\n%+v\nstripetest logged\n%+v", client, server)
	}
	for route, want := range map[stripetest.Route]int{
		stripetest.RetrievePaymentIntent: 2, stripetest.ListDisputes: 2, stripetest.ListPaymentIntents: 1, stripetest.ListEvents: 1,
	} {
		if got := reqs.Requests(route); got != want {
			t.Errorf("Requests(%s) = %d, want %d", route, got, want)
		}
	}
	if statuses := strconv.Itoa(client[0].status) + "," + strconv.Itoa(client[2].status); statuses != "200,404" {
		t.Errorf("retrieves answered %s, want 200,404", statuses)
	}
	reqs.ResetLog()
	if len(reqs.Log()) != 0 {
		t.Error("ResetLog left requests in the log")
	}
}

func TestRouteOfNamesStripetestsRoutes(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         stripetest.Route
	}{
		{"GET", "/v1/payment_intents", stripetest.ListPaymentIntents},
		{"GET", "/v1/payment_intents/pi_123", stripetest.RetrievePaymentIntent},
		{"GET", "/v1/events", stripetest.ListEvents},
		{"GET", "/v1/events/evt_1", stripetest.RetrieveEvent},
		{"POST", "/v1/payment_intents", ""},
		{"GET", "/v1/payment_intents/pi_123/confirm", ""},
		{"GET", "/v1/payment_intents/", ""},
		{"GET", "/v1/payment_intentsx", ""},
		{"GET", "/v1/charges", ""}, // charges are read one at a time, never listed
		{"GET", "/v1/charges/ch_1", stripetest.RetrieveCharge},
		{"GET", "/v1/refunds", stripetest.ListRefunds},
		{"GET", "/v1/refunds/re_1", stripetest.RetrieveRefund},
		{"GET", "/v1/disputes", stripetest.ListDisputes},
		{"GET", "/v1/disputes/dp_1", stripetest.RetrieveDispute},
	} {
		if got := routeOf(tc.method, tc.path); got != tc.want {
			t.Errorf("routeOf(%s %s) = %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}

func TestRealModeErrorsNeverShowTheKey(t *testing.T) {
	// Stripe's error messages quote the key, masked; the planter's errors must not.
	for _, tc := range []struct {
		status int
		says   string
	}{
		{http.StatusUnauthorized, "Stripe rejected STRIPE_SECRET_KEY"},
		{http.StatusForbidden, "a restricted key needs PaymentIntents: write"},
		{http.StatusTooManyRequests, "lower -rps"},
		{http.StatusBadRequest, "Stripe answered 400 parameter_unknown"},
	} {
		t.Run(fmt.Sprintf("a %d answer", tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				fmt.Fprintf(w, `{"error":{"type":"invalid_request_error","code":"parameter_unknown","message":"Invalid API Key provided: sk_test_****cdef (%s)"}}`, wireKey)
			}))
			t.Cleanup(srv.Close)
			rs, err := newRealStripe(options{StripeKey: wireKey, stripeMock: srv.URL}, unlimited{})
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := realPlan(realRows, 1)
			if err != nil {
				t.Fatal(err)
			}
			_, err = rs.plant(t.Context(), p)
			if err == nil {
				t.Fatal("planting succeeded")
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
			if strings.Contains(err.Error(), "wireTest") || strings.Contains(err.Error(), "sk_test_") {
				t.Errorf("error shows the key: %q", err)
			}
		})
	}
}

func TestRealModeGatewayIsAHostsGateway(t *testing.T) {
	rs, err := newRealStripe(options{StripeKey: wireKey}, unlimited{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rs.gatewayConfig()
	if cfg.Key != wireKey || cfg.BaseURL != "" || cfg.Client != nil || cfg.StripeAccount != "" {
		t.Errorf("real mode's gateway config %v, want the key and no BaseURL", cfg)
	}
	if _, ok := cfg.HTTPClient.Transport.(*requestLog); !ok {
		t.Errorf("the gateway's transport is %T, want the request log", cfg.HTTPClient.Transport)
	}
	if rs.ours(&stripe.PaymentIntent{Metadata: map[string]string{metadataKey: "other-run"}}) ||
		!rs.ours(&stripe.PaymentIntent{Metadata: map[string]string{metadataKey: rs.runID}}) {
		t.Error("ours does not go by the run id in the metadata")
	}
}

func TestRealStripePrintsWithoutItsKey(t *testing.T) {
	rs := &realStripe{runID: "r1", key: func() secretKey { return wireKey }}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if got := fmt.Sprintf(verb, rs); strings.Contains(got, "wireTest") {
			t.Errorf("%s of a realStripe shows the key: %s", verb, got)
		}
		if got := fmt.Sprintf(verb, struct{ rs *realStripe }{rs}); strings.Contains(got, "wireTest") {
			t.Errorf("%s of a struct holding a realStripe shows the key: %s", verb, got)
		}
	}
}
