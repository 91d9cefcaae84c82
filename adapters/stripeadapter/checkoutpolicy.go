package stripeadapter

import (
	"fmt"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

// Finding kinds and repair commands of the checkout policy, besides
// paid_locally_not_externally, which means here what it means for a payment.
const (
	// KindFulfilledWithoutPayment: the order was fulfilled, Stripe's session is not paid.
	KindFulfilledWithoutPayment = "fulfilled_without_payment"
	// KindMissedFulfillment: Stripe's session is paid (or needs no payment), the order was
	// not fulfilled.
	KindMissedFulfillment = "missed_fulfillment"
	// KindSessionStillOpen: the row closed the session (complete or expired), Stripe's is
	// still open and can be paid.
	KindSessionStillOpen = "session_still_open"
	// KindMissedCompletion: Stripe's session completed, its payment not yet made (an
	// asynchronous payment method), and the row missed it.
	KindMissedCompletion = "missed_completion"
	// KindMissedExpiry: Stripe's session expired, the row missed it.
	KindMissedExpiry = "missed_expiry"
	// KindMissedSessionUpdate: another change to the session the row missed, fulfilment
	// unchanged (the asynchronous payment of an order fulfilled before it, say).
	KindMissedSessionUpdate = "missed_session_update"

	// CommandFulfillCheckout asks the host's fulfilment function (the one its
	// checkout.session.completed and async_payment_succeeded handlers call) to re-read the
	// session and fulfil the order once if payment_status is paid or no_payment_required.
	CommandFulfillCheckout = "FulfillCheckout"
	// CommandApplyCheckoutStatus asks the canonical writer to re-read the session and record
	// its status and payment_status.
	CommandApplyCheckoutStatus = "ApplyCheckoutStatus"
)

// LocalCheckout is a checkout row (an order paid through Checkout) as the checkout policy
// reads it; the view given to CheckoutPolicy builds it from the host's own row type.
type LocalCheckout struct {
	// Status is the session's status as the row records it: open, complete or expired.
	Status string
	// PaymentStatus is the session's payment_status as the row records it: paid, unpaid or
	// no_payment_required.
	PaymentStatus string
	// Fulfilled is whether the order was fulfilled (goods shipped, access granted).
	Fulfilled bool
}

// CheckoutPolicy returns the checkout policy: it judges a checkout row, seen through view,
// against a Checkout Session. An order is due fulfilment when its session is complete and its
// payment_status is paid or no_payment_required, never on status complete alone: a session
// paid by an asynchronous method (bank debits, vouchers) completes unpaid and is paid, or
// not, days later. An order fulfilled whose session is not paid goes to a person; one paid
// and not fulfilled is fulfilled through FulfillCheckout; other missed changes are recorded
// through ApplyCheckoutStatus. The first rule that matches names the decision, and
// Decision.Diffs lists every field that differs (status, payment_status, fulfilled: whether
// the order is fulfilled, against whether Stripe's session calls for it). The package doc has
// the table, with the reason for each direction.
//
// It is pure (no network, no clock) and safe for concurrent use, as view must be too. It is a
// reconcile.StateNamer: states read "status/payment_status", such as "complete/unpaid".
func CheckoutPolicy[L any](view func(L) LocalCheckout) reconcile.Classifier[L, *stripe.CheckoutSession] {
	return checkoutPolicy[L]{view: view}
}

type checkoutPolicy[L any] struct {
	view func(L) LocalCheckout
}

// LocalState names the row's state: its status and payment status.
func (p checkoutPolicy[L]) LocalState(local L) string {
	lc := p.view(local)
	return lc.Status + "/" + lc.PaymentStatus
}

// ExternalState names the session's state: its status and payment status, redacted; "" for
// nil or a session without a status (not an answer).
func (p checkoutPolicy[L]) ExternalState(cs *stripe.CheckoutSession) string {
	if cs == nil || cs.Status == "" {
		return ""
	}
	return redactKeys(string(cs.Status) + "/" + string(cs.PaymentStatus))
}

// Classify applies checkoutRules in order; the first that matches decides.
func (p checkoutPolicy[L]) Classify(local L, cs *stripe.CheckoutSession) reconcile.Decision {
	lc := p.view(local)
	if cs == nil {
		return reconcile.Unexpected(p.LocalState(local), "")
	}
	f := checkoutFacts{local: lc, cs: cs, localState: lc.Status + "/" + lc.PaymentStatus, state: p.ExternalState(cs),
		known: knownCheckout(lc.Status, lc.PaymentStatus) && knownCheckout(string(cs.Status), string(cs.PaymentStatus)),
		due:   checkoutDue(string(cs.Status), string(cs.PaymentStatus)), localDue: checkoutDue(lc.Status, lc.PaymentStatus)}
	return firstRule(checkoutRules, &f, (*checkoutFacts).diffs)
}

func knownCheckout(status, payment string) bool {
	switch stripe.CheckoutSessionStatus(status) {
	case stripe.CheckoutSessionStatusOpen, stripe.CheckoutSessionStatusComplete, stripe.CheckoutSessionStatusExpired:
	default:
		return false
	}
	switch stripe.CheckoutSessionPaymentStatus(payment) {
	case stripe.CheckoutSessionPaymentStatusPaid, stripe.CheckoutSessionPaymentStatusUnpaid, stripe.CheckoutSessionPaymentStatusNoPaymentRequired:
		return true
	}
	return false
}

// checkoutDue reports whether a session in this state calls for fulfilment: complete, and
// paid or needing no payment.
func checkoutDue(status, payment string) bool {
	return stripe.CheckoutSessionStatus(status) == stripe.CheckoutSessionStatusComplete &&
		(stripe.CheckoutSessionPaymentStatus(payment) == stripe.CheckoutSessionPaymentStatusPaid ||
			stripe.CheckoutSessionPaymentStatus(payment) == stripe.CheckoutSessionPaymentStatusNoPaymentRequired)
}

// checkoutFacts is what the rules compare, read once from both sides.
type checkoutFacts struct {
	local             LocalCheckout
	cs                *stripe.CheckoutSession
	localState, state string // "status/payment_status" of each side, Stripe's redacted
	// known: both sides' statuses are Stripe's. due and localDue: Stripe's session, and the
	// row's record of it, call for fulfilment.
	known, due, localDue bool
}

// checkoutRules is the checkout policy, first match wins; the package doc gives each
// direction's reason. Stripe never reopens a complete or expired session.
var checkoutRules = []rule[checkoutFacts]{
	{func(f *checkoutFacts) bool { return !f.known },
		func(f *checkoutFacts) reconcile.Decision { return reconcile.Unexpected(f.localState, f.state) }},
	{func(f *checkoutFacts) bool { return f.local.Fulfilled && !f.due },
		review(KindFulfilledWithoutPayment, func(f *checkoutFacts) string {
			return fmt.Sprintf("the order was fulfilled, Stripe's session is %s", f.state)
		})},
	{func(f *checkoutFacts) bool { return !f.local.Fulfilled && f.due },
		repair(KindMissedFulfillment, CommandFulfillCheckout, func(f *checkoutFacts) string {
			return fmt.Sprintf("Stripe's session is %s, the order was not fulfilled (the row says %s)", f.state, f.localState)
		})},
	{func(f *checkoutFacts) bool { return f.localState == f.state }, func(*checkoutFacts) reconcile.Decision { return inSync }},
	{func(f *checkoutFacts) bool { return f.localDue && !f.due },
		review(KindPaidLocallyNotExternally, checkoutDetail)},
	{func(f *checkoutFacts) bool {
		return f.cs.Status == stripe.CheckoutSessionStatusOpen && f.local.Status != string(f.cs.Status)
	},
		review(KindSessionStillOpen, checkoutDetail)},
	{func(f *checkoutFacts) bool { return f.cs.Status == stripe.CheckoutSessionStatusExpired },
		repair(KindMissedExpiry, CommandApplyCheckoutStatus, checkoutDetail)},
	{func(f *checkoutFacts) bool { return !f.due && f.cs.Status == stripe.CheckoutSessionStatusComplete },
		repair(KindMissedCompletion, CommandApplyCheckoutStatus, checkoutDetail)},
	{func(*checkoutFacts) bool { return true },
		repair(KindMissedSessionUpdate, CommandApplyCheckoutStatus, checkoutDetail)},
}

func checkoutDetail(f *checkoutFacts) string {
	return fmt.Sprintf("the row says %s, Stripe's session is %s", f.localState, f.state)
}

// diffs lists every field on which the two sides differ; fulfilled is the order's against
// whether Stripe's session calls for fulfilment.
func (f *checkoutFacts) diffs() []reconcile.Diff {
	var out diffList
	if f.local.Status != string(f.cs.Status) {
		out.add("status", f.local.Status, redactKeys(string(f.cs.Status)))
	}
	if f.local.PaymentStatus != string(f.cs.PaymentStatus) {
		out.add("payment_status", f.local.PaymentStatus, redactKeys(string(f.cs.PaymentStatus)))
	}
	if f.local.Fulfilled != f.due {
		out.add("fulfilled", fmt.Sprint(f.local.Fulfilled), fmt.Sprint(f.due))
	}
	return out
}
