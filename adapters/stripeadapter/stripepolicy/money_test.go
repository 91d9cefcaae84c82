package stripepolicy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/internal/keyecho"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// moneyRow is a host's own row type, seen by the policy through its view.
type moneyRow struct {
	status, currency           string
	amount, captured, refunded int64
	dispute                    string
}

func moneyView(r moneyRow) stripepolicy.LocalPayment {
	return stripepolicy.LocalPayment{Status: r.status, Amount: r.amount, Currency: r.currency, AmountCaptured: r.captured,
		AmountRefunded: r.refunded, DisputeStatus: r.dispute}
}

// stripeSide describes a Payment's money; payment builds it with a given intent status.
type stripeSide struct {
	amount   int64
	currency string
	received int64 // 0: the whole amount when the intent succeeded
	refunded int64 // refunded to the customer; the charge's amount_refunded adds what a partial capture released
	fully    bool  // charge.refunded
	dispute  stripe.DisputeStatus
	dueBy    int64
	refunds  []*stripe.Refund
}

func (s stripeSide) payment(status stripe.PaymentIntentStatus) *stripepolicy.Payment {
	pi := &stripe.PaymentIntent{ID: "pi_1", Status: status, Amount: s.amount, Currency: stripe.Currency(s.currency), AmountReceived: s.received}
	if status == stripe.PaymentIntentStatusSucceeded && s.received == 0 {
		pi.AmountReceived = s.amount
	}
	// The charge is captured whatever the intent's status, so that a case's refunds read the same
	// under every status. Stripe counts the authorised amount a partial capture released in the
	// charge's amount_refunded.
	captured := s.received
	if captured == 0 {
		captured = s.amount
	}
	pi.LatestCharge = &stripe.Charge{ID: "ch_1", Object: "charge", Amount: s.amount, Captured: true, AmountCaptured: captured,
		AmountRefunded: s.refunded + s.amount - captured, Refunded: s.fully, Disputed: s.dispute != "", Currency: stripe.Currency(s.currency)}
	p := &stripepolicy.Payment{Intent: pi, Refunds: s.refunds}
	if s.dispute != "" {
		p.Disputes = []*stripe.Dispute{{ID: "dp_1", Status: s.dispute, Amount: s.amount, Currency: stripe.Currency(s.currency),
			Reason: "fraudulent", EvidenceDetails: &stripe.DisputeEvidenceDetails{DueBy: s.dueBy}}}
	}
	return p
}

func diff(field, local, external string) reconcile.Diff {
	return reconcile.Diff{Field: field, Local: local, External: external}
}

var (
	dueBy = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Unix()

	currencyMismatch  = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "currency_mismatch"}
	amountMismatch    = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "amount_mismatch"}
	partialCapture    = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "partial_capture"}
	refundFailed      = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "refund_failed"}
	missedRefund      = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_refund", Command: "ApplyRefund"}
	missedPartial     = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_partial_refund", Command: "ApplyRefund"}
	disputeRespond    = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "dispute_needs_response"}
	disputeLost       = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "dispute_lost"}
	disputeWon        = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "dispute_won", Command: "ApplyDisputeStatus"}
	disputeUpdated    = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "dispute_updated", Command: "ApplyDisputeStatus"}
	disputeNotAtStrip = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "dispute_missing_externally"}
	inSync            = reconcile.Decision{Verdict: reconcile.InSync}
)

// moneyCase is one money situation: the row (its status aside), Stripe's side (its intent
// status aside), and what the policy decides when both call the payment paid. first marks the
// cases decided before the status is looked at (currency and amount), whatever the statuses.
// diffs are the money fields that differ, in the policy's order, the status aside;
// whenSucceeded are those that differ only when the intent succeeded (what it captured).
type moneyCase struct {
	name          string
	row           moneyRow
	stripe        stripeSide
	first         bool
	want          reconcile.Decision
	detail        string // a part of the detail, when it matters
	diffs         []reconcile.Diff
	whenSucceeded []reconcile.Diff
}

// Written out by hand from the policy table in the package doc, not derived from the rules.
var moneyCases = []moneyCase{
	{name: "USD amounts agree", row: moneyRow{amount: 1050, currency: "usd"}, stripe: stripeSide{amount: 1050, currency: "usd"}, want: inSync},
	{name: "JPY amounts agree", row: moneyRow{amount: 1000, currency: "jpy"}, stripe: stripeSide{amount: 1000, currency: "jpy"}, want: inSync},
	{name: "KWD amounts agree", row: moneyRow{amount: 1000, currency: "kwd"}, stripe: stripeSide{amount: 1000, currency: "kwd"}, want: inSync},
	{name: "a currency code in capitals agrees with Stripe's lowercase", row: moneyRow{amount: 1050, currency: "USD"}, stripe: stripeSide{amount: 1050, currency: "usd"}, want: inSync},

	{name: "a JPY row paid in USD is a currency mismatch", row: moneyRow{amount: 1000, currency: "jpy"}, stripe: stripeSide{amount: 1000, currency: "usd"},
		first: true, want: currencyMismatch, detail: "the row is in JPY, the PaymentIntent in USD",
		diffs: []reconcile.Diff{diff("currency", "JPY", "USD")}},
	{name: "a currency mismatch names the amounts too", row: moneyRow{amount: 1000, currency: "jpy", refunded: 100}, stripe: stripeSide{amount: 1500, currency: "usd"},
		first: true, want: currencyMismatch,
		diffs: []reconcile.Diff{diff("currency", "JPY", "USD"), diff("amount", "JPY 1,000", "USD 15.00"), diff("amount_refunded", "JPY 100", "USD 0.00")}},
	{name: "a row without a currency is a currency mismatch", row: moneyRow{amount: 1000}, stripe: stripeSide{amount: 1000, currency: "eur"},
		first: true, want: currencyMismatch, diffs: []reconcile.Diff{diff("currency", "none", "EUR")}},

	{name: "a cent more at Stripe is an amount mismatch", row: moneyRow{amount: 1050, currency: "usd"}, stripe: stripeSide{amount: 1051, currency: "usd"},
		first: true, want: amountMismatch, detail: "the row charges USD 10.50, the PaymentIntent USD 10.51",
		diffs: []reconcile.Diff{diff("amount", "USD 10.50", "USD 10.51")}},
	{name: "yen are not multiplied by a hundred", row: moneyRow{amount: 1000, currency: "jpy"}, stripe: stripeSide{amount: 100000, currency: "jpy"},
		first: true, want: amountMismatch, diffs: []reconcile.Diff{diff("amount", "JPY 1,000", "JPY 100,000")}},
	{name: "dinars have three decimals", row: moneyRow{amount: 1000, currency: "kwd"}, stripe: stripeSide{amount: 10000, currency: "kwd"},
		first: true, want: amountMismatch, diffs: []reconcile.Diff{diff("amount", "KWD 1.000", "KWD 10.000")}},
	{name: "an amount mismatch names a refund too", row: moneyRow{amount: 1000, currency: "usd"}, stripe: stripeSide{amount: 2000, currency: "usd", refunded: 500},
		first: true, want: amountMismatch, diffs: []reconcile.Diff{diff("amount", "USD 10.00", "USD 20.00"), diff("amount_refunded", "USD 0.00", "USD 5.00")}},

	{name: "a partial capture", row: moneyRow{amount: 1000, currency: "usd"}, stripe: stripeSide{amount: 1000, currency: "usd", received: 600},
		want: partialCapture, detail: "Stripe captured USD 6.00 of USD 10.00, the row records USD 10.00 captured",
		whenSucceeded: []reconcile.Diff{diff("amount_captured", "USD 10.00", "USD 6.00")}},
	{name: "a partial capture comes before a refund and a dispute", row: moneyRow{amount: 1000, currency: "jpy"},
		stripe:        stripeSide{amount: 1000, currency: "jpy", received: 600, refunded: 100, dispute: "lost"},
		want:          partialCapture,
		diffs:         []reconcile.Diff{diff("amount_refunded", "JPY 0", "JPY 100"), diff("dispute_status", "none", "lost")},
		whenSucceeded: []reconcile.Diff{diff("amount_captured", "JPY 1,000", "JPY 600")}},
	{name: "a partial capture the row records", row: moneyRow{amount: 1000, currency: "usd", captured: 600},
		stripe: stripeSide{amount: 1000, currency: "usd", received: 600}, want: inSync},
	{name: "a whole capture the row records as partial", row: moneyRow{amount: 1000, currency: "usd", captured: 600},
		stripe: stripeSide{amount: 1000, currency: "usd"},
		want:   partialCapture, detail: "Stripe captured USD 10.00 of USD 10.00, the row records USD 6.00 captured",
		whenSucceeded: []reconcile.Diff{diff("amount_captured", "USD 6.00", "USD 10.00")}},
	{name: "a capture other than the row records", row: moneyRow{amount: 1000, currency: "usd", captured: 600},
		stripe: stripeSide{amount: 1000, currency: "usd", received: 500},
		want:   partialCapture, whenSucceeded: []reconcile.Diff{diff("amount_captured", "USD 6.00", "USD 5.00")}},
	{name: "a lost dispute on a recorded partial capture", row: moneyRow{amount: 1000, currency: "usd", captured: 600},
		stripe: stripeSide{amount: 1000, currency: "usd", received: 600, dispute: "lost"},
		want:   disputeLost, diffs: []reconcile.Diff{diff("dispute_status", "none", "lost")}},
	{name: "a refund of a recorded partial capture", row: moneyRow{amount: 1000, currency: "usd", captured: 600},
		stripe: stripeSide{amount: 1000, currency: "usd", received: 600, refunded: 600, fully: true},
		want:   missedRefund, detail: "Stripe refunded USD 6.00, the row records USD 0.00",
		diffs: []reconcile.Diff{diff("amount_refunded", "USD 0.00", "USD 6.00")}},
	{name: "a refund of a recorded partial capture, charge.refunded unset", row: moneyRow{amount: 1000, currency: "usd", captured: 600},
		stripe: stripeSide{amount: 1000, currency: "usd", received: 600, refunded: 600},
		want:   missedRefund, diffs: []reconcile.Diff{diff("amount_refunded", "USD 0.00", "USD 6.00")}},
	{name: "a partial refund of a recorded partial capture", row: moneyRow{amount: 1000, currency: "jpy", captured: 600, refunded: 100},
		stripe: stripeSide{amount: 1000, currency: "jpy", received: 600, refunded: 300},
		want:   missedPartial, diffs: []reconcile.Diff{diff("amount_refunded", "JPY 100", "JPY 300")}},
	{name: "a failed refund of a recorded partial capture", row: moneyRow{amount: 1000, currency: "usd", captured: 600, refunded: 600},
		stripe: stripeSide{amount: 1000, currency: "usd", received: 600},
		want:   refundFailed, detail: "the row records USD 6.00 refunded, Stripe USD 0.00",
		diffs: []reconcile.Diff{diff("amount_refunded", "USD 6.00", "USD 0.00")}},
	{name: "refunds of a recorded partial capture the row records as Stripe does", row: moneyRow{amount: 1000, currency: "kwd", captured: 600, refunded: 250},
		stripe: stripeSide{amount: 1000, currency: "kwd", received: 600, refunded: 250}, want: inSync},

	{name: "a refund that failed after succeeding", row: moneyRow{amount: 1000, currency: "usd", refunded: 1000},
		stripe: stripeSide{amount: 1000, currency: "usd", refunds: []*stripe.Refund{
			{ID: "re_old", Status: "succeeded", Amount: 100, Created: 1},
			{ID: "re_1", Status: "failed", FailureReason: "expired_or_canceled_card", Amount: 1000, Created: 2}}},
		want: refundFailed, detail: "the row records USD 10.00 refunded, Stripe USD 0.00; refund re_1 failed: expired_or_canceled_card",
		diffs: []reconcile.Diff{diff("amount_refunded", "USD 10.00", "USD 0.00")}},
	{name: "a refund the row records and Stripe never made", row: moneyRow{amount: 1000, currency: "kwd", refunded: 400},
		stripe: stripeSide{amount: 1000, currency: "kwd", refunded: 100},
		want:   refundFailed, detail: "the row records KWD 0.400 refunded, Stripe KWD 0.100",
		diffs: []reconcile.Diff{diff("amount_refunded", "KWD 0.400", "KWD 0.100")}},
	{name: "a failed refund comes before a lost dispute", row: moneyRow{amount: 1000, currency: "usd", refunded: 1000},
		stripe: stripeSide{amount: 1000, currency: "usd", dispute: "lost"},
		want:   refundFailed,
		diffs:  []reconcile.Diff{diff("amount_refunded", "USD 10.00", "USD 0.00"), diff("dispute_status", "none", "lost")}},

	{name: "a dispute that needs a response", row: moneyRow{amount: 1000, currency: "usd"},
		stripe: stripeSide{amount: 1000, currency: "usd", dispute: "needs_response", dueBy: dueBy},
		want:   disputeRespond, detail: "dispute dp_1 (fraudulent, USD 10.00) needs a response: respond by 2026-03-01T12:00:00Z",
		diffs: []reconcile.Diff{diff("dispute_status", "none", "needs_response")}},
	{name: "an inquiry that needs a response", row: moneyRow{amount: 1000, currency: "usd"},
		stripe: stripeSide{amount: 1000, currency: "usd", dispute: "warning_needs_response", dueBy: dueBy},
		want:   disputeRespond, detail: "respond by 2026-03-01T12:00:00Z",
		diffs: []reconcile.Diff{diff("dispute_status", "none", "warning_needs_response")}},
	{name: "a dispute lost", row: moneyRow{amount: 1000, currency: "usd", dispute: "needs_response"},
		stripe: stripeSide{amount: 1000, currency: "usd", dispute: "lost"},
		want:   disputeLost, detail: "dispute dp_1 (fraudulent, USD 10.00) was lost",
		diffs: []reconcile.Diff{diff("dispute_status", "needs_response", "lost")}},
	{name: "a dispute won", row: moneyRow{amount: 1000, currency: "usd", dispute: "under_review"},
		stripe: stripeSide{amount: 1000, currency: "usd", dispute: "won"},
		want:   disputeWon, diffs: []reconcile.Diff{diff("dispute_status", "under_review", "won")}},
	{name: "a dispute under review", row: moneyRow{amount: 1000, currency: "usd", dispute: "needs_response"},
		stripe: stripeSide{amount: 1000, currency: "usd", dispute: "under_review"},
		want:   disputeUpdated, detail: "is under_review", diffs: []reconcile.Diff{diff("dispute_status", "needs_response", "under_review")}},
	{name: "an inquiry under review", row: moneyRow{amount: 1000, currency: "usd"},
		stripe: stripeSide{amount: 1000, currency: "usd", dispute: "warning_under_review"},
		want:   disputeUpdated, diffs: []reconcile.Diff{diff("dispute_status", "none", "warning_under_review")}},
	{name: "an inquiry closed", row: moneyRow{amount: 1000, currency: "usd", dispute: "warning_under_review"},
		stripe: stripeSide{amount: 1000, currency: "usd", dispute: "warning_closed"},
		want:   disputeUpdated, diffs: []reconcile.Diff{diff("dispute_status", "warning_under_review", "warning_closed")}},
	{name: "a dispute prevented", row: moneyRow{amount: 1000, currency: "usd"},
		stripe: stripeSide{amount: 1000, currency: "usd", dispute: "prevented"},
		want:   disputeUpdated, diffs: []reconcile.Diff{diff("dispute_status", "none", "prevented")}},
	{name: "a dispute the row records as Stripe does", row: moneyRow{amount: 1000, currency: "usd", dispute: "lost"},
		stripe: stripeSide{amount: 1000, currency: "usd", dispute: "lost"}, want: inSync},
	{name: "a dispute the row records and Stripe does not have", row: moneyRow{amount: 1000, currency: "usd", dispute: "under_review"},
		stripe: stripeSide{amount: 1000, currency: "usd"},
		want:   disputeNotAtStrip, diffs: []reconcile.Diff{diff("dispute_status", "under_review", "none")}},
	{name: "a lost dispute comes before a missed refund", row: moneyRow{amount: 1000, currency: "usd"},
		stripe: stripeSide{amount: 1000, currency: "usd", refunded: 200, dispute: "lost"},
		want:   disputeLost,
		diffs:  []reconcile.Diff{diff("amount_refunded", "USD 0.00", "USD 2.00"), diff("dispute_status", "none", "lost")}},

	{name: "a refund in the Dashboard", row: moneyRow{amount: 1000, currency: "usd"},
		stripe: stripeSide{amount: 1000, currency: "usd", refunded: 1000, fully: true},
		want:   missedRefund, detail: "Stripe refunded USD 10.00, the row records USD 0.00",
		diffs: []reconcile.Diff{diff("amount_refunded", "USD 0.00", "USD 10.00")}},
	{name: "a partial refund", row: moneyRow{amount: 1000, currency: "jpy"}, stripe: stripeSide{amount: 1000, currency: "jpy", refunded: 300},
		want: missedPartial, diffs: []reconcile.Diff{diff("amount_refunded", "JPY 0", "JPY 300")}},
	{name: "a second partial refund the row lacks", row: moneyRow{amount: 1000, currency: "kwd", refunded: 300},
		stripe: stripeSide{amount: 1000, currency: "kwd", refunded: 500},
		want:   missedPartial, diffs: []reconcile.Diff{diff("amount_refunded", "KWD 0.300", "KWD 0.500")}},
	{name: "a refund that completes a partial refund", row: moneyRow{amount: 1000, currency: "usd", refunded: 300},
		stripe: stripeSide{amount: 1000, currency: "usd", refunded: 1000, fully: true},
		want:   missedRefund, diffs: []reconcile.Diff{diff("amount_refunded", "USD 3.00", "USD 10.00")}},
	{name: "refunds the row records as Stripe does", row: moneyRow{amount: 1000, currency: "usd", refunded: 300},
		stripe: stripeSide{amount: 1000, currency: "usd", refunded: 300}, want: inSync},
}

// statusCases are the status policy's pairs (see TestPaymentIntentPolicyCoversEveryCombination).
var statusCases = func() []struct {
	local    string
	external stripe.PaymentIntentStatus
	want     reconcile.Decision
} {
	var (
		flight  = reconcile.Decision{Verdict: reconcile.InFlight}
		success = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}
		cancel  = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_cancel", Command: "ApplyPaymentCanceled"}
		paidNot = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "paid_locally_not_externally"}
		// failedNot: the row gave the payment up, Stripe took or holds the money.
		failedNot = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "failed_locally_not_externally"}
		surprise  = func(l, e string) reconcile.Decision {
			return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "unexpected:" + l + "->" + e}
		}
	)
	return []struct {
		local    string
		external stripe.PaymentIntentStatus
		want     reconcile.Decision
	}{
		{"pending", "succeeded", success},
		{"pending", "canceled", cancel},
		{"pending", "processing", flight},
		{"pending", "requires_action", flight},
		{"pending", "requires_confirmation", flight},
		{"pending", "requires_capture", flight},
		{"pending", "requires_payment_method", inSync},
		{"paid", "succeeded", inSync}, // the money cases decide
		{"paid", "canceled", paidNot},
		{"paid", "processing", paidNot},
		{"paid", "requires_action", paidNot},
		{"paid", "requires_confirmation", paidNot},
		{"paid", "requires_capture", paidNot},
		{"paid", "requires_payment_method", paidNot},
		{"failed", "canceled", inSync},
		{"failed", "requires_payment_method", inSync}, // a declined card, an abandoned checkout
		{"failed", "requires_confirmation", inSync},
		{"failed", "requires_action", inSync},
		{"failed", "processing", flight},
		{"failed", "requires_capture", failedNot},
		{"failed", "succeeded", failedNot},
		{"refunded", "succeeded", surprise("refunded", "succeeded")},
		{"paid", "refunded", surprise("paid", "refunded")},
	}
}()

func TestPaymentPolicyCoversEveryStatusAndMoneyCase(t *testing.T) {
	policy := stripepolicy.PaymentPolicy(moneyView)
	for _, sc := range statusCases {
		for _, mc := range moneyCases {
			// What the table says: currency and amount come first, then the status, and only a
			// payment both sides call paid is judged on its money.
			want, moneyDecides := sc.want, mc.first || sc.local == "paid" && sc.external == "succeeded"
			if moneyDecides {
				want = mc.want
			}
			var wantDiffs []reconcile.Diff
			if want.Verdict == reconcile.Repairable || want.Verdict == reconcile.NeedsReview {
				wantDiffs = slices.Clone(mc.diffs)
				at := 0
				for at < len(wantDiffs) && (wantDiffs[at].Field == "currency" || wantDiffs[at].Field == "amount") {
					at++
				}
				var tail []reconcile.Diff
				if sc.want.Verdict == reconcile.Repairable || sc.want.Verdict == reconcile.NeedsReview {
					tail = append(tail, diff("status", sc.local, string(sc.external)))
				}
				if sc.external == "succeeded" {
					tail = append(tail, mc.whenSucceeded...)
				}
				wantDiffs = slices.Insert(wantDiffs, at, tail...)
			}
			t.Run(fmt.Sprintf("%s × %s: %s", sc.local, sc.external, mc.name), func(t *testing.T) {
				row := mc.row
				row.status = sc.local
				got := policy.Classify(row, mc.stripe.payment(sc.external))
				if err := got.Validate(); err != nil {
					t.Fatalf("invalid decision %+v: %v", got, err)
				}
				if got.Verdict != want.Verdict || got.Kind != want.Kind || got.Command != want.Command {
					t.Fatalf("got %s %q %q, want %s %q %q (detail %q)", got.Verdict, got.Kind, got.Command, want.Verdict, want.Kind, want.Command, got.Detail)
				}
				if d := cmp.Diff(wantDiffs, got.Diffs); d != "" {
					t.Errorf("diffs (-want +got):\n%s", d)
				}
				if moneyDecides && mc.detail != "" && !strings.Contains(got.Detail, mc.detail) {
					t.Errorf("detail %q does not say %q", got.Detail, mc.detail)
				}
			})
		}
	}
}

func TestPaymentPolicyNamesStatesAndHandlesNoIntent(t *testing.T) {
	policy := stripepolicy.PaymentPolicy(moneyView)
	namer, ok := any(policy).(reconcile.StateNamer[moneyRow, *stripepolicy.Payment])
	if !ok {
		t.Fatal("the money policy is not a StateNamer")
	}
	p := stripeSide{amount: 1, currency: "usd"}.payment("succeeded")
	if got := namer.LocalState(moneyRow{status: "paid"}); got != "paid" {
		t.Errorf("LocalState = %q, want paid", got)
	}
	if got := namer.ExternalState(p); got != "succeeded" {
		t.Errorf("ExternalState = %q, want succeeded", got)
	}
	p.Intent.Status = "sk_live_abcdefgh12345678"
	if got := namer.ExternalState(p); strings.Contains(got, "sk_live") {
		t.Errorf("ExternalState %q holds a key", got)
	}
	// Amounts are written with their currency in capitals: a key there must not survive that.
	p.Intent.Currency = "sk_live_abcdefgh12345678"
	if d := policy.Classify(moneyRow{status: "paid", amount: 2, currency: "usd"}, p); strings.Contains(strings.ToLower(d.Detail+fmt.Sprint(d.Diffs)), "sk_live") {
		t.Errorf("a decision holds a key: %+v", d)
	}
	for _, ext := range []*stripepolicy.Payment{nil, {}} {
		got := policy.Classify(moneyRow{status: "paid"}, ext)
		if want := reconcile.Unexpected("paid", ""); !cmp.Equal(got, want) {
			t.Errorf("Classify(paid, %+v) = %+v, want %+v", ext, got, want)
		}
	}
}
func TestAMoneyDecisionEchoingAKeyIsRedacted(t *testing.T) {
	// Whatever a proxy puts into the objects' strings, details and diffs are stored and shown.
	p := stripeSide{amount: 1000, currency: "usd", dispute: "lost"}.payment("succeeded")
	p.Disputes[0].ID = "dp_" + keyecho.Key
	p.Disputes[0].Reason = stripe.DisputeReason(keyecho.OtherKey)
	p.Refunds = []*stripe.Refund{{ID: "re_" + keyecho.Key, Status: "failed", FailureReason: stripe.RefundFailureReason(keyecho.Key)}}
	policy := stripepolicy.PaymentPolicy(moneyView)
	for _, row := range []moneyRow{
		{status: "paid", amount: 1000, currency: "usd"},                 // dispute lost
		{status: "paid", amount: 1000, currency: "usd", refunded: 1000}, // refund failed
	} {
		d := policy.Classify(row, p)
		keyecho.AssertNone(t, "a decision", fmt.Sprintf("%+v", d))
		if !strings.Contains(d.Detail, "[redacted key]") {
			t.Errorf("%s: detail %q does not show where the key was", d.Kind, d.Detail)
		}
	}
	p.Disputes[0].Status = stripe.DisputeStatus(keyecho.Key)
	keyecho.AssertNone(t, "a dispute status", fmt.Sprintf("%+v", policy.Classify(moneyRow{status: "paid", amount: 1000, currency: "usd"}, p)))
}
