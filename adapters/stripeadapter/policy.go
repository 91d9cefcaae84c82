package stripeadapter

import (
	"fmt"
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
	// or failed (it gave this payment up and ships nothing for it); PaymentIntentClassifier's
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
// PaymentIntentClassifier does), then, for a payment both sides call paid, what was captured,
// refunded and disputed; the first problem found names the decision, and Decision.Diffs lists
// every field that differs, by Stripe's name for it: currency, amount, status (when the status
// pair alone would make a finding), amount_captured (what the row records as captured against
// the intent's amount_received), amount_refunded (LocalPayment.AmountRefunded against
// Payment.AmountRefunded, which is not the charge's amount_refunded after a partial capture)
// and dispute_status, amounts written in their currency. The package doc has the table, with
// the reason for each direction.
// Status pairs are PaymentIntentClassifier's, whose table says what each local status means and
// which pairs are in sync: a payment failed locally whose intent took no money (a declined card
// back in requires_payment_method, an abandoned checkout) is.
//
// It is pure (no network, no clock) and safe for concurrent use, as view must be too. It is a
// reconcile.StateNamer: findings record the local Status and the intent's status. It trusts
// the Payment to be read as PaymentGateway and the payment feeds read it, the latest charge
// expanded and the disputes of a disputed charge listed.
func PaymentPolicy[L any](view func(L) LocalPayment) reconcile.Classifier[L, *Payment] {
	return paymentPolicy[L]{view: view}
}

type paymentPolicy[L any] struct {
	view func(L) LocalPayment
}

// LocalState names the row's state: its Status.
func (p paymentPolicy[L]) LocalState(local L) string { return p.view(local).Status }

// ExternalState names the payment's state: its intent's status, redacted.
func (p paymentPolicy[L]) ExternalState(ext *Payment) string { return PaymentState(ext) }

// Classify applies moneyRules in order; the first that matches decides.
func (p paymentPolicy[L]) Classify(local L, ext *Payment) reconcile.Decision {
	lp := p.view(local)
	if ext == nil || ext.Intent == nil {
		return reconcile.Unexpected(lp.Status, "")
	}
	f := newMoneyFacts(lp, ext)
	return firstRule(moneyRules, &f, (*moneyFacts).diffs)
}

// moneyFacts is what the rules compare, read once from both sides.
type moneyFacts struct {
	local LocalPayment
	pi    *stripe.PaymentIntent
	// status is the status policy's decision on the pair.
	status reconcile.Decision
	// bothPaid: the row is paid and the intent succeeded, the only pair whose money is
	// compared beyond amount and currency.
	bothPaid bool
	// captured is what the row records as captured (its Amount unless it says otherwise).
	captured int64
	// refunded is what Stripe refunded to the customer (Payment.AmountRefunded); fully,
	// whether it is the whole captured amount.
	refunded int64
	fully    bool
	// dispute is the newest dispute, nil if none; disputeStatus its status, "" if none.
	dispute       *stripe.Dispute
	disputeStatus string
	// failedRefund is the newest refund that failed or was canceled, if the Payment has it.
	failedRefund *stripe.Refund
}

func newMoneyFacts(lp LocalPayment, p *Payment) moneyFacts {
	f := moneyFacts{local: lp, pi: p.Intent, captured: lp.AmountCaptured, dispute: p.dispute(), failedRefund: p.failedRefund()}
	if f.captured == 0 {
		f.captured = lp.Amount
	}
	f.status = paymentIntentClassifier.Classify(lp.Status, p.Intent)
	f.bothPaid = lp.Status == LocalPaid && p.Intent.Status == stripe.PaymentIntentStatusSucceeded
	if ch := p.charge(); ch != nil {
		f.refunded = p.AmountRefunded()
		f.fully = ch.Refunded || (f.refunded > 0 && f.refunded >= ch.AmountCaptured)
	}
	if f.dispute != nil {
		f.disputeStatus = string(f.dispute.Status)
	}
	return f
}

// moneyRules is the money policy, first match wins; the package doc gives each direction's
// reason. Money a person must act on (taken in another currency or amount, captured other
// than our books say, refunded in our books but not at Stripe, a dispute lost or awaiting
// evidence) goes to review; money that already moved at Stripe and only needs recording (a refund, a dispute's progress
// or a win) is caught up through a command, whose canonical writer re-reads Stripe.
var moneyRules = []rule[moneyFacts]{
	{func(f *moneyFacts) bool { return !strings.EqualFold(f.local.Currency, string(f.pi.Currency)) },
		review(KindCurrencyMismatch, func(f *moneyFacts) string {
			return fmt.Sprintf("the row is in %s, the PaymentIntent in %s", upper(f.local.Currency), upper(string(f.pi.Currency)))
		})},
	{func(f *moneyFacts) bool { return f.local.Amount != f.pi.Amount },
		review(KindAmountMismatch, func(f *moneyFacts) string {
			return fmt.Sprintf("the row charges %s, the PaymentIntent %s", f.localAmount(f.local.Amount), f.stripeAmount(f.pi.Amount))
		})},
	{func(f *moneyFacts) bool { return !f.bothPaid }, func(f *moneyFacts) reconcile.Decision { return f.status }},
	{func(f *moneyFacts) bool { return f.pi.AmountReceived != f.captured },
		review(KindPartialCapture, func(f *moneyFacts) string {
			return fmt.Sprintf("Stripe captured %s of %s, the row records %s captured",
				f.stripeAmount(f.pi.AmountReceived), f.stripeAmount(f.pi.Amount), f.localAmount(f.captured))
		})},
	{func(f *moneyFacts) bool { return f.local.AmountRefunded > f.refunded }, review(KindRefundFailed, refundFailedDetail)},
	{func(f *moneyFacts) bool { return f.local.DisputeStatus != f.disputeStatus }, disputeDecision},
	{func(f *moneyFacts) bool { return f.refunded > f.local.AmountRefunded }, func(f *moneyFacts) reconcile.Decision {
		kind := KindMissedPartialRefund
		if f.fully {
			kind = KindMissedRefund
		}
		return reconcile.Decision{Verdict: reconcile.Repairable, Kind: kind, Command: CommandApplyRefund,
			Detail: fmt.Sprintf("Stripe refunded %s, the row records %s", f.stripeAmount(f.refunded), f.localAmount(f.local.AmountRefunded))}
	}},
}

// refundFailedDetail names the refund that failed and why, when the Payment carries it.
func refundFailedDetail(f *moneyFacts) string {
	d := fmt.Sprintf("the row records %s refunded, Stripe %s", f.localAmount(f.local.AmountRefunded), f.stripeAmount(f.refunded))
	if r := f.failedRefund; r != nil {
		d += fmt.Sprintf("; refund %s %s", redactKeys(r.ID), redactKeys(string(r.Status)))
		if r.FailureReason != "" {
			d += ": " + redactKeys(string(r.FailureReason))
		}
	}
	return d
}

// disputeDecision judges a dispute whose status differs from the row's. A dispute that needs
// evidence or was lost takes a person; one won or merely progressing is recorded.
func disputeDecision(f *moneyFacts) reconcile.Decision {
	d := f.dispute
	if d == nil {
		return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindDisputeMissingExternally,
			Detail: fmt.Sprintf("the row records a dispute (%s), Stripe has none on the charge", f.local.DisputeStatus)}
	}
	what := fmt.Sprintf("dispute %s (%s, %s)", redactKeys(d.ID), redactKeys(string(d.Reason)), f.stripeAmount(d.Amount))
	switch d.Status {
	case stripe.DisputeStatusLost:
		return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindDisputeLost, Detail: what + " was lost"}
	case stripe.DisputeStatusNeedsResponse, stripe.DisputeStatusWarningNeedsResponse:
		due := "no due date given"
		if d.EvidenceDetails != nil && d.EvidenceDetails.DueBy > 0 {
			due = "respond by " + time.Unix(d.EvidenceDetails.DueBy, 0).UTC().Format(time.RFC3339)
		}
		return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindDisputeNeedsResponse, Detail: what + " needs a response: " + due}
	case stripe.DisputeStatusWon:
		return reconcile.Decision{Verdict: reconcile.Repairable, Kind: KindDisputeWon, Command: CommandApplyDisputeStatus, Detail: what + " was won"}
	}
	return reconcile.Decision{Verdict: reconcile.Repairable, Kind: KindDisputeUpdated, Command: CommandApplyDisputeStatus,
		Detail: what + " is " + redactKeys(f.disputeStatus)}
}

// diffs lists every field on which the two sides differ, amounts formatted in their currency.
func (f *moneyFacts) diffs() []reconcile.Diff {
	var out []reconcile.Diff
	add := func(field, local, external string) {
		out = append(out, reconcile.Diff{Field: field, Local: local, External: external})
	}
	if !strings.EqualFold(f.local.Currency, string(f.pi.Currency)) {
		add("currency", upper(f.local.Currency), upper(string(f.pi.Currency)))
	}
	if f.local.Amount != f.pi.Amount {
		add("amount", f.localAmount(f.local.Amount), f.stripeAmount(f.pi.Amount))
	}
	if v := f.status.Verdict; v == reconcile.Repairable || v == reconcile.NeedsReview {
		add("status", f.local.Status, PaymentIntentState(f.pi))
	}
	// A row that records no capture of its own counts on the whole of its amount: that differs
	// whenever the amounts do, which the amount diff already shows.
	wholeAtStripe := f.local.AmountCaptured == 0 && f.pi.AmountReceived == f.pi.Amount
	if f.pi.Status == stripe.PaymentIntentStatusSucceeded && f.pi.AmountReceived != f.captured && !wholeAtStripe {
		add("amount_captured", f.localAmount(f.captured), f.stripeAmount(f.pi.AmountReceived))
	}
	if f.local.AmountRefunded != f.refunded {
		add("amount_refunded", f.localAmount(f.local.AmountRefunded), f.stripeAmount(f.refunded))
	}
	if f.local.DisputeStatus != f.disputeStatus {
		add("dispute_status", orNone(f.local.DisputeStatus), orNone(redactKeys(f.disputeStatus)))
	}
	return out
}

// localAmount and stripeAmount format an amount in each side's own currency.
func (f *moneyFacts) localAmount(minor int64) string {
	return reconcile.FormatAmount(minor, f.local.Currency)
}

func (f *moneyFacts) stripeAmount(minor int64) string {
	return reconcile.FormatAmount(minor, redactKeys(string(f.pi.Currency)))
}

// upper writes a currency code as ISO does, "none" when empty.
func upper(code string) string { return orNone(strings.ToUpper(redactKeys(code))) }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
