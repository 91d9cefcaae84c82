package stripeadapter

import (
	"fmt"
	"slices"
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
func InvoicePolicy[L any](view func(L) LocalInvoice) reconcile.Classifier[L, *stripe.Invoice] {
	return invoicePolicy[L]{view: view}
}

type invoicePolicy[L any] struct {
	view func(L) LocalInvoice
}

// LocalState names the row's state: its Status.
func (p invoicePolicy[L]) LocalState(local L) string { return p.view(local).Status }

// ExternalState names the invoice's state: its status, redacted.
func (p invoicePolicy[L]) ExternalState(inv *stripe.Invoice) string {
	if inv == nil {
		return ""
	}
	return redactKeys(string(inv.Status))
}

// Classify applies invoiceRules in order; the first that matches decides.
func (p invoicePolicy[L]) Classify(local L, inv *stripe.Invoice) reconcile.Decision {
	li := p.view(local)
	if inv == nil {
		return reconcile.Unexpected(li.Status, "")
	}
	f := invoiceFacts{local: li, inv: inv, status: redactKeys(string(inv.Status)),
		known: knownInvoiceStatus(li.Status) && knownInvoiceStatus(string(inv.Status))}
	f.final = f.local.Status != string(stripe.InvoiceStatusDraft) && inv.Status != stripe.InvoiceStatusDraft
	return firstRule(invoiceRules, &f, (*invoiceFacts).diffs)
}

func knownInvoiceStatus(s string) bool {
	switch stripe.InvoiceStatus(s) {
	case stripe.InvoiceStatusDraft, stripe.InvoiceStatusOpen, stripe.InvoiceStatusPaid, stripe.InvoiceStatusUncollectible, stripe.InvoiceStatusVoid:
		return true
	}
	return false
}

// invoiceFacts is what the rules compare, read once from both sides.
type invoiceFacts struct {
	local  LocalInvoice
	inv    *stripe.Invoice
	status string // Stripe's status, redacted
	// known: both statuses are Stripe's five. final: neither side holds a draft, whose
	// amounts may still change.
	known, final bool
}

// is reports whether the row's status is one of locals and Stripe's one of externals.
func (f *invoiceFacts) is(locals, externals []stripe.InvoiceStatus) bool {
	return slices.Contains(locals, stripe.InvoiceStatus(f.local.Status)) && slices.Contains(externals, f.inv.Status)
}

var (
	invDraft         = stripe.InvoiceStatusDraft
	invOpen          = stripe.InvoiceStatusOpen
	invPaid          = stripe.InvoiceStatusPaid
	invUncollectible = stripe.InvoiceStatusUncollectible
	invVoid          = stripe.InvoiceStatusVoid
)

// statusPair returns a rule's condition: the row's status is one of locals and Stripe's one of
// externals.
func statusPair(locals, externals []stripe.InvoiceStatus) func(*invoiceFacts) bool {
	return func(f *invoiceFacts) bool { return f.is(locals, externals) }
}

// invoiceRules is the invoice policy, first match wins; the package doc gives each direction's
// reason. Stripe moves an invoice draft → open → paid, uncollectible or void, and uncollectible
// → paid or void, never back: a row behind Stripe is caught up, a row ahead of it was written
// by something Stripe never saw.
var invoiceRules = []rule[invoiceFacts]{
	{func(f *invoiceFacts) bool { return !f.known },
		func(f *invoiceFacts) reconcile.Decision { return reconcile.Unexpected(f.local.Status, f.status) }},
	{func(f *invoiceFacts) bool { return !strings.EqualFold(f.local.Currency, string(f.inv.Currency)) },
		review(KindCurrencyMismatch, func(f *invoiceFacts) string {
			return fmt.Sprintf("the row is in %s, the invoice in %s", upper(f.local.Currency), upper(string(f.inv.Currency)))
		})},
	{func(f *invoiceFacts) bool { return f.final && f.local.AmountDue != f.inv.AmountDue },
		review(KindAmountMismatch, func(f *invoiceFacts) string {
			return fmt.Sprintf("the row bills %s, the invoice %s", f.localAmount(f.local.AmountDue), f.stripeAmount(f.inv.AmountDue))
		})},
	{statusPair([]stripe.InvoiceStatus{invPaid}, []stripe.InvoiceStatus{invDraft, invOpen, invUncollectible, invVoid}),
		review(KindPaidLocallyNotExternally, func(f *invoiceFacts) string {
			return fmt.Sprintf("the row says paid, Stripe's invoice is %s (%s paid)", f.status, f.stripeAmount(f.inv.AmountPaid))
		})},
	{statusPair([]stripe.InvoiceStatus{invVoid}, []stripe.InvoiceStatus{invDraft, invOpen, invUncollectible, invPaid}),
		review(KindVoidedLocallyNotExternally, statusDetail)},
	{statusPair([]stripe.InvoiceStatus{invUncollectible}, []stripe.InvoiceStatus{invDraft, invOpen}),
		review(KindUncollectibleLocallyNotExternally, statusDetail)},
	{statusPair([]stripe.InvoiceStatus{invOpen}, []stripe.InvoiceStatus{invDraft}),
		review(KindFinalizedLocallyNotExternally, statusDetail)},
	{statusPair([]stripe.InvoiceStatus{invDraft, invOpen, invUncollectible}, []stripe.InvoiceStatus{invPaid}),
		repair(KindMissedPayment, CommandApplyInvoiceStatus, statusDetail)},
	{statusPair([]stripe.InvoiceStatus{invDraft, invOpen, invUncollectible}, []stripe.InvoiceStatus{invVoid}),
		repair(KindMissedVoid, CommandApplyInvoiceStatus, statusDetail)},
	{statusPair([]stripe.InvoiceStatus{invDraft, invOpen}, []stripe.InvoiceStatus{invUncollectible}),
		repair(KindMissedUncollectible, CommandApplyInvoiceStatus, statusDetail)},
	{statusPair([]stripe.InvoiceStatus{invDraft}, []stripe.InvoiceStatus{invOpen}),
		repair(KindMissedFinalization, CommandApplyInvoiceStatus, statusDetail)},
	// The statuses agree from here on.
	{func(f *invoiceFacts) bool { return f.final && f.local.AmountPaid > f.inv.AmountPaid },
		review(KindPaidLocallyNotExternally, paidDetail)},
	{func(f *invoiceFacts) bool { return f.final && f.inv.AmountPaid > f.local.AmountPaid },
		repair(KindMissedPayment, CommandApplyInvoiceStatus, paidDetail)},
	{func(f *invoiceFacts) bool { return f.final && f.local.AmountRemaining != f.inv.AmountRemaining },
		repair(KindAmountRemainingMismatch, CommandApplyInvoiceStatus, func(f *invoiceFacts) string {
			return fmt.Sprintf("the row has %s remaining, the invoice %s", f.localAmount(f.local.AmountRemaining), f.stripeAmount(f.inv.AmountRemaining))
		})},
}

func statusDetail(f *invoiceFacts) string {
	return fmt.Sprintf("the row says %s, Stripe's invoice is %s", f.local.Status, f.status)
}

func paidDetail(f *invoiceFacts) string {
	return fmt.Sprintf("the row records %s paid, Stripe %s", f.localAmount(f.local.AmountPaid), f.stripeAmount(f.inv.AmountPaid))
}

// diffs lists every field on which the two sides differ, amounts formatted in their currency.
func (f *invoiceFacts) diffs() []reconcile.Diff {
	var out diffList
	if !strings.EqualFold(f.local.Currency, string(f.inv.Currency)) {
		out.add("currency", upper(f.local.Currency), upper(string(f.inv.Currency)))
	}
	amount := func(field string, local, stripe int64) {
		if local != stripe {
			out.add(field, f.localAmount(local), f.stripeAmount(stripe))
		}
	}
	amount("amount_due", f.local.AmountDue, f.inv.AmountDue)
	if f.local.Status != string(f.inv.Status) {
		out.add("status", f.local.Status, f.status)
	}
	amount("amount_paid", f.local.AmountPaid, f.inv.AmountPaid)
	amount("amount_remaining", f.local.AmountRemaining, f.inv.AmountRemaining)
	return out
}

func (f *invoiceFacts) localAmount(minor int64) string {
	return reconcile.FormatAmount(minor, f.local.Currency)
}

func (f *invoiceFacts) stripeAmount(minor int64) string {
	return reconcile.FormatAmount(minor, redactKeys(string(f.inv.Currency)))
}
