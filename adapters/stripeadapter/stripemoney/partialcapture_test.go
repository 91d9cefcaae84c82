package stripemoney_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// A partly captured payment read over HTTP: the released remainder Stripe counts in the
// charge's amount_refunded is no refund, and once the row records the capture, its refunds
// and disputes are judged as any payment's.
func TestAPartialCaptureIsJudgedOnWhatWasCaptured(t *testing.T) {
	srv := stripetest.NewServer(stripetest.Options{})
	t.Cleanup(srv.Close)
	pi := srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000, AmountReceived: 600,
		Created: time.Now().Add(-time.Hour)})
	gw, err := newGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	policy := stripepolicy.PaymentPolicy(func(lp stripepolicy.LocalPayment) stripepolicy.LocalPayment { return lp })
	row := stripepolicy.LocalPayment{Status: "paid", Amount: 1000, Currency: "usd"}
	recorded := row
	recorded.AmountCaptured = 600
	judge := func(lp stripepolicy.LocalPayment) reconcile.Decision {
		t.Helper()
		p, err := gw.Fetch(context.Background(), pi)
		if err != nil {
			t.Fatal(err)
		}
		return policy.Classify(lp, p)
	}
	check := func(step string, got reconcile.Decision, kind string, diffs ...reconcile.Diff) {
		t.Helper()
		if got.Kind != kind {
			t.Errorf("%s: %s %q (%s), want %q", step, got.Verdict, got.Kind, got.Detail, kind)
		}
		if d := cmp.Diff(diffs, got.Diffs); d != "" {
			t.Errorf("%s: diffs (-want +got):\n%s", step, d)
		}
	}

	check("the row counting on the whole amount", judge(row), "partial_capture", diff("amount_captured", "USD 10.00", "USD 6.00"))
	check("the row recording the capture", judge(recorded), "")

	if _, err := srv.Refund(pi, 200); err != nil {
		t.Fatal(err)
	}
	check("a partial refund", judge(recorded), "missed_partial_refund", diff("amount_refunded", "USD 0.00", "USD 2.00"))
	recorded.AmountRefunded = 200
	check("the partial refund recorded", judge(recorded), "")

	if _, err := srv.Refund(pi, 0); err != nil {
		t.Fatal(err)
	}
	check("the rest refunded", judge(recorded), "missed_refund", diff("amount_refunded", "USD 2.00", "USD 6.00"))
	recorded.AmountRefunded = 600
	check("the refunds recorded", judge(recorded), "")
}

func TestALostDisputeOnARecordedPartialCaptureIsFound(t *testing.T) {
	srv := stripetest.NewServer(stripetest.Options{})
	t.Cleanup(srv.Close)
	pi := srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000, AmountReceived: 600,
		Created: time.Now().Add(-time.Hour)})
	if _, err := srv.Dispute(pi, 0, stripe.DisputeStatusLost, time.Time{}); err != nil {
		t.Fatal(err)
	}
	gw, err := newGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := gw.Fetch(context.Background(), pi)
	if err != nil {
		t.Fatal(err)
	}
	policy := stripepolicy.PaymentPolicy(func(lp stripepolicy.LocalPayment) stripepolicy.LocalPayment { return lp })
	got := policy.Classify(stripepolicy.LocalPayment{Status: "paid", Amount: 1000, AmountCaptured: 600, Currency: "usd"}, p)
	if got.Verdict != reconcile.NeedsReview || got.Kind != "dispute_lost" {
		t.Errorf("got %s %q (%s), want NeedsReview dispute_lost", got.Verdict, got.Kind, got.Detail)
	}
}
