package stripepolicy_test

import (
	"strings"
	"testing"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/internal/hostile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// Every policy's fallback names the pair in a kind that is bounded and printable, whatever the
// status; money diffs and states are cut by the engine.
func TestPoliciesWriteAHostileStatusAsAKindHoldsIt(t *testing.T) {
	for _, status := range hostile.Statuses {
		decisions := map[string]reconcile.Decision{
			"PaymentIntentPolicy": stripepolicy.PaymentIntentPolicy().Classify(stripepolicy.LocalPending,
				&stripe.PaymentIntent{Status: stripe.PaymentIntentStatus(status)}),
			"PaymentPolicy": stripepolicy.PaymentPolicy(func(p stripepolicy.LocalPayment) stripepolicy.LocalPayment { return p }).Classify(
				stripepolicy.LocalPayment{Status: stripepolicy.LocalPending, Amount: 100, Currency: "usd"},
				&stripepolicy.Payment{Intent: &stripe.PaymentIntent{Status: stripe.PaymentIntentStatus(status), Amount: 100, Currency: "usd"}}),
			"SubscriptionPolicy": stripepolicy.SubscriptionPolicy(func(s stripepolicy.LocalSubscription) stripepolicy.LocalSubscription { return s }).Classify(
				stripepolicy.LocalSubscription{Status: "active"}, &stripe.Subscription{Status: stripe.SubscriptionStatus(status)}),
			"InvoicePolicy": stripepolicy.InvoicePolicy(func(i stripepolicy.LocalInvoice) stripepolicy.LocalInvoice { return i }).Classify(
				stripepolicy.LocalInvoice{Status: "open", Currency: "usd"}, &stripe.Invoice{Status: stripe.InvoiceStatus(status), Currency: "usd"}),
			"CheckoutPolicy": stripepolicy.CheckoutPolicy(func(c stripepolicy.LocalCheckout) stripepolicy.LocalCheckout { return c }).Classify(
				stripepolicy.LocalCheckout{Status: "open", PaymentStatus: "unpaid"},
				&stripe.CheckoutSession{Status: stripe.CheckoutSessionStatus(status), PaymentStatus: "unpaid"}),
		}
		for policy, d := range decisions {
			if d.Verdict != reconcile.NeedsReview || !strings.HasPrefix(d.Kind, "unexpected:") || !hostile.PrintableKind(d.Kind) ||
				strings.Contains(d.Kind, "sk_live") {
				t.Errorf("%s on status %.40q: %s %.120q (%d bytes); want needs_review unexpected:..., printable, at most %d bytes, no key",
					policy, status, d.Verdict, d.Kind, len(d.Kind), reconcile.MaxKind)
			}
		}
	}
}
