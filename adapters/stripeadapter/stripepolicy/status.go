package stripepolicy

import (
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

// Local payment states the status policy knows.
const (
	// LocalPending: the order waits for its payment; nothing was shipped.
	LocalPending = "pending"
	// LocalPaid: the order counts the money as taken, and may have shipped.
	LocalPaid = "paid"
	// LocalFailed: the order gave this payment up (declined, abandoned, canceled) and ships
	// nothing for it.
	LocalFailed = "failed"
)

// Finding kinds and repair commands of the status policy.
const (
	KindMissedSuccess            = "missed_success"
	KindMissedCancel             = "missed_cancel"
	KindPaidLocallyNotExternally = "paid_locally_not_externally"
	// KindFailedLocallyNotExternally: the row gave the payment up, but Stripe took the money
	// (succeeded) or holds it on the customer's card (requires_capture).
	KindFailedLocallyNotExternally = "failed_locally_not_externally"

	CommandApplyPaymentSucceeded = "ApplyPaymentSucceeded"
	CommandApplyPaymentCanceled  = "ApplyPaymentCanceled"
)

// paymentIntentRules is the status policy, and the money policy's rules for every pair but paid ×
// succeeded. Stripe is the truth for a payment's outcome, so a
// pending payment catches up automatically; anything where money may already have moved goes to
// a person. A payment paid locally whose intent needs action is NeedsReview, never InFlight:
// judging it later would let lag monitoring report health while money is in doubt. A payment
// failed locally agrees with every intent that took no money: a declined card leaves its intent
// in requires_payment_method, and a customer who leaves a checkout midway leaves it wherever
// they stopped (requires_confirmation, requires_action); should they pay after all, the intent
// moves on to processing (judged later: it ends paid or declined), requires_capture or
// succeeded, where money is held or taken for an order that ships nothing: a person decides.
var paymentIntentRules = []reconcile.Rule[string, *stripe.PaymentIntent]{
	{Local: []string{LocalPaid}, External: []string{"succeeded"}, Decision: inSync},
	{Local: []string{LocalFailed}, External: []string{"canceled", "requires_payment_method", "requires_confirmation", "requires_action"}, Decision: inSync},
	{Local: []string{LocalFailed}, External: []string{"processing"}, Decision: inFlight},
	{Local: []string{LocalFailed}, External: []string{"requires_capture", "succeeded"},
		Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindFailedLocallyNotExternally}},
	{Local: []string{LocalPending}, External: []string{"requires_payment_method"}, Decision: inSync},
	{Local: []string{LocalPending}, External: []string{"processing", "requires_action", "requires_confirmation", "requires_capture"}, Decision: inFlight},
	{Local: []string{LocalPending}, External: []string{"succeeded"},
		Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: KindMissedSuccess, Command: CommandApplyPaymentSucceeded}},
	{Local: []string{LocalPending}, External: []string{"canceled"},
		Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: KindMissedCancel, Command: CommandApplyPaymentCanceled}},
	{Local: []string{LocalPaid}, External: []string{"processing", "requires_action", "requires_confirmation", "requires_capture", "requires_payment_method", "canceled"},
		Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindPaidLocallyNotExternally}},
}

// PaymentIntentPolicy returns the status policy, which judges a local payment status against a
// PaymentIntent's status. It is pure: no network, no clock. The local statuses mean:
// pending, the order waits for its payment and nothing shipped; paid, the order counts the
// money as taken and may have shipped; failed, the order gave this payment up (declined,
// abandoned, canceled) and ships nothing for it.
//
//	pending × succeeded                      Repairable missed_success (ApplyPaymentSucceeded)
//	pending × canceled                       Repairable missed_cancel (ApplyPaymentCanceled)
//	pending × processing, requires_action,
//	          requires_confirmation,
//	          requires_capture               InFlight
//	pending × requires_payment_method        InSync
//	paid × succeeded                         InSync
//	paid × any other known status            NeedsReview paid_locally_not_externally
//	failed × canceled,
//	         requires_payment_method,
//	         requires_confirmation,
//	         requires_action                 InSync (no money moved: a declined card, an
//	                                         abandoned checkout)
//	failed × processing                      InFlight (it ends succeeded or declined)
//	failed × requires_capture, succeeded     NeedsReview failed_locally_not_externally (money
//	                                         held or taken for an order that ships nothing)
//	anything else                            NeedsReview unexpected:<local>-><external>
//
// Its findings carry no Diffs: the two statuses are the whole comparison, and the finding
// records both. The policy is safe for concurrent use.
func PaymentIntentPolicy() *Policy[string, *stripe.PaymentIntent] { return paymentIntentPolicy }

// PaymentIntentState returns the PaymentIntent's status, "" for nil: the external state to put
// in Config.ExternalState. A status is stored and shown, so anything in it that looks like an
// API key (a proxy echoing the request's Authorization header) is redacted.
func PaymentIntentState(pi *stripe.PaymentIntent) string {
	if pi == nil {
		return ""
	}
	return redactKeys(string(pi.Status))
}

// paymentIntentTable is the status policy's table; the money policy asks it for the status
// diff.
var paymentIntentTable = mustTable(func(l string) string { return l }, PaymentIntentState, nil, paymentIntentRules...)

var paymentIntentPolicy = viewed(func(l string) string { return l }, paymentIntentTable,
	func(*stripe.PaymentIntent) bool { return true }) // nil is PaymentIntentState's "": unexpected
