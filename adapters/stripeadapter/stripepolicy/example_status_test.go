package stripepolicy_test

import (
	"fmt"
	"strings"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// The payment policy is a pure function of a local status and a PaymentIntent: Stripe's
// outcome catches a pending payment up, a payment paid here but not at Stripe goes to a
// person, also while the intent still requires action, and so does money taken for a payment
// given up here; a declined card is no news.
func ExamplePaymentIntentPolicy() {
	classifier := stripepolicy.PaymentIntentPolicy()
	for _, c := range []struct {
		local  string
		status stripe.PaymentIntentStatus
	}{
		{stripepolicy.LocalPaid, stripe.PaymentIntentStatusSucceeded},
		{stripepolicy.LocalPending, stripe.PaymentIntentStatusSucceeded},
		{stripepolicy.LocalPending, stripe.PaymentIntentStatusCanceled},
		{stripepolicy.LocalPending, stripe.PaymentIntentStatusProcessing},
		{stripepolicy.LocalPaid, stripe.PaymentIntentStatusRequiresAction},
		{stripepolicy.LocalFailed, stripe.PaymentIntentStatusRequiresPaymentMethod},
		{stripepolicy.LocalFailed, stripe.PaymentIntentStatusSucceeded},
	} {
		d := classifier.Classify(c.local, &stripe.PaymentIntent{Status: c.status})
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%-7s x %-23s => %s %s %s", c.local, c.status, d.Verdict, d.Kind, d.Command)))
	}
	// Output:
	// paid    x succeeded               => in_sync
	// pending x succeeded               => repairable missed_success ApplyPaymentSucceeded
	// pending x canceled                => repairable missed_cancel ApplyPaymentCanceled
	// pending x processing              => in_flight
	// paid    x requires_action         => needs_review paid_locally_not_externally
	// failed  x requires_payment_method => in_sync
	// failed  x succeeded               => needs_review failed_locally_not_externally
}
