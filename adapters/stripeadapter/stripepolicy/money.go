package stripepolicy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

// Finding kinds and repair commands of the money policy, besides the status policy's.
const (
	KindCurrencyMismatch     = "currency_mismatch"
	KindAmountMismatch       = "amount_mismatch"
	KindPartialCapture       = "partial_capture"
	KindRefundFailed         = "refund_failed"
	KindMissedRefund         = "missed_refund"
	KindMissedPartialRefund  = "missed_partial_refund"
	KindDisputeNeedsResponse = "dispute_needs_response"
	KindDisputeLost          = "dispute_lost"
	KindDisputeWon           = "dispute_won"
	KindDisputeUpdated       = "dispute_updated"
	// KindDisputeMissingExternally: the row records a dispute that Stripe does not have.
	KindDisputeMissingExternally = "dispute_missing_externally"

	CommandApplyRefund        = "ApplyRefund"
	CommandApplyDisputeStatus = "ApplyDisputeStatus"
)

// LocalPayment is a payments row as the money policy reads it; PaymentPolicy's view builds it
// from the host's own row type.
type LocalPayment struct {
	// Status is pending (the order waits for its payment), paid (it counts the money as taken)
	// or failed (it gave this payment up and ships nothing for it); PaymentIntentPolicy's
	// table says which pairs with the intent's status are in sync.
	Status string
	// Amount is what the row charges, in the currency's minor units (cents, yen, fils).
	Amount int64
	// Currency is the ISO 4217 code, in any case.
	Currency string
	// AmountCaptured is what the row records as captured, in minor units; 0 means the whole
	// Amount. A host that never captures part of a payment leaves it 0. A partial capture is
	// recorded by a person, through the host's own writer, after the partial_capture finding.
	AmountCaptured int64
	// AmountRefunded is what the row records as refunded, in minor units, compared with
	// Payment.AmountRefunded: the canonical writer records that, not the charge's
	// amount_refunded, which after a partial capture counts the released amount too.
	AmountRefunded int64
	// DisputeStatus is the status of the charge's dispute as the row records it, one of
	// Stripe's dispute statuses; "" means no dispute.
	DisputeStatus string
}

// PaymentPolicy returns the money policy: it judges a payments row, seen through view,
// against a Payment. It compares the currency, the amount, the status (as
// PaymentIntentPolicy does), then, for a payment both sides call paid, what was captured,
// refunded and disputed; the first problem found names the decision, and Decision.Diffs lists
// every field that differs, by Stripe's name for it: currency, amount, status (when the status
// pair alone would make a finding), amount_captured (what the row records as captured against
// the intent's amount_received), amount_refunded (LocalPayment.AmountRefunded against
// Payment.AmountRefunded, which is not the charge's amount_refunded after a partial capture)
// and dispute_status, amounts written in their currency. The package doc has the table, with
// the reason for each direction.
// Status pairs are PaymentIntentPolicy's, whose table says what each local status means and
// which pairs are in sync: a payment failed locally whose intent took no money (a declined card
// back in requires_payment_method, an abandoned checkout) is.
//
// It is pure (no network, no clock) and safe for concurrent use, as view must be too. It is a
// reconcile.StateNamer: findings record the local Status and the intent's status. It trusts
// the Payment to be read as package stripemoney reads it, the latest charge expanded and the
// disputes of a disputed charge listed.
func PaymentPolicy[L any](view func(L) LocalPayment) *Policy[L, *Payment] {
	return viewed(view, moneyTable, func(p *Payment) bool { return p != nil && p.Intent != nil })
}

// moneyTable is the money policy; the package doc gives each direction's reason. Money a
// person must act on (taken in another currency or amount, captured other than our books say,
// refunded in our books but not at Stripe, a dispute lost or awaiting evidence) goes to
// review; money that already moved at Stripe and only needs recording (a refund, a dispute's
// progress or a win) is caught up through a command, whose canonical writer re-reads Stripe.
// Every pair but paid × succeeded is the status policy's; paid × succeeded goes on to the
// money, and is in sync (the status policy's rule) when nothing differs.
var moneyTable = mustTable(func(lp LocalPayment) string { return lp.Status }, PaymentState, moneyDiffs,
	slices.Concat([]reconcile.Rule[LocalPayment, *Payment]{
		{When: func(lp LocalPayment, p *Payment) bool {
			return !strings.EqualFold(lp.Currency, string(p.Intent.Currency))
		},
			Decision: review(KindCurrencyMismatch),
			Detail: func(lp LocalPayment, p *Payment) string {
				return fmt.Sprintf("the row is in %s, the PaymentIntent in %s", upper(lp.Currency), upper(string(p.Intent.Currency)))
			}},
		{When: func(lp LocalPayment, p *Payment) bool { return lp.Amount != p.Intent.Amount },
			Decision: review(KindAmountMismatch),
			Detail: func(lp LocalPayment, p *Payment) string {
				return fmt.Sprintf("the row charges %s, the PaymentIntent %s", localAmount(lp, lp.Amount), stripeAmount(p, p.Intent.Amount))
			}},
	}, paidMoneyRules([]reconcile.Rule[LocalPayment, *Payment]{
		{When: func(lp LocalPayment, p *Payment) bool { return p.Intent.AmountReceived != captured(lp) },
			Decision: review(KindPartialCapture),
			Detail: func(lp LocalPayment, p *Payment) string {
				return fmt.Sprintf("Stripe captured %s of %s, the row records %s captured",
					stripeAmount(p, p.Intent.AmountReceived), stripeAmount(p, p.Intent.Amount), localAmount(lp, captured(lp)))
			}},
		{When: func(lp LocalPayment, p *Payment) bool { return lp.AmountRefunded > p.AmountRefunded() },
			Decision: review(KindRefundFailed), Detail: refundFailedDetail},
		// A dispute whose status differs from the row's: one that needs evidence or was lost
		// takes a person; one won or merely progressing is recorded.
		{When: disputeDiffers(func(d *stripe.Dispute) bool { return d == nil }),
			Decision: review(KindDisputeMissingExternally),
			Detail: func(lp LocalPayment, _ *Payment) string {
				return fmt.Sprintf("the row records a dispute (%s), Stripe has none on the charge", lp.DisputeStatus)
			}},
		{When: disputeDiffers(func(d *stripe.Dispute) bool { return d.Status == stripe.DisputeStatusLost }),
			Decision: review(KindDisputeLost), Detail: disputeDetail(func(*stripe.Dispute) string { return " was lost" })},
		{When: disputeDiffers(func(d *stripe.Dispute) bool {
			return d.Status == stripe.DisputeStatusNeedsResponse || d.Status == stripe.DisputeStatusWarningNeedsResponse
		}),
			Decision: review(KindDisputeNeedsResponse), Detail: disputeDetail(func(d *stripe.Dispute) string {
				due := "no due date given"
				if d.EvidenceDetails != nil && d.EvidenceDetails.DueBy > 0 {
					due = "respond by " + time.Unix(d.EvidenceDetails.DueBy, 0).UTC().Format(time.RFC3339)
				}
				return " needs a response: " + due
			})},
		{When: disputeDiffers(func(d *stripe.Dispute) bool { return d.Status == stripe.DisputeStatusWon }),
			Decision: repair(KindDisputeWon, CommandApplyDisputeStatus), Detail: disputeDetail(func(*stripe.Dispute) string { return " was won" })},
		{When: disputeDiffers(func(*stripe.Dispute) bool { return true }),
			Decision: repair(KindDisputeUpdated, CommandApplyDisputeStatus),
			Detail:   disputeDetail(func(d *stripe.Dispute) string { return " is " + redactKeys(string(d.Status)) })},
		// Stripe refunded more than the row records: all of what it captured, or part of it.
		{When: func(lp LocalPayment, p *Payment) bool {
			return p.AmountRefunded() > lp.AmountRefunded && fullyRefunded(p)
		},
			Decision: repair(KindMissedRefund, CommandApplyRefund), Detail: missedRefundDetail},
		{When: func(lp LocalPayment, p *Payment) bool { return p.AmountRefunded() > lp.AmountRefunded },
			Decision: repair(KindMissedPartialRefund, CommandApplyRefund), Detail: missedRefundDetail},
	}), statusRules())...)

// paidMoneyRules confines rules to the pair whose money is compared beyond amount and
// currency: the row paid, the intent succeeded.
func paidMoneyRules(rules []reconcile.Rule[LocalPayment, *Payment]) []reconcile.Rule[LocalPayment, *Payment] {
	for i := range rules {
		rules[i].Local, rules[i].External = []string{LocalPaid}, []string{string(stripe.PaymentIntentStatusSucceeded)}
	}
	return rules
}

// statusRules are the status policy's rules, over a payments row and a Payment.
func statusRules() []reconcile.Rule[LocalPayment, *Payment] {
	rules := make([]reconcile.Rule[LocalPayment, *Payment], len(paymentIntentRules))
	for i, r := range paymentIntentRules {
		rules[i] = reconcile.Rule[LocalPayment, *Payment]{Local: r.Local, External: r.External, Decision: r.Decision}
	}
	return rules
}

// captured is what the row records as captured: its Amount unless it says otherwise.
func captured(lp LocalPayment) int64 {
	if lp.AmountCaptured == 0 {
		return lp.Amount
	}
	return lp.AmountCaptured
}

// fullyRefunded reports whether Stripe refunded the whole captured amount.
func fullyRefunded(p *Payment) bool {
	ch := p.charge()
	if ch == nil {
		return false
	}
	refunded := p.AmountRefunded()
	return ch.Refunded || (refunded > 0 && refunded >= ch.AmountCaptured)
}

// disputeStatus is the status of the payment's newest dispute, "" if it has none.
func disputeStatus(p *Payment) string {
	if d := p.dispute(); d != nil {
		return string(d.Status)
	}
	return ""
}

// disputeDiffers returns a rule's condition: the dispute's status differs from the row's, and
// is reports on the newest dispute (nil if none).
func disputeDiffers(is func(*stripe.Dispute) bool) func(LocalPayment, *Payment) bool {
	return func(lp LocalPayment, p *Payment) bool { return lp.DisputeStatus != disputeStatus(p) && is(p.dispute()) }
}

// disputeDetail writes a dispute finding's detail: the dispute, then what became of it.
func disputeDetail(outcome func(*stripe.Dispute) string) func(LocalPayment, *Payment) string {
	return func(_ LocalPayment, p *Payment) string {
		d := p.dispute()
		return fmt.Sprintf("dispute %s (%s, %s)", redactKeys(d.ID), redactKeys(string(d.Reason)), stripeAmount(p, d.Amount)) + outcome(d)
	}
}

// refundFailedDetail names the refund that failed and why, when the Payment carries it.
func refundFailedDetail(lp LocalPayment, p *Payment) string {
	d := fmt.Sprintf("the row records %s refunded, Stripe %s", localAmount(lp, lp.AmountRefunded), stripeAmount(p, p.AmountRefunded()))
	if r := p.failedRefund(); r != nil {
		d += fmt.Sprintf("; refund %s %s", redactKeys(r.ID), redactKeys(string(r.Status)))
		if r.FailureReason != "" {
			d += ": " + redactKeys(string(r.FailureReason))
		}
	}
	return d
}

func missedRefundDetail(lp LocalPayment, p *Payment) string {
	return fmt.Sprintf("Stripe refunded %s, the row records %s", stripeAmount(p, p.AmountRefunded()), localAmount(lp, lp.AmountRefunded))
}

// moneyDiffs lists every field on which the two sides differ, amounts formatted in their
// currency.
func moneyDiffs(lp LocalPayment, p *Payment) []reconcile.Diff {
	pi := p.Intent
	var out diffList
	if !strings.EqualFold(lp.Currency, string(pi.Currency)) {
		out.add("currency", upper(lp.Currency), upper(string(pi.Currency)))
	}
	if lp.Amount != pi.Amount {
		out.add("amount", localAmount(lp, lp.Amount), stripeAmount(p, pi.Amount))
	}
	if v := paymentIntentTable.Classify(lp.Status, pi).Verdict; v == reconcile.Repairable || v == reconcile.NeedsReview {
		out.add("status", lp.Status, PaymentIntentState(pi))
	}
	// A row that records no capture of its own counts on the whole of its amount: that differs
	// whenever the amounts do, which the amount diff already shows.
	wholeAtStripe := lp.AmountCaptured == 0 && pi.AmountReceived == pi.Amount
	if pi.Status == stripe.PaymentIntentStatusSucceeded && pi.AmountReceived != captured(lp) && !wholeAtStripe {
		out.add("amount_captured", localAmount(lp, captured(lp)), stripeAmount(p, pi.AmountReceived))
	}
	if refunded := p.AmountRefunded(); lp.AmountRefunded != refunded {
		out.add("amount_refunded", localAmount(lp, lp.AmountRefunded), stripeAmount(p, refunded))
	}
	if ds := disputeStatus(p); lp.DisputeStatus != ds {
		out.add("dispute_status", orNone(lp.DisputeStatus), orNone(redactKeys(ds)))
	}
	return out
}

// localAmount and stripeAmount format an amount in each side's own currency.
func localAmount(lp LocalPayment, minor int64) string {
	return reconcile.FormatAmount(minor, lp.Currency)
}

func stripeAmount(p *Payment, minor int64) string {
	return reconcile.FormatAmount(minor, redactKeys(string(p.Intent.Currency)))
}
