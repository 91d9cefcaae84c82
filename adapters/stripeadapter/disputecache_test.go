package stripeadapter_test

import (
	"context"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// newestDispute is the status of the newest of a payment's disputes, "" if it has none.
func newestDispute(p *stripeadapter.Payment) stripe.DisputeStatus {
	var newest *stripe.Dispute
	for _, d := range p.Disputes {
		if newest == nil || d.Created > newest.Created {
			newest = d
		}
	}
	if newest == nil {
		return ""
	}
	return newest.Status
}

func TestADisputeEventIsNotAnsweredFromTheKeptOutcomes(t *testing.T) {
	clock := time.Now().Add(-time.Hour).Truncate(time.Second)
	now := func() time.Time { return clock }
	srv := stripetest.NewServer(stripetest.Options{Now: now})
	t.Cleanup(srv.Close)
	pi := srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000, Created: clock})
	// An inquiry that closed: every dispute of the charge is final, so the gateway keeps them.
	if _, err := srv.Dispute(pi, 0, stripe.DisputeStatusWarningClosed, time.Time{}); err != nil {
		t.Fatal(err)
	}
	gw, err := stripeadapter.NewGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	nowait := func(context.Context) error { return nil }
	if p, err := gw.Payments().Fetch(ctx, pi); err != nil || newestDispute(p) != stripe.DisputeStatusWarningClosed {
		t.Fatalf("first read: %v, %v", p, err)
	}
	feed, err := gw.PaymentEventsFeed(stripeadapter.EventsOptions{Settle: time.Second, Now: func() time.Time { return clock.Add(time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	page, err := feed.Next(ctx, "", nowait) // anchors after the inquiry's events
	if err != nil {
		t.Fatal(err)
	}

	// The cardholder's bank files a chargeback on the same charge: a dispute of its own.
	clock = clock.Add(2 * time.Minute)
	if _, err := srv.Dispute(pi, 0, stripe.DisputeStatusNeedsResponse, clock.Add(7*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Minute)
	page, err = feed.Next(ctx, page.Next, nowait)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 1 {
		t.Fatalf("the lane yielded %d payments, want the disputed one", len(page.Objects))
	}
	if got := newestDispute(page.Objects[0].Object); got != stripe.DisputeStatusNeedsResponse {
		t.Errorf("the lane, told of a new dispute, read %q; want needs_response", got)
	}
	// And the sweep no longer answers from what it kept.
	p, err := gw.Payments().Fetch(ctx, pi)
	if err != nil {
		t.Fatal(err)
	}
	if got := newestDispute(p); got != stripe.DisputeStatusNeedsResponse {
		t.Errorf("the sweep, after the lane saw a new dispute, read %q; want needs_response", got)
	}
}
