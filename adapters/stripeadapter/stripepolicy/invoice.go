package stripepolicy

import (
	"fmt"
	"strings"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

// Finding kinds and the repair command of the invoice policy, besides currency_mismatch,
// amount_mismatch and paid_locally_not_externally, which mean here what they mean for a payment.
const (
	// KindVoidedLocallyNotExternally: the row voided an invoice Stripe has not.
	KindVoidedLocallyNotExternally = "voided_locally_not_externally"
	// KindUncollectibleLocallyNotExternally: the row wrote off an invoice Stripe still collects.
	KindUncollectibleLocallyNotExternally = "uncollectible_locally_not_externally"
	// KindFinalizedLocallyNotExternally: the row says open, Stripe's invoice is a draft.
	KindFinalizedLocallyNotExternally = "finalized_locally_not_externally"
	// KindMissedPayment: Stripe was paid (all of the invoice, or more of it than the row says).
	KindMissedPayment = "missed_payment"
	// KindMissedVoid: Stripe voided the invoice.
	KindMissedVoid = "missed_void"
	// KindMissedUncollectible: Stripe marked the invoice uncollectible.
	KindMissedUncollectible = "missed_uncollectible"
	// KindMissedFinalization: Stripe finalized the invoice the row holds as a draft.
	KindMissedFinalization = "missed_finalization"
	// KindAmountRemainingMismatch: amount_remaining differs, amount due and paid agreeing.
	KindAmountRemainingMismatch = "amount_remaining_mismatch"

	// CommandApplyInvoiceStatus asks the canonical writer to re-read the invoice and record
	// its status, amount_due, amount_paid and amount_remaining, as the invoice.* webhook
	// handler does.
	CommandApplyInvoiceStatus = "ApplyInvoiceStatus"
)

// LocalInvoice is an invoices row as the invoice policy reads it; the view given to
// InvoicePolicy builds it from the host's own row type.
type LocalInvoice struct {
	// Status is the invoice's status as the row records it, in Stripe's words: draft, open,
	// paid, uncollectible or void.
	Status string
	// Currency is the ISO 4217 code, in any case.
	Currency string
	// AmountDue, AmountPaid and AmountRemaining are the invoice's amounts as the row records
	// them, in the currency's minor units, as Stripe names them.
	AmountDue, AmountPaid, AmountRemaining int64
}

// InvoicePolicy returns the invoice policy: it judges an invoices row, seen through view,
// against an Invoice. It compares the currency, then amount_due once neither side holds a
// draft (a draft's amounts are not owed yet), then the status, then, for an invoice both
// sides give the same status, amount_paid and amount_remaining. Money Stripe already
// collected, voided or wrote off is caught up through ApplyInvoiceStatus; a row ahead of
// Stripe (paid, voided or written off here only) or another amount or currency goes to a
// person. The first rule that matches names the decision, and Decision.Diffs lists every
// field that differs (currency, amount_due, status, amount_paid, amount_remaining; amounts
// written in their currency). The package doc has the table, with the reason for each
// direction.
//
// It is pure (no network, no clock) and safe for concurrent use, as view must be too. It is a
// reconcile.StateNamer: findings record the local Status and the invoice's status.
func InvoicePolicy[L any](view func(L) LocalInvoice) *Policy[L, *stripe.Invoice] {
	return viewed(view, invoiceTable, func(inv *stripe.Invoice) bool { return inv != nil })
}

// invoiceState names the invoice's state: its status, redacted; "" for nil.
func invoiceState(inv *stripe.Invoice) string {
	if inv == nil {
		return ""
	}
	return redactKeys(string(inv.Status))
}

// Invoice statuses, as Stripe moves them: draft, open, then paid, uncollectible or void, and
// uncollectible to paid or void.
var (
	invDraft, invOpen, invPaid, invUncollectible, invVoid = "draft", "open", "paid", "uncollectible", "void"
	invKnown                                              = []string{invDraft, invOpen, invPaid, invUncollectible, invVoid}
)

// final reports whether neither side holds a draft, whose amounts may still change.
func final(li LocalInvoice, inv *stripe.Invoice) bool {
	return li.Status != invDraft && inv.Status != stripe.InvoiceStatusDraft
}

// invoiceTable is the invoice policy; the package doc gives each direction's reason. Every
// rule names the statuses it applies to, so that a status nobody knows, on either side,
// matches none: NeedsReview unexpected. Stripe never moves an invoice back: a row behind Stripe
// is caught up, a row ahead of it was written by something Stripe never saw.
var invoiceTable = mustTable(func(li LocalInvoice) string { return li.Status }, invoiceState, invoiceDiffs,
	reconcile.Rule[LocalInvoice, *stripe.Invoice]{Local: invKnown, External: invKnown,
		When: func(li LocalInvoice, inv *stripe.Invoice) bool {
			return !strings.EqualFold(li.Currency, string(inv.Currency))
		},
		Decision: review(KindCurrencyMismatch),
		Detail: func(li LocalInvoice, inv *stripe.Invoice) string {
			return fmt.Sprintf("the row is in %s, the invoice in %s", upper(li.Currency), upper(string(inv.Currency)))
		}},
	reconcile.Rule[LocalInvoice, *stripe.Invoice]{Local: invKnown, External: invKnown,
		When: func(li LocalInvoice, inv *stripe.Invoice) bool {
			return final(li, inv) && li.AmountDue != inv.AmountDue
		},
		Decision: review(KindAmountMismatch),
		Detail: func(li LocalInvoice, inv *stripe.Invoice) string {
			return fmt.Sprintf("the row bills %s, the invoice %s", localInvoiceAmount(li, li.AmountDue), stripeInvoiceAmount(inv, inv.AmountDue))
		}},
	reconcile.Rule[LocalInvoice, *stripe.Invoice]{Local: []string{invPaid}, External: []string{invDraft, invOpen, invUncollectible, invVoid},
		Decision: review(KindPaidLocallyNotExternally),
		Detail: func(_ LocalInvoice, inv *stripe.Invoice) string {
			return fmt.Sprintf("the row says paid, Stripe's invoice is %s (%s paid)", invoiceState(inv), stripeInvoiceAmount(inv, inv.AmountPaid))
		}},
	reconcile.Rule[LocalInvoice, *stripe.Invoice]{Local: []string{invVoid}, External: []string{invDraft, invOpen, invUncollectible, invPaid},
		Decision: review(KindVoidedLocallyNotExternally), Detail: invoiceStatusDetail},
	reconcile.Rule[LocalInvoice, *stripe.Invoice]{Local: []string{invUncollectible}, External: []string{invDraft, invOpen},
		Decision: review(KindUncollectibleLocallyNotExternally), Detail: invoiceStatusDetail},
	reconcile.Rule[LocalInvoice, *stripe.Invoice]{Local: []string{invOpen}, External: []string{invDraft},
		Decision: review(KindFinalizedLocallyNotExternally), Detail: invoiceStatusDetail},
	reconcile.Rule[LocalInvoice, *stripe.Invoice]{Local: []string{invDraft, invOpen, invUncollectible}, External: []string{invPaid},
		Decision: repair(KindMissedPayment, CommandApplyInvoiceStatus), Detail: invoiceStatusDetail},
	reconcile.Rule[LocalInvoice, *stripe.Invoice]{Local: []string{invDraft, invOpen, invUncollectible}, External: []string{invVoid},
		Decision: repair(KindMissedVoid, CommandApplyInvoiceStatus), Detail: invoiceStatusDetail},
	reconcile.Rule[LocalInvoice, *stripe.Invoice]{Local: []string{invDraft, invOpen}, External: []string{invUncollectible},
		Decision: repair(KindMissedUncollectible, CommandApplyInvoiceStatus), Detail: invoiceStatusDetail},
	reconcile.Rule[LocalInvoice, *stripe.Invoice]{Local: []string{invDraft}, External: []string{invOpen},
		Decision: repair(KindMissedFinalization, CommandApplyInvoiceStatus), Detail: invoiceStatusDetail},
	// The statuses agree from here on.
	reconcile.Rule[LocalInvoice, *stripe.Invoice]{Local: invKnown, External: invKnown,
		When: func(li LocalInvoice, inv *stripe.Invoice) bool {
			return final(li, inv) && li.AmountPaid > inv.AmountPaid
		},
		Decision: review(KindPaidLocallyNotExternally), Detail: invoicePaidDetail},
	reconcile.Rule[LocalInvoice, *stripe.Invoice]{Local: invKnown, External: invKnown,
		When: func(li LocalInvoice, inv *stripe.Invoice) bool {
			return final(li, inv) && inv.AmountPaid > li.AmountPaid
		},
		Decision: repair(KindMissedPayment, CommandApplyInvoiceStatus), Detail: invoicePaidDetail},
	reconcile.Rule[LocalInvoice, *stripe.Invoice]{Local: invKnown, External: invKnown,
		When: func(li LocalInvoice, inv *stripe.Invoice) bool {
			return final(li, inv) && li.AmountRemaining != inv.AmountRemaining
		},
		Decision: repair(KindAmountRemainingMismatch, CommandApplyInvoiceStatus),
		Detail: func(li LocalInvoice, inv *stripe.Invoice) string {
			return fmt.Sprintf("the row has %s remaining, the invoice %s", localInvoiceAmount(li, li.AmountRemaining), stripeInvoiceAmount(inv, inv.AmountRemaining))
		}},
	reconcile.Rule[LocalInvoice, *stripe.Invoice]{Local: invKnown, External: invKnown, Decision: inSync},
)

func invoiceStatusDetail(li LocalInvoice, inv *stripe.Invoice) string {
	return fmt.Sprintf("the row says %s, Stripe's invoice is %s", li.Status, invoiceState(inv))
}

func invoicePaidDetail(li LocalInvoice, inv *stripe.Invoice) string {
	return fmt.Sprintf("the row records %s paid, Stripe %s", localInvoiceAmount(li, li.AmountPaid), stripeInvoiceAmount(inv, inv.AmountPaid))
}

// invoiceDiffs lists every field on which the two sides differ, amounts formatted in their
// currency.
func invoiceDiffs(li LocalInvoice, inv *stripe.Invoice) []reconcile.Diff {
	var out diffList
	if !strings.EqualFold(li.Currency, string(inv.Currency)) {
		out.add("currency", upper(li.Currency), upper(string(inv.Currency)))
	}
	amount := func(field string, local, stripe int64) {
		if local != stripe {
			out.add(field, localInvoiceAmount(li, local), stripeInvoiceAmount(inv, stripe))
		}
	}
	amount("amount_due", li.AmountDue, inv.AmountDue)
	if li.Status != string(inv.Status) {
		out.add("status", li.Status, invoiceState(inv))
	}
	amount("amount_paid", li.AmountPaid, inv.AmountPaid)
	amount("amount_remaining", li.AmountRemaining, inv.AmountRemaining)
	return out
}

// localInvoiceAmount and stripeInvoiceAmount format an amount in each side's own currency.
func localInvoiceAmount(li LocalInvoice, minor int64) string {
	return reconcile.FormatAmount(minor, li.Currency)
}

func stripeInvoiceAmount(inv *stripe.Invoice, minor int64) string {
	return reconcile.FormatAmount(minor, redactKeys(string(inv.Currency)))
}
