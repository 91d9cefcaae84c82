package stripeadapter_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/internal/stripemock"
)

// The kit's requests for the shipped objects, checked against stripe-mock (Stripe's OpenAPI
// specification: an unknown or malformed parameter is a 400, which the kit maps to a
// ReviewError). stripe-mock answers with fixtures about other objects, so an answer refused as
// not about ours (ErrUnavailable) is fine; a rejected request is not.

// wireCalls makes each request shape of an object gateway: retrieve with its expand paths, a
// list page with the created window, ListParams and starting_after, the events feed's anchor
// with the object's types, and a reverse-feed page.
func wireCalls[T any](t *testing.T, g *stripeadapter.ObjectGateway[T], id string) {
	t.Helper()
	ctx := context.Background()
	accepted := func(what string, err error) {
		t.Helper()
		var re *reconcile.ReviewError
		if errors.As(err, &re) || (err != nil && !errors.Is(err, reconcile.ErrUnavailable)) {
			t.Fatalf("%s (account %q): %v", what, g.Account(), err)
		}
	}
	_, err := g.Fetch(ctx, id)
	accepted("retrieve", err)
	if err != nil && !strings.Contains(err.Error(), "not about the object asked for") {
		t.Fatalf("retrieve (account %q): %v", g.Account(), err)
	}
	items, _, err := g.ListPage(ctx, 1700000000, 1800000000, id)
	if err != nil || len(items) == 0 {
		t.Fatalf("list (account %q): %d items, %v; want stripe-mock's one", g.Account(), len(items), err)
	}
	ef, err := g.EventsFeed(stripeadapter.EventsOptions{Types: g.Object().EventTypes})
	if len(g.Object().EventTypes) > 0 {
		if err != nil {
			t.Fatal(err)
		}
		if _, err = ef.Next(ctx, "", noWait); err != nil {
			t.Fatalf("events (account %q): %v", g.Account(), err)
		}
	}
	rf, err := g.ReverseFeed(stripeadapter.ObjectReverseOptions[T]{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = rf.Next(ctx, "", noWait); err != nil {
		t.Fatalf("reverse feed (account %q): %v", g.Account(), err)
	}
}

func mockObjectGateway[T any](t *testing.T, obj stripeadapter.Object[T], account string) *stripeadapter.ObjectGateway[T] {
	t.Helper()
	g, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: "sk_test_123", BaseURL: stripemock.URL(t)}, obj)
	if err != nil {
		t.Fatal(err)
	}
	if account != "" {
		if g, err = g.ForAccount(account); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

func TestWireKitObjectsMatchStripesSpec(t *testing.T) {
	for _, account := range []string{"", "acct_1Connected"} {
		wireCalls(t, mockObjectGateway(t, stripeadapter.Subscriptions(), account), "sub_1MowQVLkdIwHu7ixeRlqHVzs")
		wireCalls(t, mockObjectGateway(t, stripeadapter.Invoices(), account), "in_1MtHbELkdIwHu7ixl4OzzPMv")
		wireCalls(t, mockObjectGateway(t, stripeadapter.CheckoutSessions(), account), "cs_test_a11YYufWQzNY63zpQ6QSNRQhkUpVph4WRmzW0zWJO2znZKdVujZ0N0S22u")
		wireCalls(t, mockObjectGateway(t, stripeadapter.PaymentIntents(), account), "pi_3MtwBwLkdIwHu7ix28a3tqPa")
		wireCalls(t, mockObjectGateway(t, stripeadapter.Payouts(), account), "po_1OaFDbEcg9tTZuTgNYmX0PKB")
	}
	wireCalls(t, mockObjectGateway(t, stripeadapter.Accounts(), ""), "acct_1Nv0FGQ9RKHgCVdK")
}

// A parameter Stripe does not know is refused, so the test above can fail: a list with a
// misspelled status filter is a 400.
func TestWireKitRefusesAnUnknownListParam(t *testing.T) {
	obj := stripeadapter.Subscriptions()
	obj.ListParams.Set("statuz", "all")
	g := mockObjectGateway(t, obj, "")
	_, _, err := g.ListPage(context.Background(), 1700000000, 1800000000, "")
	var re *reconcile.ReviewError
	if !errors.As(err, &re) || re.Kind != reconcile.KindRejected {
		t.Fatalf("list with an unknown parameter = %v, want a rejected ReviewError", err)
	}
}
