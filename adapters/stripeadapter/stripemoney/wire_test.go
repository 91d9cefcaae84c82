package stripemoney_test

import (
	"context"
	"errors"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/internal/stripemock"
)

func TestWireMoneyCallsMatchStripesSpec(t *testing.T) {
	// The money's follow-ups by payment_intent. stripe-mock answers each list with one fixture
	// of another payment, so a follow-up's answer is refused as not about ours; what matters
	// here is that the request is accepted (an unknown or malformed parameter would be a 400).
	for _, account := range []string{"", "acct_1Connected"} {
		g, err := newGateway(stripeadapter.GatewayConfig{Key: "sk_test_123", BaseURL: stripemock.URL(t), StripeAccount: account})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := g.Fetch(ctx, "pi_3MtwBwLkdIwHu7ix28a3tqPa"); err != nil && !errors.Is(err, reconcile.ErrUnavailable) {
			t.Fatalf("retrieve a payment (account %q): %v", account, err)
		}
		for name, call := range map[string]func() error{
			"disputes": func() error { _, err := g.Disputes(ctx, "pi_3MtwBwLkdIwHu7ix28a3tqPa"); return err },
			"refunds":  func() error { _, err := g.Refunds(ctx, "pi_3MtwBwLkdIwHu7ix28a3tqPa"); return err },
		} {
			err := call()
			var re *reconcile.ReviewError
			if errors.As(err, &re) || (err != nil && !errors.Is(err, reconcile.ErrUnavailable)) {
				t.Fatalf("list %s by payment_intent (account %q): %v", name, account, err)
			}
		}
	}
}
