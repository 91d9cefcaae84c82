package stripepolicy

import "github.com/reconcilekit/reconcile"

// Kinds returns the meaning of every finding kind of the package's policies: PaymentIntentPolicy
// (the status policy), PaymentPolicy (the money policy, which records the status policy's kinds
// too), SubscriptionPolicy, InvoicePolicy and CheckoutPolicy, in that order, each kind once. The
// engine's own kinds (reconcile.KindMissingExternally, ...) are not here: they mean the same
// whatever the gateway. A host passes the table to its console (console.Config.Kinds) and to
// its metrics (prommetrics.Options.Kinds).
func Kinds() []reconcile.KindInfo {
	return []reconcile.KindInfo{
		// The status policy.
		info(KindMissedSuccess, "Stripe took the payment; the row is still pending (repaired by ApplyPaymentSucceeded).", true),
		info(KindMissedCancel, "Stripe canceled the payment; the row is still pending (repaired by ApplyPaymentCanceled).", false),
		info(KindPaidLocallyNotExternally, "The row is paid (or fulfilled) but Stripe has no successful payment: goods may have gone out unpaid.", true),
		info(KindFailedLocallyNotExternally, "The row gave the payment up, but Stripe took the money or holds it on the card: refund, release or fulfil.", true),
		// The money policy.
		info(KindCurrencyMismatch, "The row and Stripe charge in different currencies.", true),
		info(KindAmountMismatch, "The row and Stripe charge different amounts.", true),
		info(KindPartialCapture, "Stripe captured less than the row charges.", true),
		info(KindRefundFailed, "A refund failed at Stripe; the customer was not paid back.", true),
		info(KindMissedRefund, "Stripe refunded the whole payment; the row does not know (repaired by ApplyRefund).", true),
		info(KindMissedPartialRefund, "Stripe refunded part of the payment; the row does not know (repaired by ApplyRefund).", true),
		info(KindDisputeNeedsResponse, "The customer disputed the charge and Stripe waits for evidence by a deadline.", true),
		info(KindDisputeLost, "A dispute was lost: the money went back to the customer.", true),
		info(KindDisputeWon, "A dispute was won; the row does not know (repaired by ApplyDisputeStatus).", true),
		info(KindDisputeUpdated, "A dispute changed status; the row does not know (repaired by ApplyDisputeStatus).", true),
		info(KindDisputeMissingExternally, "The row records a dispute that Stripe does not have.", true),
		// The subscription policy.
		info(KindSubscriptionCanceledExternally, "Stripe canceled the subscription; the row still grants access.", true),
		info(KindAccessWithoutBilling, "The row grants access; Stripe does not bill (unpaid, paused or incomplete).", true),
		info(KindMissedActivation, "Stripe bills the subscription; the row grants no access.", true),
		info(KindMissedStatusChange, "The subscription changed status at Stripe, access unchanged; the row missed it.", false),
		info(KindBillingWithoutAccess, "The row ended the subscription; Stripe still bills the customer.", true),
		info(KindEndedLocallyNotExternally, "The row ended the subscription; Stripe has not (and does not bill it now).", false),
		info(KindCancellationMissingExternally, "The row cancels at period end; Stripe will renew and bill again.", true),
		info(KindCancellationScheduledExternally, "Stripe cancels at period end; the row expects a renewal.", false),
		info(KindPaidThroughAhead, "The row grants access beyond the period Stripe billed.", true),
		info(KindPaidThroughBehind, "Stripe's current period ends later than the row records.", false),
		// The invoice policy.
		info(KindVoidedLocallyNotExternally, "The row voided the invoice; Stripe has not and may still collect it.", true),
		info(KindUncollectibleLocallyNotExternally, "The row wrote the invoice off; Stripe still collects it.", true),
		info(KindFinalizedLocallyNotExternally, "The row says the invoice is open; at Stripe it is still a draft.", false),
		info(KindMissedPayment, "Stripe was paid (all of the invoice, or more than the row says).", true),
		info(KindMissedVoid, "Stripe voided the invoice; the row still expects payment.", true),
		info(KindMissedUncollectible, "Stripe marked the invoice uncollectible; the row still expects payment.", true),
		info(KindMissedFinalization, "Stripe finalized the invoice; the row holds it as a draft.", false),
		info(KindAmountRemainingMismatch, "The amount remaining differs, the amounts due and paid agreeing.", true),
		// The checkout policy.
		info(KindFulfilledWithoutPayment, "The order was fulfilled; Stripe's checkout session is not paid.", true),
		info(KindMissedFulfillment, "Stripe's checkout session is paid (or needs no payment); the order was not fulfilled.", true),
		info(KindSessionStillOpen, "The row closed the checkout session; at Stripe it is still open and can be paid.", true),
		info(KindMissedCompletion, "Stripe's checkout session completed, its payment still to come; the row missed it.", false),
		info(KindMissedExpiry, "Stripe's checkout session expired; the row missed it.", false),
		info(KindMissedSessionUpdate, "Another change to the checkout session the row missed, fulfilment unchanged.", false),
	}
}

// info is a KindInfo, written on one line per kind.
func info(kind, meaning string, money bool) reconcile.KindInfo {
	return reconcile.KindInfo{Kind: kind, Meaning: meaning, Money: money}
}
