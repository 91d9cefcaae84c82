package stripepolicy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// invoiceRow is a host's own invoices row, seen by the policy through its view.
type invoiceRow struct {
	status, currency     string
	due, paid, remaining int64
}

func invoiceView(r invoiceRow) stripepolicy.LocalInvoice {
	return stripepolicy.LocalInvoice{Status: r.status, Currency: r.currency, AmountDue: r.due, AmountPaid: r.paid, AmountRemaining: r.remaining}
}

// invoiceSide is an invoice's money; invoice builds it with a given status.
type invoiceSide struct {
	currency             string
	due, paid, remaining int64
}

func (s invoiceSide) invoice(status stripe.InvoiceStatus) *stripe.Invoice {
	return &stripe.Invoice{ID: "in_1", Status: status, Currency: stripe.Currency(s.currency), AmountDue: s.due, AmountPaid: s.paid, AmountRemaining: s.remaining}
}

var invoiceStatuses = []stripe.InvoiceStatus{"draft", "open", "paid", "uncollectible", "void"}

func repairInvoice(kind string) reconcile.Decision {
	return reconcile.Decision{Verdict: reconcile.Repairable, Kind: kind, Command: "ApplyInvoiceStatus"}
}

// invoiceStatusMatrix is the status part of the invoice policy, written out by hand from the
// package doc's table: the row's status down, Stripe's across, in the order of invoiceStatuses.
var invoiceStatusMatrix = func() map[string][5]reconcile.Decision {
	var (
		sync       = inSync
		finalized  = repairInvoice("missed_finalization")
		payment    = repairInvoice("missed_payment")
		writtenOff = repairInvoice("missed_uncollectible")
		voided     = repairInvoice("missed_void")
		paidNot    = reviewKind("paid_locally_not_externally")
		voidNot    = reviewKind("voided_locally_not_externally")
		uncolNot   = reviewKind("uncollectible_locally_not_externally")
		finalNot   = reviewKind("finalized_locally_not_externally")
	)
	return map[string][5]reconcile.Decision{
		//               draft     open      paid     uncollectible void
		"draft":         {sync, finalized, payment, writtenOff, voided},
		"open":          {finalNot, sync, payment, writtenOff, voided},
		"paid":          {paidNot, paidNot, sync, paidNot, paidNot},
		"uncollectible": {uncolNot, uncolNot, payment, sync, voided},
		"void":          {voidNot, voidNot, voidNot, voidNot, sync},
	}
}()

// invoiceMoneyCase is one money situation. currency marks a case decided before anything
// else; due one decided before the status once neither side is a draft. want is the decision
// when both sides give the same status other than draft. diffs are every money field that
// differs, in the policy's order, the status aside (it comes after currency and amount_due).
type invoiceMoneyCase struct {
	name          string
	row           invoiceRow
	stripe        invoiceSide
	currency, due bool
	want          reconcile.Decision
	detail        string
	diffs         []reconcile.Diff
}

// Written out by hand from the policy table in the package doc, not derived from the rules.
var invoiceMoneyCases = []invoiceMoneyCase{
	{name: "an open USD invoice agrees", row: invoiceRow{currency: "usd", due: 1050, remaining: 1050},
		stripe: invoiceSide{currency: "usd", due: 1050, remaining: 1050}, want: inSync},
	{name: "a paid JPY invoice agrees", row: invoiceRow{currency: "JPY", due: 1000, paid: 1000},
		stripe: invoiceSide{currency: "jpy", due: 1000, paid: 1000}, want: inSync},

	{name: "a JPY row invoiced in USD", row: invoiceRow{currency: "jpy", due: 1000, remaining: 1000},
		stripe: invoiceSide{currency: "usd", due: 1000, remaining: 1000}, currency: true,
		want: reviewKind("currency_mismatch"), detail: "the row is in JPY, the invoice in USD",
		diffs: []reconcile.Diff{diff("currency", "JPY", "USD")}},
	{name: "a currency mismatch names the amounts in each currency", row: invoiceRow{currency: "jpy", due: 1000, paid: 1000},
		stripe: invoiceSide{currency: "usd", due: 1500, remaining: 1500}, currency: true, want: reviewKind("currency_mismatch"),
		diffs: []reconcile.Diff{diff("currency", "JPY", "USD"), diff("amount_due", "JPY 1,000", "USD 15.00"),
			diff("amount_paid", "JPY 1,000", "USD 0.00"), diff("amount_remaining", "JPY 0", "USD 15.00")}},
	{name: "a row without a currency", row: invoiceRow{due: 1000}, stripe: invoiceSide{currency: "eur", due: 1000},
		currency: true, want: reviewKind("currency_mismatch"), diffs: []reconcile.Diff{diff("currency", "none", "EUR")}},

	{name: "a cent more due at Stripe", row: invoiceRow{currency: "usd", due: 1050, remaining: 1050},
		stripe: invoiceSide{currency: "usd", due: 1051, remaining: 1051}, due: true,
		want: reviewKind("amount_mismatch"), detail: "the row bills USD 10.50, the invoice USD 10.51",
		diffs: []reconcile.Diff{diff("amount_due", "USD 10.50", "USD 10.51"), diff("amount_remaining", "USD 10.50", "USD 10.51")}},
	{name: "dinars have three decimals", row: invoiceRow{currency: "kwd", due: 1000, paid: 1000},
		stripe: invoiceSide{currency: "kwd", due: 10000, paid: 10000}, due: true, want: reviewKind("amount_mismatch"),
		diffs: []reconcile.Diff{diff("amount_due", "KWD 1.000", "KWD 10.000"), diff("amount_paid", "KWD 1.000", "KWD 10.000")}},

	{name: "a part paid at Stripe", row: invoiceRow{currency: "usd", due: 1000, remaining: 1000},
		stripe: invoiceSide{currency: "usd", due: 1000, paid: 400, remaining: 600},
		want:   repairInvoice("missed_payment"), detail: "the row records USD 0.00 paid, Stripe USD 4.00",
		diffs: []reconcile.Diff{diff("amount_paid", "USD 0.00", "USD 4.00"), diff("amount_remaining", "USD 10.00", "USD 6.00")}},
	{name: "the whole paid at Stripe", row: invoiceRow{currency: "jpy", due: 1000, remaining: 1000},
		stripe: invoiceSide{currency: "jpy", due: 1000, paid: 1000}, want: repairInvoice("missed_payment"),
		diffs: []reconcile.Diff{diff("amount_paid", "JPY 0", "JPY 1,000"), diff("amount_remaining", "JPY 1,000", "JPY 0")}},
	{name: "more paid in the row than at Stripe", row: invoiceRow{currency: "usd", due: 1000, paid: 1000},
		stripe: invoiceSide{currency: "usd", due: 1000, paid: 400, remaining: 600},
		want:   reviewKind("paid_locally_not_externally"), detail: "the row records USD 10.00 paid, Stripe USD 4.00",
		diffs: []reconcile.Diff{diff("amount_paid", "USD 10.00", "USD 4.00"), diff("amount_remaining", "USD 0.00", "USD 6.00")}},
	{name: "only amount_remaining differs", row: invoiceRow{currency: "usd", due: 1000, remaining: 1000},
		stripe: invoiceSide{currency: "usd", due: 1000}, want: repairInvoice("amount_remaining_mismatch"),
		detail: "the row has USD 10.00 remaining, the invoice USD 0.00",
		diffs:  []reconcile.Diff{diff("amount_remaining", "USD 10.00", "USD 0.00")}},
}

func TestInvoicePolicyCoversEveryStatusAndMoneyCase(t *testing.T) {
	policy := stripepolicy.InvoicePolicy(invoiceView)
	for _, local := range invoiceStatuses {
		for i, ext := range invoiceStatuses {
			for _, mc := range invoiceMoneyCases {
				// What the table says: the currency first, then amount_due unless a side is a
				// draft, then the status, then, for the same status but draft, what was paid
				// and what remains.
				final := local != "draft" && ext != "draft"
				want, moneyDecides := invoiceStatusMatrix[string(local)][i], false
				switch {
				case mc.currency, mc.due && final:
					want, moneyDecides = mc.want, true
				case local != ext:
				case final:
					want, moneyDecides = mc.want, true
				default:
					want = inSync
				}
				var wantDiffs []reconcile.Diff
				if want.Verdict == reconcile.Repairable || want.Verdict == reconcile.NeedsReview {
					wantDiffs = slices.Clone(mc.diffs)
					if local != ext {
						at := 0
						for at < len(wantDiffs) && (wantDiffs[at].Field == "currency" || wantDiffs[at].Field == "amount_due") {
							at++
						}
						wantDiffs = slices.Insert(wantDiffs, at, diff("status", string(local), string(ext)))
					}
				}
				detail := ""
				if moneyDecides {
					detail = mc.detail
				}
				t.Run(fmt.Sprintf("%s × %s: %s", local, ext, mc.name), func(t *testing.T) {
					row := mc.row
					row.status = string(local)
					checkDecision(t, policy.Classify(row, mc.stripe.invoice(ext)), want, wantDiffs, detail)
				})
			}
		}
	}
}

func TestInvoicePolicyDetailsAndUnknownStatuses(t *testing.T) {
	usd := invoiceSide{currency: "usd", due: 1000, paid: 0, remaining: 1000}
	row := func(status string) invoiceRow {
		return invoiceRow{status: status, currency: "usd", due: 1000, remaining: 1000}
	}
	tests := []struct {
		name   string
		row    invoiceRow
		inv    *stripe.Invoice
		want   reconcile.Decision
		diffs  []reconcile.Diff
		detail string
	}{
		{name: "paid here, open at Stripe", row: invoiceRow{status: "paid", currency: "usd", due: 1000, paid: 1000},
			inv: usd.invoice("open"), want: reviewKind("paid_locally_not_externally"),
			diffs:  []reconcile.Diff{diff("status", "paid", "open"), diff("amount_paid", "USD 10.00", "USD 0.00"), diff("amount_remaining", "USD 0.00", "USD 10.00")},
			detail: "the row says paid, Stripe's invoice is open (USD 0.00 paid)"},
		{name: "voided here, paid at Stripe", row: row("void"), inv: invoiceSide{currency: "usd", due: 1000, paid: 1000}.invoice("paid"),
			want:   reviewKind("voided_locally_not_externally"),
			diffs:  []reconcile.Diff{diff("status", "void", "paid"), diff("amount_paid", "USD 0.00", "USD 10.00"), diff("amount_remaining", "USD 10.00", "USD 0.00")},
			detail: "the row says void, Stripe's invoice is paid"},
		{name: "a draft's amount changed at Stripe as it was finalized", row: invoiceRow{status: "draft", currency: "usd", due: 500, remaining: 500},
			inv: usd.invoice("open"), want: repairInvoice("missed_finalization"),
			diffs:  []reconcile.Diff{diff("amount_due", "USD 5.00", "USD 10.00"), diff("status", "draft", "open"), diff("amount_remaining", "USD 5.00", "USD 10.00")},
			detail: "the row says draft, Stripe's invoice is open"},
		{name: "a status nobody knows", row: row("open"), inv: usd.invoice("deleted"),
			want: reviewKind("unexpected:open->deleted"), diffs: []reconcile.Diff{diff("status", "open", "deleted")}},
		{name: "a local status in capitals is not Stripe's", row: row("OPEN"), inv: usd.invoice("open"),
			want: reviewKind("unexpected:OPEN->open"), diffs: []reconcile.Diff{diff("status", "OPEN", "open")}},
		{name: "an unknown status comes before the currency", row: invoiceRow{status: "sent", currency: "eur", due: 1000, remaining: 1000},
			inv: usd.invoice("open"), want: reviewKind("unexpected:sent->open"),
			diffs: []reconcile.Diff{diff("currency", "EUR", "USD"), diff("status", "sent", "open")}},
	}
	policy := stripepolicy.InvoicePolicy(invoiceView)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDecision(t, policy.Classify(tt.row, tt.inv), tt.want, tt.diffs, tt.detail)
		})
	}
}

func TestInvoicePolicyNamesStatesAndHandlesNoInvoice(t *testing.T) {
	policy := stripepolicy.InvoicePolicy(invoiceView)
	namer, ok := any(policy).(reconcile.StateNamer[invoiceRow, *stripe.Invoice])
	if !ok {
		t.Fatal("the invoice policy is not a StateNamer")
	}
	if got := namer.LocalState(invoiceRow{status: "open"}); got != "open" {
		t.Errorf("LocalState = %q, want open", got)
	}
	inv := invoiceSide{currency: "usd"}.invoice("paid")
	if got := namer.ExternalState(inv); got != "paid" {
		t.Errorf("ExternalState = %q, want paid", got)
	}
	inv.Status = "sk_live_abcdefgh12345678"
	inv.Currency = "sk_live_abcdefgh12345678"
	got := policy.Classify(invoiceRow{status: "open", currency: "usd"}, inv)
	if s := namer.ExternalState(inv) + got.Kind + got.Detail + fmt.Sprint(got.Diffs); strings.Contains(strings.ToLower(s), "sk_live") {
		t.Errorf("a state or decision holds a key: %s", s)
	}
	if got := namer.ExternalState(nil); got != "" {
		t.Errorf("ExternalState(nil) = %q", got)
	}
	if got, want := policy.Classify(invoiceRow{status: "paid"}, nil), reconcile.Unexpected("paid", ""); !cmp.Equal(got, want) {
		t.Errorf("Classify(paid, nil) = %+v, want %+v", got, want)
	}
}
