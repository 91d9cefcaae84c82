package tieout

import "github.com/reconcilekit/reconcile"

// Finding kinds of the tie-out, and the repair commands of the Repairable ones. A line's
// findings are recorded under the line's id, a group's under the group's id, a record never
// paid out under its booked id.
const (
	// Lines at the external system the host never booked.
	KindUnbookedPayment              = "unbooked_payment"
	KindUnbookedRefund               = "unbooked_refund"
	KindUnbookedDispute              = "unbooked_dispute"
	KindUnbookedRefundFailure        = "unbooked_refund_failure"
	KindUnbookedPaymentFailureRefund = "unbooked_payment_failure_refund"
	KindUnbookedFee                  = "unbooked_fee"
	KindUnbookedPayoutFailure        = "unbooked_payout_failure"
	// KindUnbooked: a line of another kind the host says it books (Policy.Books), not booked.
	KindUnbooked = "unbooked_line"

	// KindAmountDiffers: the line and its booking differ in amount or currency.
	KindAmountDiffers = "booked_amount_differs"
	// KindFeeDiffers: the host books fees, and the line's fee is not the one booked.
	KindFeeDiffers = "booked_fee_differs"
	// KindSourceUnread: the host books the presentment amount, and the line carries neither
	// the source's amount nor an exchange rate to compare it through.
	KindSourceUnread = "source_unread"
	// KindUnknownType: the policy does not know the line's type.
	KindUnknownType = "unknown_line_type"
	// KindInvalidLine: the line cannot be judged (no id, a currency other than the group's, a
	// net that is not amount minus fee, no source).
	KindInvalidLine = "invalid_line"
	// KindDuplicateLine: the line was listed twice; it is counted once.
	KindDuplicateLine = "duplicate_line"

	// KindSumMismatch: the group's lines do not sum to its amount.
	KindSumMismatch = "payout_sum_mismatch"
	// KindNotItemizable: the group's lines cannot be listed (a manual payout).
	KindNotItemizable = "payout_not_itemizable"
	// KindPayoutFailed: the group failed (after showing paid, perhaps); the host's booking
	// does not say so.
	KindPayoutFailed = "payout_failed"
	// KindUnknownStatus: the group's status is not one the policy knows (State is invalid).
	KindUnknownStatus = "payout_status_unknown"
	// KindLinesRefused: the external system refused to list the group's lines (Stripe: a 400
	// or a 404 on its balance transactions): it is not tied out, and the walk goes on.
	KindLinesRefused = "payout_lines_refused"
	// KindNeverPaidOut: a settled record in no group, past its availability and the grace.
	KindNeverPaidOut = "never_paid_out"
	// KindSettledInFuture: a settled record in no group whose settlement or availability is
	// more than reconcile.MaxClockSkew ahead of the clock; it would never be past the grace.
	KindSettledInFuture = "settled_in_future"

	CommandBookRefund        = "BookRefund"
	CommandBookDispute       = "BookDisputeAdjustment"
	CommandBookFee           = "BookFee"
	CommandApplyPayoutFailed = "ApplyPayoutFailed"
)

// Kinds returns the meaning of every finding kind of the tie-out, for the review console
// (console.Config.Kinds) and the metrics (prommetrics.Options.Kinds). The Money ones move, or
// failed to move, money: a person decides. A missed booking the canonical writer can make
// from the external record alone (a Dashboard refund, a dispute's withdrawal, a fee, a failed
// payout) is Repairable, and its meaning names the command.
func Kinds() []reconcile.KindInfo {
	return []reconcile.KindInfo{
		info(KindUnbookedPayment, "A payment reached a payout that the service never booked: money taken for nothing it knows of; refund or fulfil.", true),
		info(KindUnbookedRefund, "A refund (a Dashboard one, say) left a payout that the service never booked (repaired by BookRefund).", true),
		info(KindUnbookedDispute, "Money withdrawn or reinstated for a dispute that the service never booked (repaired by BookDisputeAdjustment).", true),
		info(KindUnbookedRefundFailure, "A refund failed and its money came back; the service still counts the customer as paid back.", true),
		info(KindUnbookedPaymentFailureRefund, "A payment failed after it was counted and its money was taken back; goods may have gone out unpaid.", true),
		info(KindUnbookedFee, "A fee the service books was charged on its own line and is not booked (repaired by BookFee).", true),
		info(KindUnbookedPayoutFailure, "An earlier payout failed and its money came back; the service does not know (repaired by ApplyPayoutFailed).", true),
		info(KindUnbooked, "A line of a kind the service books is not booked.", true),
		info(KindAmountDiffers, "The line and its booking differ in amount or currency.", true),
		info(KindFeeDiffers, "The fee Stripe charged is not the fee the service booked.", true),
		info(KindSourceUnread, "The service books the customer's amount; the line carries neither its source's amount nor a rate to compare it.", false),
		info(KindUnknownType, "A payout line of a type the policy does not know: neither skipped nor guessed, a person looks.", true),
		info(KindInvalidLine, "A payout line that cannot be judged: no id, another currency, a net that is not amount minus fee, or no source.", true),
		info(KindDuplicateLine, "A payout line was listed twice; it was counted once.", false),
		info(KindSumMismatch, "The payout's lines do not add up to what it paid.", true),
		info(KindNotItemizable, "A manual payout: Stripe cannot list what it carried; tie it out by hand. Not a mismatch.", false),
		info(KindPayoutFailed, "The payout failed (perhaps after showing paid): the money did not reach the bank (repaired by ApplyPayoutFailed).", true),
		info(KindUnknownStatus, "A payout of a status the policy does not know: neither skipped nor guessed, a person looks.", true),
		info(KindLinesRefused, "Stripe refused to list the payout's lines (a bad request, or not found): it was not tied out; read the message, tie it out by hand.", true),
		info(KindNeverPaidOut, "The service counts the money as settled, and no payout has carried it past its availability and the grace.", true),
		info(KindSettledInFuture, "Settled in the future: an impossible time (a skewed clock, a bad import); the money is counted as settled and no payout check would ever reach it.", true),
	}
}

// info is a KindInfo, written on one line per kind.
func info(kind, meaning string, money bool) reconcile.KindInfo {
	return reconcile.KindInfo{Kind: kind, Meaning: meaning, Money: money}
}

// unbooked is the finding of a line of each booked kind that the host did not book.
var unbooked = map[string]reconcile.Decision{
	KindPayment:              {Verdict: reconcile.NeedsReview, Kind: KindUnbookedPayment},
	KindRefund:               {Verdict: reconcile.Repairable, Kind: KindUnbookedRefund, Command: CommandBookRefund},
	KindDispute:              {Verdict: reconcile.Repairable, Kind: KindUnbookedDispute, Command: CommandBookDispute},
	KindRefundFailure:        {Verdict: reconcile.NeedsReview, Kind: KindUnbookedRefundFailure},
	KindPaymentFailureRefund: {Verdict: reconcile.NeedsReview, Kind: KindUnbookedPaymentFailureRefund},
	KindFee:                  {Verdict: reconcile.Repairable, Kind: KindUnbookedFee, Command: CommandBookFee},
	KindGroupFailure:         {Verdict: reconcile.Repairable, Kind: KindUnbookedPayoutFailure, Command: CommandApplyPayoutFailed},
}

// unbookedDecision is the finding of a line of kind the host did not book.
func unbookedDecision(kind string) reconcile.Decision {
	if d, ok := unbooked[kind]; ok {
		return d
	}
	return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindUnbooked}
}
