package stripeadapter_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/internal/stripemock"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stripemock.Stop()
	os.Exit(code)
}

// The wire tests send our exact requests to stripe-mock, which validates them against Stripe's
// OpenAPI specification (an unknown or malformed parameter is a 400) and answers with fixtures
// of real shape. stripe-mock is stateless, so behaviour is tested against stripetest instead.

func TestWireRetrieveMatchesStripesSpec(t *testing.T) {
	g := newMockGateway(t, "")
	pi, err := g.Fetch(context.Background(), "pi_3MtwBwLkdIwHu7ix28a3tqPa")
	if err != nil {
		t.Fatalf("retrieve against stripe-mock: %v", err)
	}
	if pi.ID == "" || pi.Status == "" || pi.Created == 0 {
		t.Fatalf("decoded PaymentIntent %+v lacks id, status or created", pi)
	}
}

func TestWireBulkListMatchesStripesSpec(t *testing.T) {
	for _, account := range []string{"", "acct_1Connected"} {
		g := newMockGateway(t, account)
		now := time.Now()
		lookups := []reconcile.Lookup{
			{ExternalID: "pi_1", CreatedAt: now.Add(-3 * time.Minute)},
			{ExternalID: "pi_2", CreatedAt: now},
			{ExternalID: "pi_3", CreatedAt: now.Add(-time.Minute)},
		}
		calls := 0
		wait := func(context.Context) error { calls++; return nil }
		// stripe-mock answers any list with its one fixture, so the ids will not match: what
		// matters is that the request (created range, limit, Stripe-Account) is accepted.
		if _, err := g.FetchBatch(context.Background(), lookups, wait); err != nil {
			t.Fatalf("list (account %q) against stripe-mock: %v", account, err)
		}
		if calls == 0 {
			t.Fatal("FetchBatch made no list call")
		}
	}
}

func TestWirePagingParametersMatchStripesSpec(t *testing.T) {
	for _, account := range []string{"", "acct_1Connected"} {
		g := newMockGateway(t, account)
		for _, up := range []bool{false, true} {
			// starting_after pages down, ending_before up (the bulk fetch's read from a row).
			items, _, err := g.ListPageFrom(context.Background(), 1700000000, 1800000000, "pi_3MtwBwLkdIwHu7ix28a3tqPa", up)
			if err != nil {
				t.Fatalf("list with a cursor (up %t, account %q): %v", up, account, err)
			}
			if len(items) == 0 || items[0].ID == "" || items[0].Status == "" {
				t.Fatalf("stripe-mock's one-item list decoded as %+v", items)
			}
		}
	}
}

func TestWireEventsListMatchesStripesSpec(t *testing.T) {
	// The parameters the events lane sends: a type wildcard, a created window, pages of 100
	// walked with starting_after and ending_before.
	sc := mockClient(t)
	for _, dir := range []string{"starting_after", "ending_before"} {
		params := &stripe.EventListParams{
			Type:         stripe.String("payment_intent.*"),
			CreatedRange: &stripe.RangeQueryParams{GreaterThan: 1700000000},
		}
		params.Limit = stripe.Int64(100)
		params.Single = true
		if dir == "starting_after" {
			params.StartingAfter = stripe.String("evt_1")
		} else {
			params.EndingBefore = stripe.String("evt_1")
		}
		for ev, err := range sc.V1Events.List(context.Background(), params) {
			if err != nil {
				t.Fatalf("events list with %s: %v", dir, err)
			}
			if ev.ID == "" || ev.Type == "" {
				t.Fatalf("event without id or type: %+v", ev)
			}
		}
	}
}

func mockClient(t *testing.T) *stripe.Client {
	t.Helper()
	return stripe.NewClient("sk_test_123", stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(stripemock.URL(t)),
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
}

func newMockGateway(t *testing.T, account string) *stripeadapter.ObjectGateway[*stripe.PaymentIntent] {
	t.Helper()
	g, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: "sk_test_123", BaseURL: stripemock.URL(t), StripeAccount: account}, stripeadapter.PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestWireMoneyCallsMatchStripesSpec(t *testing.T) {
	// The intent with its charge expanded (list and retrieve), which the money reads rest on;
	// package stripemoney checks its follow-ups by payment_intent.
	for _, account := range []string{"", "acct_1Connected"} {
		g := newMockGateway(t, account)
		ctx := context.Background()
		pi, err := g.Fetch(ctx, "pi_3MtwBwLkdIwHu7ix28a3tqPa")
		if err != nil {
			t.Fatalf("retrieve with expand[]=latest_charge: %v", err)
		}
		if pi.LatestCharge == nil || pi.LatestCharge.Object != "charge" {
			t.Fatalf("retrieve did not expand the latest charge: %+v", pi.LatestCharge)
		}
		items, _, err := g.ListPage(ctx, 1700000000, 1800000000, "")
		if err != nil {
			t.Fatalf("list with expand[]=data.latest_charge: %v", err)
		}
		if len(items) == 0 || items[0].LatestCharge == nil || items[0].LatestCharge.Object != "charge" {
			t.Fatalf("list did not expand the latest charge: %+v", items)
		}
	}
}
