package stripepolicy_test

import (
	"reflect"
	"testing"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

func TestPaymentIntentPolicyCoversEveryCombination(t *testing.T) {
	var (
		sync    = reconcile.Decision{Verdict: reconcile.InSync}
		flight  = reconcile.Decision{Verdict: reconcile.InFlight}
		success = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}
		cancel  = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_cancel", Command: "ApplyPaymentCanceled"}
		paidNot = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "paid_locally_not_externally"}
		// failedNot: the row gave the payment up, Stripe took or holds the money.
		failedNot = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "failed_locally_not_externally"}
		surprise  = func(l, e string) reconcile.Decision {
			return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "unexpected:" + l + "->" + e}
		}
	)
	// Written out by hand from DESIGN.md, not derived from the rules under test.
	tests := []struct {
		local    string
		external stripe.PaymentIntentStatus
		want     reconcile.Decision
	}{
		{"pending", "succeeded", success},
		{"pending", "canceled", cancel},
		{"pending", "processing", flight},
		{"pending", "requires_action", flight},
		{"pending", "requires_confirmation", flight},
		{"pending", "requires_capture", flight},
		{"pending", "requires_payment_method", sync},

		{"paid", "succeeded", sync},
		{"paid", "canceled", paidNot},
		{"paid", "processing", paidNot},
		{"paid", "requires_action", paidNot},
		{"paid", "requires_confirmation", paidNot},
		{"paid", "requires_capture", paidNot},
		{"paid", "requires_payment_method", paidNot},

		{"failed", "canceled", sync},
		{"failed", "requires_payment_method", sync}, // a declined card, an abandoned checkout
		{"failed", "requires_confirmation", sync},
		{"failed", "requires_action", sync},
		{"failed", "processing", flight},
		{"failed", "requires_capture", failedNot},
		{"failed", "succeeded", failedNot},

		{"pending", "", surprise("pending", "")},
		{"pending", "refunded", surprise("pending", "refunded")},
		{"paid", "Succeeded", surprise("paid", "Succeeded")},
		{"refunded", "succeeded", surprise("refunded", "succeeded")},
		{"", "canceled", surprise("", "canceled")},
		{"PAID", "succeeded", surprise("PAID", "succeeded")},
	}
	for _, tt := range tests {
		t.Run(tt.local+" against "+string(tt.external), func(t *testing.T) {
			got := stripepolicy.PaymentIntentPolicy().Classify(tt.local, &stripe.PaymentIntent{Status: tt.external})
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Classify(%q, %q) = %+v, want %+v", tt.local, tt.external, got, tt.want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("decision does not validate: %v", err)
			}
		})
	}
}

func TestPaymentIntentPolicyKnowsAllSevenStatuses(t *testing.T) {
	all := []stripe.PaymentIntentStatus{
		stripe.PaymentIntentStatusCanceled, stripe.PaymentIntentStatusProcessing,
		stripe.PaymentIntentStatusRequiresAction, stripe.PaymentIntentStatusRequiresCapture,
		stripe.PaymentIntentStatusRequiresConfirmation, stripe.PaymentIntentStatusRequiresPaymentMethod,
		stripe.PaymentIntentStatusSucceeded,
	}
	for _, s := range all {
		for _, local := range []string{"pending", "paid", "failed"} {
			if d := stripepolicy.PaymentIntentPolicy().Classify(local, &stripe.PaymentIntent{Status: s}); d.Kind != "" && d.Kind[:min(len(d.Kind), 11)] == "unexpected:" {
				t.Errorf("%s × %s falls through to %q; the policy covers every status for %s", local, s, d.Kind, local)
			}
		}
	}
}
