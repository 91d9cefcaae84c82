package stripemoney_test

import (
	"context"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripemoney"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// newestDispute is the status of the newest of a payment's disputes, "" if it has none.
func newestDispute(p *stripepolicy.Payment) stripe.DisputeStatus {
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
	gw, err := newGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	nowait := func(context.Context) error { return nil }
	if p, err := gw.Fetch(ctx, pi); err != nil || newestDispute(p) != stripe.DisputeStatusWarningClosed {
		t.Fatalf("first read: %v, %v", p, err)
	}
	feed, err := gw.EventsFeed(stripeadapter.EventsOptions{Settle: time.Second, Now: func() time.Time { return clock.Add(time.Minute) }})
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
	p, err := gw.Fetch(ctx, pi)
	if err != nil {
		t.Fatal(err)
	}
	if got := newestDispute(p); got != stripe.DisputeStatusNeedsResponse {
		t.Errorf("the sweep, after the lane saw a new dispute, read %q; want needs_response", got)
	}
}

// The sweep reads a closed dispute's charge again once the kept outcome is DisputeCacheTTL old,
// so that a chargeback after a closed inquiry is found though the lane missed its event.
func TestKeptDisputeOutcomesExpire(t *testing.T) {
	ctx := context.Background()
	const (
		closed = stripe.DisputeStatusWarningClosed
		opened = stripe.DisputeStatusNeedsResponse
	)
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		// What each read sees (the disputes calls so far, the newest dispute's status): the
		// first, then after a chargeback, at once, a second before the TTL, and at the TTL.
		calls [4]int
		seen  [4]stripe.DisputeStatus
	}{
		{"the default, a day", 0, [4]int{1, 1, 1, 2}, [4]stripe.DisputeStatus{closed, closed, closed, opened}},
		{"an hour", time.Hour, [4]int{1, 1, 1, 2}, [4]stripe.DisputeStatus{closed, closed, closed, opened}},
		{"negative: nothing kept", -1, [4]int{1, 2, 3, 4}, [4]stripe.DisputeStatus{closed, opened, opened, opened}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
			srv := stripetest.NewServer(stripetest.Options{Now: func() time.Time { return clock }})
			t.Cleanup(srv.Close)
			pi := srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000, Created: clock})
			if _, err := srv.Dispute(pi, 0, closed, time.Time{}); err != nil {
				t.Fatal(err)
			}
			gw, err := newGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}, stripemoney.Config{DisputeCacheTTL: tc.ttl})
			if err != nil {
				t.Fatal(err)
			}
			start, now := clock, clock
			gw.SetDisputeClock(func() time.Time { return now })
			ttl := tc.ttl
			if ttl <= 0 {
				ttl = stripemoney.DefaultDisputeCacheTTL
			}
			read := func(step string, i int) {
				t.Helper()
				p, err := gw.Fetch(ctx, pi)
				if err != nil {
					t.Fatal(err)
				}
				if got := srv.Requests(stripetest.ListDisputes); got != tc.calls[i] {
					t.Errorf("%s: %d disputes calls, want %d", step, got, tc.calls[i])
				}
				if got := newestDispute(p); got != tc.seen[i] {
					t.Errorf("%s: read %q, want %q", step, got, tc.seen[i])
				}
			}
			read("the first read", 0)
			// A chargeback on the same charge, a minute later, whose event no lane sees.
			clock = clock.Add(time.Minute)
			if _, err := srv.Dispute(pi, 0, opened, clock.Add(7*24*time.Hour)); err != nil {
				t.Fatal(err)
			}
			read("at once", 1)
			now = start.Add(ttl - time.Second)
			read("a second before the TTL", 2)
			now = start.Add(ttl)
			read("at the TTL", 3)
		})
	}
}
