package stripeadapter

// KindInfo says what a finding kind of this package's policies means, for the people who
// review findings: the review console shows Meaning beside the kind, and asks for a note before
// a finding of a Money kind is resolved.
type KindInfo struct {
	// Kind is the finding kind, one of the Kind* constants.
	Kind string
	// Meaning is one line: what differs, and which side is ahead.
	Meaning string
	// Money is whether the drift involves money: charged, refunded, disputed, owed or billed
	// for, or goods and access given without it. Resolving such a finding by hand accepts a
	// difference in money, so it needs a note saying why.
	Money bool
}

// Kinds returns the meaning of every finding kind of PaymentPolicy (with the status policy,
// StatusPolicy), SubscriptionPolicy, InvoicePolicy and CheckoutPolicy, in that order. The
// engine's own kinds (reconcile.KindMissingExternally, ...) are not here: they mean the same
// whatever the gateway. A host passes the table to its console (console.Config.Kinds); each
// entry converts to console.KindInfo, which has the same fields.
func Kinds() []KindInfo {
	return []KindInfo{
		// The status policy.
		{KindMissedSuccess, "Stripe took the payment; the row is still pending (repaired by ApplyPaymentSucceeded).", true},
		{KindMissedCancel, "Stripe canceled the payment; the row is still pending (repaired by ApplyPaymentCanceled).", false},
		{KindPaidLocallyNotExternally, "The row is paid (or fulfilled) but Stripe has no successful payment: goods may have gone out unpaid.", true},
		{KindFailedLocallyNotExternally, "The row gave the payment up, but Stripe took the money or holds it on the card: refund, release or fulfil.", true},
		// The money policy.
		{KindCurrencyMismatch, "The row and Stripe charge in different currencies.", true},
		{KindAmountMismatch, "The row and Stripe charge different amounts.", true},
		{KindPartialCapture, "Stripe captured less than the row charges.", true},
		{KindRefundFailed, "A refund failed at Stripe; the customer was not paid back.", true},
		{KindMissedRefund, "Stripe refunded the whole payment; the row does not know (repaired by ApplyRefund).", true},
		{KindMissedPartialRefund, "Stripe refunded part of the payment; the row does not know (repaired by ApplyRefund).", true},
		{KindDisputeNeedsResponse, "The customer disputed the charge and Stripe waits for evidence by a deadline.", true},
		{KindDisputeLost, "A dispute was lost: the money went back to the customer.", true},
		{KindDisputeWon, "A dispute was won; the row does not know (repaired by ApplyDisputeStatus).", true},
		{KindDisputeUpdated, "A dispute changed status; the row does not know (repaired by ApplyDisputeStatus).", true},
		{KindDisputeMissingExternally, "The row records a dispute that Stripe does not have.", true},
		// The subscription policy.
		{KindSubscriptionCanceledExternally, "Stripe canceled the subscription; the row still grants access.", true},
		{KindAccessWithoutBilling, "The row grants access; Stripe does not bill (unpaid, paused or incomplete).", true},
		{KindMissedActivation, "Stripe bills the subscription; the row grants no access.", true},
		{KindMissedStatusChange, "The subscription changed status at Stripe, access unchanged; the row missed it.", false},
		{KindBillingWithoutAccess, "The row ended the subscription; Stripe still bills the customer.", true},
		{KindEndedLocallyNotExternally, "The row ended the subscription; Stripe has not (and does not bill it now).", false},
		{KindCancellationMissingExternally, "The row cancels at period end; Stripe will renew and bill again.", true},
		{KindCancellationScheduledExternally, "Stripe cancels at period end; the row expects a renewal.", false},
		{KindPaidThroughAhead, "The row grants access beyond the period Stripe billed.", true},
		{KindPaidThroughBehind, "Stripe's current period ends later than the row records.", false},
		// The invoice policy.
		{KindVoidedLocallyNotExternally, "The row voided the invoice; Stripe has not and may still collect it.", true},
		{KindUncollectibleLocallyNotExternally, "The row wrote the invoice off; Stripe still collects it.", true},
		{KindFinalizedLocallyNotExternally, "The row says the invoice is open; at Stripe it is still a draft.", false},
		{KindMissedPayment, "Stripe was paid (all of the invoice, or more than the row says).", true},
		{KindMissedVoid, "Stripe voided the invoice; the row still expects payment.", true},
		{KindMissedUncollectible, "Stripe marked the invoice uncollectible; the row still expects payment.", true},
		{KindMissedFinalization, "Stripe finalized the invoice; the row holds it as a draft.", false},
		{KindAmountRemainingMismatch, "The amount remaining differs, the amounts due and paid agreeing.", true},
		// The checkout policy.
		{KindFulfilledWithoutPayment, "The order was fulfilled; Stripe's checkout session is not paid.", true},
		{KindMissedFulfillment, "Stripe's checkout session is paid (or needs no payment); the order was not fulfilled.", true},
		{KindSessionStillOpen, "The row closed the checkout session; at Stripe it is still open and can be paid.", true},
		{KindMissedCompletion, "Stripe's checkout session completed, its payment still to come; the row missed it.", false},
		{KindMissedExpiry, "Stripe's checkout session expired; the row missed it.", false},
		{KindMissedSessionUpdate, "Another change to the checkout session the row missed, fulfilment unchanged.", false},
	}
}
