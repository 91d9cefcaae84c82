package stripemoney_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripemoney"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// moneyFixture is a stripetest server holding one intent of each kind of money: plain,
// refunded, partly refunded, partly captured, and disputes open and closed.
type moneyFixture struct {
	srv                                     *stripetest.Server
	gw                                      *stripemoney.Gateway
	plain, refunded, partial, captured      string
	open, won, lost, pending, jpy, canceled string
	lookups                                 []reconcile.Lookup
}

func newMoneyFixture(t *testing.T) *moneyFixture {
	t.Helper()
	f := &moneyFixture{srv: stripetest.NewServer(stripetest.Options{})}
	t.Cleanup(f.srv.Close)
	created := time.Now().Add(-time.Hour)
	add := func(pi stripetest.PaymentIntent) string {
		pi.Created = created
		created = created.Add(time.Second)
		if pi.Status == "" {
			pi.Status = stripe.PaymentIntentStatusSucceeded
		}
		if pi.Amount == 0 {
			pi.Amount = 1000
		}
		id := f.srv.AddPaymentIntent(pi)
		f.lookups = append(f.lookups, reconcile.Lookup{ExternalID: id, CreatedAt: time.Unix(pi.Created.Unix(), 0)})
		return id
	}
	must := func(_ string, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	f.plain = add(stripetest.PaymentIntent{})
	f.refunded = add(stripetest.PaymentIntent{})
	must(f.srv.Refund(f.refunded, 0))
	f.partial = add(stripetest.PaymentIntent{})
	must(f.srv.Refund(f.partial, 300))
	f.captured = add(stripetest.PaymentIntent{AmountReceived: 600})
	f.open = add(stripetest.PaymentIntent{})
	must(f.srv.Dispute(f.open, 0, stripe.DisputeStatusNeedsResponse, time.Now().Add(7*24*time.Hour)))
	f.won = add(stripetest.PaymentIntent{})
	must(f.srv.Dispute(f.won, 0, stripe.DisputeStatusWon, time.Time{}))
	f.lost = add(stripetest.PaymentIntent{})
	must(f.srv.Dispute(f.lost, 0, stripe.DisputeStatusLost, time.Time{}))
	f.pending = add(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusRequiresPaymentMethod})
	f.jpy = add(stripetest.PaymentIntent{Currency: "jpy", Amount: 5000})
	f.canceled = add(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusCanceled})
	gw, err := newGateway(stripeadapter.GatewayConfig{Key: f.srv.Key(), BaseURL: f.srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	f.gw = gw
	f.srv.ResetLog()
	return f
}

// countingWait counts the calls FetchBatch announces.
func countingWait(n *int) func(context.Context) error {
	return func(context.Context) error { *n++; return nil }
}

func TestPaymentsReadTheMoneyFromTheChargeAndTheDisputes(t *testing.T) {
	f := newMoneyFixture(t)
	ctx := context.Background()
	calls := 0
	got, err := f.gw.FetchBatch(ctx, f.lookups, countingWait(&calls))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(f.lookups) {
		t.Fatalf("FetchBatch found %d payments of %d", len(got), len(f.lookups))
	}
	// One list call, and one disputes call per disputed charge: refunds come with the charge.
	if lists, disputes, other := f.srv.Requests(stripetest.ListPaymentIntents), f.srv.Requests(stripetest.ListDisputes),
		f.srv.Requests(stripetest.ListRefunds)+f.srv.Requests(stripetest.RetrievePaymentIntent); lists != 1 || disputes != 3 || other != 0 || calls != 4 {
		t.Fatalf("%d list, %d disputes and %d other calls, %d announced; want 1, 3, 0 and 4", lists, disputes, other, calls)
	}
	check := func(id string, received, refunded int64, fully bool, dispute stripe.DisputeStatus) {
		t.Helper()
		p := got[id]
		ch := p.Intent.LatestCharge
		if ch == nil || ch.Object != "charge" {
			t.Fatalf("%s: latest charge not expanded: %+v", id, ch)
		}
		if p.Intent.AmountReceived != received || p.AmountRefunded() != refunded || ch.Refunded != fully {
			t.Errorf("%s: received %d, refunded %d (whole: %t); want %d, %d (%t)", id, p.Intent.AmountReceived, p.AmountRefunded(), ch.Refunded, received, refunded, fully)
		}
		var status stripe.DisputeStatus
		if len(p.Disputes) > 0 {
			status = p.Disputes[0].Status
		}
		if status != dispute || ch.Disputed != (dispute != "") {
			t.Errorf("%s: dispute %q (charge disputed: %t), want %q", id, status, ch.Disputed, dispute)
		}
		if p.Refunds != nil {
			t.Errorf("%s: the sweep read refunds: %+v", id, p.Refunds)
		}
	}
	check(f.plain, 1000, 0, false, "")
	check(f.refunded, 1000, 1000, true, "")
	check(f.partial, 1000, 300, false, "")
	check(f.captured, 600, 0, false, "")
	if ch := got[f.captured].Intent.LatestCharge; ch.AmountRefunded != 400 {
		t.Errorf("the partly captured charge's amount_refunded is %d, want the released 400", ch.AmountRefunded)
	}
	check(f.open, 1000, 0, false, stripe.DisputeStatusNeedsResponse)
	check(f.won, 1000, 0, false, stripe.DisputeStatusWon)
	check(f.lost, 1000, 0, false, stripe.DisputeStatusLost)
	if got[f.pending].Intent.LatestCharge != nil {
		t.Errorf("an intent awaiting a payment method has a charge: %+v", got[f.pending].Intent.LatestCharge)
	}
	if got[f.jpy].Intent.Currency != "jpy" || got[f.jpy].Intent.AmountReceived != 5000 {
		t.Errorf("the JPY intent reads %d %s", got[f.jpy].Intent.AmountReceived, got[f.jpy].Intent.Currency)
	}

	// Closed disputes are kept; the open one is read again, every cycle.
	f.srv.ResetLog()
	calls = 0
	again, err := f.gw.FetchBatch(ctx, f.lookups, countingWait(&calls))
	if err != nil {
		t.Fatal(err)
	}
	if disputes := f.srv.Requests(stripetest.ListDisputes); disputes != 1 || calls != 2 {
		t.Fatalf("second cycle: %d disputes calls, %d announced; want 1 (the open dispute) and 2", disputes, calls)
	}
	if again[f.won].Disputes[0].Status != stripe.DisputeStatusWon || again[f.lost].Disputes[0].Status != stripe.DisputeStatusLost {
		t.Errorf("kept outcomes read %q and %q", again[f.won].Disputes[0].Status, again[f.lost].Disputes[0].Status)
	}
}

func TestPaymentsAreTheSameInBulkAndOneByOne(t *testing.T) {
	f := newMoneyFixture(t)
	ctx := context.Background()
	bulk, err := f.gw.FetchBatch(ctx, f.lookups, func(context.Context) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	// A fresh gateway, so that no outcome is kept: Fetch reads the disputes itself.
	one := newGatewayFor(t, f.srv)
	policy := stripepolicy.PaymentPolicy(paymentView)
	for _, l := range f.lookups {
		p, err := one.Fetch(ctx, l.ExternalID)
		if err != nil {
			t.Fatalf("Fetch %s: %v", l.ExternalID, err)
		}
		row := paymentRow{Status: "paid", Amount: 1000, Currency: "usd"}
		b, o := policy.Classify(row, bulk[l.ExternalID]), policy.Classify(row, p)
		if b.Verdict != o.Verdict || b.Kind != o.Kind || b.Detail != o.Detail || len(b.Diffs) != len(o.Diffs) {
			t.Errorf("%s: bulk decides %+v, one by one %+v", l.ExternalID, b, o)
		}
	}
	if n := f.srv.Requests(stripetest.RetrievePaymentIntent); n != len(f.lookups) {
		t.Errorf("%d retrieves for %d rows", n, len(f.lookups))
	}
	for _, r := range f.srv.Log() {
		if r.Route == stripetest.RetrievePaymentIntent && r.Query.Get("expand[0]") != "latest_charge" {
			t.Errorf("a retrieve without expand: %+v", r)
		}
	}
}

func TestPaymentsFollowUpFailures(t *testing.T) {
	tests := []struct {
		name  string
		fault stripetest.Fault
		is    error
		not   error
	}{
		{"a 500 leaves the row to Fetch", stripetest.Fault{Status: http.StatusInternalServerError}, reconcile.ErrUnavailable, nil},
		{"a 404 is not the intent's absence", stripetest.Fault{Status: http.StatusNotFound, Code: "resource_missing"}, reconcile.ErrUnavailable, reconcile.ErrNotFound},
		{"a 429 stops the batch", stripetest.Fault{Status: http.StatusTooManyRequests}, reconcile.ErrRateLimited, nil},
		{"a 401 aborts it", stripetest.Fault{Status: http.StatusUnauthorized}, reconcile.ErrAbortBatch, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newMoneyFixture(t)
			ctx := context.Background()
			f.srv.Inject(stripetest.ListDisputes, tt.fault)
			got, err := f.gw.FetchBatch(ctx, f.lookups, func(context.Context) error { return nil })
			if !errors.Is(err, tt.is) || (tt.not != nil && errors.Is(err, tt.not)) {
				t.Fatalf("FetchBatch error %v, want one that is %v and not %v", err, tt.is, tt.not)
			}
			for _, id := range []string{f.open, f.won, f.lost} {
				if got[id] != nil {
					t.Errorf("a disputed payment whose disputes could not be read was returned: %s", id)
				}
			}
			if tt.is == reconcile.ErrUnavailable && (got[f.plain] == nil || got[f.refunded] == nil) {
				t.Error("a failed follow-up lost the payments that needed none")
			}
			// One by one, the same failure makes the row Unverifiable: an error, never a payment.
			p, err := f.gw.Fetch(ctx, f.open)
			if p != nil || !errors.Is(err, tt.is) || (tt.not != nil && errors.Is(err, tt.not)) {
				t.Fatalf("Fetch = %+v, %v; want no payment and an error that is %v", p, err, tt.is)
			}
			if p, err := f.gw.Fetch(ctx, f.plain); err != nil || p == nil {
				t.Errorf("Fetch of an undisputed payment = %v, %v", p, err)
			}
		})
	}
}

func TestPaymentsOfAnUnexpandedChargeAreUnavailable(t *testing.T) {
	// A proxy that drops the expansion: the intent alone would hide refunds and disputes.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"pi_1","object":"payment_intent","status":"succeeded","amount":1000,"currency":"usd","latest_charge":"ch_1"}`)
	}))
	t.Cleanup(srv.Close)
	gw, err := newGateway(stripeadapter.GatewayConfig{Key: "sk_test_123", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	p, err := gw.Fetch(context.Background(), "pi_1")
	if p != nil || !errors.Is(err, reconcile.ErrUnavailable) || !strings.Contains(err.Error(), "without its latest charge expanded") {
		t.Fatalf("Fetch = %+v, %v; want ErrUnavailable naming the missing expansion", p, err)
	}
}

func newGatewayFor(t *testing.T, srv *stripetest.Server) *stripemoney.Gateway {
	t.Helper()
	gw, err := newGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	return gw
}

func TestPaymentsStopAskingWhenWaitRefuses(t *testing.T) {
	f := newMoneyFixture(t)
	calls := 0
	refusal := &reconcile.RateLimitError{RetryAfter: time.Second}
	wait := func(context.Context) error { // the list call, then no more
		if calls++; calls > 1 {
			return refusal
		}
		return nil
	}
	got, err := f.gw.FetchBatch(context.Background(), f.lookups, wait)
	if !errors.Is(err, reconcile.ErrRateLimited) {
		t.Fatalf("FetchBatch error %v, want the limiter's refusal", err)
	}
	if n := f.srv.Requests(stripetest.ListDisputes); n != 0 {
		t.Errorf("%d disputes calls after the refusal", n)
	}
	for _, id := range []string{f.open, f.won, f.lost} {
		if got[id] != nil {
			t.Errorf("%s was returned without its disputes", id)
		}
	}
	// Those that need no call are found all the same.
	for _, id := range []string{f.plain, f.refunded, f.partial, f.captured, f.pending, f.jpy, f.canceled} {
		if got[id] == nil {
			t.Errorf("%s, which needs no follow-up, was not returned", id)
		}
	}
}

func TestNewRefusesAGatewayWhoseIntentsLackTheirCharge(t *testing.T) {
	t.Parallel()
	cfg := stripeadapter.GatewayConfig{Key: "sk_test_123", BaseURL: "http://127.0.0.1:1"}
	bare := stripeadapter.PaymentIntents()
	bare.Expand = nil
	other := stripeadapter.PaymentIntents()
	other.Path = "/v1/setup_intents"
	tests := []struct {
		name string
		obj  *stripeadapter.Object[*stripe.PaymentIntent]
	}{
		{"no gateway", nil},
		{"intents without their latest charge expanded: refunds and disputes would be unseen", &bare},
		{"another collection", &other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var intents *stripeadapter.ObjectGateway[*stripe.PaymentIntent]
			if tt.obj != nil {
				var err error
				if intents, err = stripeadapter.NewObjectGateway(cfg, *tt.obj); err != nil {
					t.Fatal(err)
				}
			}
			if g, err := stripemoney.New(intents, stripemoney.Config{}); err == nil || !strings.HasPrefix(err.Error(), "stripemoney: ") {
				t.Fatalf("New = %v, %v; want a stripemoney: error", g, err)
			}
		})
	}
	intents, err := stripeadapter.NewObjectGateway(cfg, stripeadapter.PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	if g, err := stripemoney.New(intents, stripemoney.Config{}); err != nil || g.Intents() != intents {
		t.Fatalf("New over PaymentIntents() = %v, %v; want the gateway over them", g, err)
	}
}
