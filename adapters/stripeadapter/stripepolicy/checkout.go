package stripepolicy

import (
	"fmt"
	"strings"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

// Finding kinds and repair commands of the checkout policy, besides currency_mismatch,
// amount_mismatch and paid_locally_not_externally, which mean here what they mean for a
// payment.
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
// reads it; the view given to CheckoutPolicy builds it from the host's own row type. A host
// whose orders have one status of their own, rather than Stripe's two and a fulfilled flag,
// maps it with CheckoutStatuses.
type LocalCheckout struct {
	// Status is the session's status as the row records it: open, complete or expired.
	Status string
	// PaymentStatus is the session's payment_status as the row records it: paid, unpaid or
	// no_payment_required.
	PaymentStatus string
	// Fulfilled is whether the order was fulfilled (goods shipped or queued to ship, access
	// granted): whether the host's fulfilment function ran for it.
	Fulfilled bool
	// Currency (ISO 4217, in any case) and AmountTotal (in the currency's minor units) are what
	// the order charges, compared with the session's currency and amount_total once Stripe's
	// session is complete, as InvoicePolicy compares an invoice's once it is final: an open
	// session's total still changes (a promotion code, an adjustable quantity), and an expired
	// one took no money. A session without a total (setup mode) has currency "" and 0.
	Currency    string
	AmountTotal int64
	// State, if set, is how findings and observations name the row's state: the host's own
	// status, which CheckoutStatuses.Local sets. Empty means "status/payment_status".
	State string
}

// CheckoutStatuses describes an order table whose rows have one status of the host's own
// (awaiting_payment, paid, shipped, ...) instead of Stripe's status, payment_status and a
// fulfilled flag: what each of the host's statuses means in the policy's terms, its Status,
// PaymentStatus and Fulfilled (its other fields are not read). Findings then name the row's
// state in the host's words. A status missing from the map means nothing the policy knows:
// the pair is NeedsReview unexpected:<status>-><session's>.
//
//	var orderStatuses = stripepolicy.CheckoutStatuses{
//		"awaiting_payment": {Status: "open", PaymentStatus: "unpaid"},
//		"payment_pending":  {Status: "complete", PaymentStatus: "unpaid"}, // a bank debit on its way
//		"paid":             {Status: "complete", PaymentStatus: "paid", Fulfilled: true}, // queued to ship
//		"shipped":          {Status: "complete", PaymentStatus: "paid", Fulfilled: true},
//		"abandoned":        {Status: "expired", PaymentStatus: "unpaid"},
//	}
//	policy := stripepolicy.CheckoutPolicy(func(o Order) stripepolicy.LocalCheckout {
//		lc := orderStatuses.Local(o.Status)
//		lc.Currency, lc.AmountTotal = o.Currency, o.Total
//		return lc
//	})
type CheckoutStatuses map[string]LocalCheckout

// Local returns what the host's status means to the checkout policy, named status: its
// entry's Status, PaymentStatus and Fulfilled, and State set to status.
func (m CheckoutStatuses) Local(status string) LocalCheckout {
	e := m[status]
	return LocalCheckout{Status: e.Status, PaymentStatus: e.PaymentStatus, Fulfilled: e.Fulfilled, State: status}
}

// CheckoutPolicy returns the checkout policy: it judges a checkout row, seen through view,
// against a Checkout Session. An order is due fulfilment when its session is complete and its
// payment_status is paid or no_payment_required, never on status complete alone: a session
// paid by an asynchronous method (bank debits, vouchers) completes unpaid and is paid, or
// not, days later. An order fulfilled whose session is not paid goes to a person; one paid
// and not fulfilled is fulfilled through FulfillCheckout; other missed changes are recorded
// through ApplyCheckoutStatus. A completed session in another currency or of another total
// than the order goes to a person, before anything is fulfilled. The first rule that matches
// names the decision, and Decision.Diffs lists every field that differs (status,
// payment_status, fulfilled: whether the order is fulfilled, against whether Stripe's session
// calls for it; currency and amount_total once the session is complete). The package doc has
// the table, with the reason for each direction.
//
// It is pure (no network, no clock) and safe for concurrent use, as view must be too. It is a
// reconcile.StateNamer: states read "status/payment_status", such as "complete/unpaid", or
// the row's LocalCheckout.State.
func CheckoutPolicy[L any](view func(L) LocalCheckout) *Policy[L, *stripe.CheckoutSession] {
	return viewed(view, checkoutTable, func(cs *stripe.CheckoutSession) bool { return cs != nil })
}

// checkoutLocalState names the row's state: its State, else its status and payment status.
func checkoutLocalState(lc LocalCheckout) string {
	if lc.State != "" {
		return lc.State
	}
	return lc.Status + "/" + lc.PaymentStatus
}

// checkoutState names the session's state: its status and payment status, redacted; "" for
// nil or a session without a status (not an answer).
func checkoutState(cs *stripe.CheckoutSession) string {
	if cs == nil || cs.Status == "" {
		return ""
	}
	return redactKeys(string(cs.Status) + "/" + string(cs.PaymentStatus))
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

// due reports whether Stripe's session calls for fulfilment, and localDue whether the row's
// record of it does.
func due(cs *stripe.CheckoutSession) bool {
	return checkoutDue(string(cs.Status), string(cs.PaymentStatus))
}

func localDue(lc LocalCheckout) bool { return checkoutDue(lc.Status, lc.PaymentStatus) }

// checkoutRule is a rule of the checkout policy: it applies only when both sides' statuses
// are Stripe's, so that a pair nobody knows matches none (NeedsReview unexpected). The rules
// read the row's status from the row rather than from its state's name, which may be the
// host's own word.
func checkoutRule(when func(LocalCheckout, *stripe.CheckoutSession) bool, d reconcile.Decision,
	detail func(LocalCheckout, *stripe.CheckoutSession) string) reconcile.Rule[LocalCheckout, *stripe.CheckoutSession] {
	return reconcile.Rule[LocalCheckout, *stripe.CheckoutSession]{
		When: func(lc LocalCheckout, cs *stripe.CheckoutSession) bool {
			return knownCheckout(lc.Status, lc.PaymentStatus) && knownCheckout(string(cs.Status), string(cs.PaymentStatus)) && when(lc, cs)
		},
		Decision: d, Detail: detail,
	}
}

// amountsCompared reports whether the order's currency and total are compared with the
// session's: once Stripe's session is complete.
func amountsCompared(cs *stripe.CheckoutSession) bool {
	return cs.Status == stripe.CheckoutSessionStatusComplete
}

// checkoutTable is the checkout policy; the package doc gives each direction's reason. Stripe
// never reopens a complete or expired session.
var checkoutTable = mustTable(checkoutLocalState, checkoutState, checkoutDiffs,
	checkoutRule(func(lc LocalCheckout, cs *stripe.CheckoutSession) bool {
		return amountsCompared(cs) && !strings.EqualFold(lc.Currency, string(cs.Currency))
	}, review(KindCurrencyMismatch), func(lc LocalCheckout, cs *stripe.CheckoutSession) string {
		return fmt.Sprintf("the order is in %s, Stripe's session in %s", upper(lc.Currency), upper(string(cs.Currency)))
	}),
	checkoutRule(func(lc LocalCheckout, cs *stripe.CheckoutSession) bool {
		return amountsCompared(cs) && lc.AmountTotal != cs.AmountTotal
	}, review(KindAmountMismatch), func(lc LocalCheckout, cs *stripe.CheckoutSession) string {
		return fmt.Sprintf("the order charges %s, Stripe's session %s", reconcile.FormatAmount(lc.AmountTotal, lc.Currency), stripeSessionAmount(cs))
	}),
	checkoutRule(func(lc LocalCheckout, cs *stripe.CheckoutSession) bool { return lc.Fulfilled && !due(cs) },
		review(KindFulfilledWithoutPayment), func(_ LocalCheckout, cs *stripe.CheckoutSession) string {
			return fmt.Sprintf("the order was fulfilled, Stripe's session is %s", checkoutState(cs))
		}),
	checkoutRule(func(lc LocalCheckout, cs *stripe.CheckoutSession) bool { return !lc.Fulfilled && due(cs) },
		repair(KindMissedFulfillment, CommandFulfillCheckout), func(lc LocalCheckout, cs *stripe.CheckoutSession) string {
			return fmt.Sprintf("Stripe's session is %s, the order was not fulfilled (the row says %s)", checkoutState(cs), checkoutLocalState(lc))
		}),
	checkoutRule(func(lc LocalCheckout, cs *stripe.CheckoutSession) bool {
		return lc.Status == string(cs.Status) && lc.PaymentStatus == string(cs.PaymentStatus)
	}, inSync, nil),
	checkoutRule(func(lc LocalCheckout, cs *stripe.CheckoutSession) bool { return localDue(lc) && !due(cs) },
		review(KindPaidLocallyNotExternally), checkoutDetail),
	checkoutRule(func(lc LocalCheckout, cs *stripe.CheckoutSession) bool {
		return cs.Status == stripe.CheckoutSessionStatusOpen && lc.Status != string(cs.Status)
	}, review(KindSessionStillOpen), checkoutDetail),
	checkoutRule(func(_ LocalCheckout, cs *stripe.CheckoutSession) bool {
		return cs.Status == stripe.CheckoutSessionStatusExpired
	},
		repair(KindMissedExpiry, CommandApplyCheckoutStatus), checkoutDetail),
	checkoutRule(func(_ LocalCheckout, cs *stripe.CheckoutSession) bool {
		return !due(cs) && cs.Status == stripe.CheckoutSessionStatusComplete
	}, repair(KindMissedCompletion, CommandApplyCheckoutStatus), checkoutDetail),
	checkoutRule(func(LocalCheckout, *stripe.CheckoutSession) bool { return true },
		repair(KindMissedSessionUpdate, CommandApplyCheckoutStatus), checkoutDetail),
)

func checkoutDetail(lc LocalCheckout, cs *stripe.CheckoutSession) string {
	return fmt.Sprintf("the row says %s, Stripe's session is %s", checkoutLocalState(lc), checkoutState(cs))
}

// stripeSessionAmount writes the session's total in its currency.
func stripeSessionAmount(cs *stripe.CheckoutSession) string {
	return reconcile.FormatAmount(cs.AmountTotal, redactKeys(string(cs.Currency)))
}

// checkoutDiffs lists every field on which the two sides differ; fulfilled is the order's
// against whether Stripe's session calls for fulfilment, and the currency and total are
// listed once they are compared.
func checkoutDiffs(lc LocalCheckout, cs *stripe.CheckoutSession) []reconcile.Diff {
	var out diffList
	if amountsCompared(cs) && !strings.EqualFold(lc.Currency, string(cs.Currency)) {
		out.add("currency", upper(lc.Currency), upper(string(cs.Currency)))
	}
	if amountsCompared(cs) && lc.AmountTotal != cs.AmountTotal {
		out.add("amount_total", reconcile.FormatAmount(lc.AmountTotal, lc.Currency), stripeSessionAmount(cs))
	}
	if lc.Status != string(cs.Status) {
		out.add("status", lc.Status, redactKeys(string(cs.Status)))
	}
	if lc.PaymentStatus != string(cs.PaymentStatus) {
		out.add("payment_status", lc.PaymentStatus, redactKeys(string(cs.PaymentStatus)))
	}
	if d := due(cs); lc.Fulfilled != d {
		out.add("fulfilled", fmt.Sprint(lc.Fulfilled), fmt.Sprint(d))
	}
	return out
}
