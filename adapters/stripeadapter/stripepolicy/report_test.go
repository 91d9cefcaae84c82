package stripepolicy_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/tieout"
)

func TestReportMember(t *testing.T) {
	day := time.Date(2024, 1, 3, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		opts stripepolicy.PayoutOptions
		line stripepolicy.ReportLine
		want tieout.Member
	}{
		{name: "a EUR charge settled in USD carries its customer-facing amount and is booked under its PaymentIntent",
			line: stripepolicy.ReportLine{BalanceTransaction: "txn_1", Payout: "po_1", ReportingCategory: "charge", Gross: 1234, Fee: 66, Net: 1168,
				Currency: "usd", SourceID: "ch_1", ChargeID: "ch_1", PaymentIntentID: "pi_1", CustomerFacingAmount: 1000, CustomerFacingCurrency: "eur", AvailableOn: day},
			want: tieout.Member{ID: "txn_1", Type: "charge", Kind: tieout.KindPayment, SourceID: "ch_1", BookedID: "pi_1", Amount: 1234, Fee: 66,
				Net: 1168, Currency: "usd", SourceAmount: 1000, SourceCurrency: "eur", AvailableOn: day}},
		{name: "a refund is negative on both sides, whatever the sign of its customer-facing amount, and booked under its own id",
			line: stripepolicy.ReportLine{BalanceTransaction: "txn_2", ReportingCategory: "refund", Gross: -500, Net: -500, Currency: "usd",
				SourceID: "re_1", ChargeID: "ch_1", PaymentIntentID: "pi_1", CustomerFacingAmount: 500, CustomerFacingCurrency: "usd"},
			want: tieout.Member{ID: "txn_2", Type: "refund", Kind: tieout.KindRefund, SourceID: "re_1", Amount: -500, Net: -500, Currency: "usd",
				SourceAmount: -500, SourceCurrency: "usd"}},
		{name: "a host that books by PaymentIntent gets refunds and disputes under it",
			opts: stripepolicy.PayoutOptions{ByPaymentIntent: true},
			line: stripepolicy.ReportLine{BalanceTransaction: "txn_3", ReportingCategory: "dispute", Gross: -1500, Fee: 1500, Net: -3000, Currency: "usd",
				SourceID: "du_1", PaymentIntentID: "pi_1", CustomerFacingAmount: -1500, CustomerFacingCurrency: "usd"},
			want: tieout.Member{ID: "txn_3", Type: "dispute", Kind: tieout.KindDispute, SourceID: "du_1", BookedID: "pi_1", Amount: -1500, Fee: 1500,
				Net: -3000, Currency: "usd", SourceAmount: -1500, SourceCurrency: "usd"}},
		{name: "a payment that failed after it was counted is booked under the charge's PaymentIntent",
			line: stripepolicy.ReportLine{BalanceTransaction: "txn_4", ReportingCategory: "charge_failure", Gross: -1000, Net: -1000, Currency: "usd",
				SourceID: "ch_1", PaymentIntentID: "pi_1", CustomerFacingAmount: 1000, CustomerFacingCurrency: "usd"},
			want: tieout.Member{ID: "txn_4", Type: "charge_failure", Kind: tieout.KindPaymentFailureRefund, SourceID: "ch_1", BookedID: "pi_1",
				Amount: -1000, Net: -1000, Currency: "usd", SourceAmount: -1000, SourceCurrency: "usd"}},
		{name: "an earlier payout's failure is the group failure of that payout",
			line: stripepolicy.ReportLine{BalanceTransaction: "txn_5", ReportingCategory: "payout_reversal", Gross: 9000, Net: 9000, Currency: "usd", SourceID: "po_0"},
			want: tieout.Member{ID: "txn_5", Type: "payout_reversal", Kind: tieout.KindGroupFailure, SourceID: "po_0", Amount: 9000, Net: 9000, Currency: "usd"}},
		{name: "an adjustment that is not a dispute's has no kind: the tie-out reports it",
			line: stripepolicy.ReportLine{BalanceTransaction: "txn_6", ReportingCategory: "other_adjustment", Gross: -7, Net: -7, Currency: "usd", SourceID: "ch_9"},
			want: tieout.Member{ID: "txn_6", Type: "other_adjustment", SourceID: "ch_9", Amount: -7, Net: -7, Currency: "usd"}},
		{name: "a category the table does not know has no kind",
			line: stripepolicy.ReportLine{BalanceTransaction: "txn_7", ReportingCategory: "mystery", Gross: 1, Net: 1, Currency: "usd"},
			want: tieout.Member{ID: "txn_7", Type: "mystery", Amount: 1, Net: 1, Currency: "usd"}},
		{name: "a charge without a PaymentIntent is booked under its own id",
			line: stripepolicy.ReportLine{BalanceTransaction: "txn_8", ReportingCategory: "charge", Gross: 100, Net: 100, Currency: "jpy", SourceID: "ch_2",
				CustomerFacingAmount: 100, CustomerFacingCurrency: "jpy"},
			want: tieout.Member{ID: "txn_8", Type: "charge", Kind: tieout.KindPayment, SourceID: "ch_2", Amount: 100, Net: 100, Currency: "jpy",
				SourceAmount: 100, SourceCurrency: "jpy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.opts.ReportMember(tt.line)); diff != "" {
				t.Errorf("ReportMember (-want +got):\n%s", diff)
			}
		})
	}
}

// Every reporting category Stripe's specification lists for report runs (the enum of
// parameters[reporting_category] in the OpenAPI description stripe-mock embeds, v0.203.0) has a
// booked kind, or is left out on purpose and so is a finding.
func TestEveryReportingCategoryHasAKindOrIsLeftOutOnPurpose(t *testing.T) {
	kinds := stripepolicy.ReportingCategoryKinds()
	out := map[string]bool{"advance": true, "advance_funding": true, "anticipation_repayment": true, "financing_paydown": true,
		"financing_paydown_reversal": true, "financing_payout": true, "financing_payout_reversal": true, "network_cost": true,
		"other_adjustment": true, "partial_capture_reversal": true, "unreconciled_customer_funds": true}
	for _, c := range []string{"advance", "advance_funding", "anticipation_repayment", "charge", "charge_failure", "climate_order_purchase",
		"climate_order_refund", "connect_collection_transfer", "connect_reserved_funds", "contribution", "dispute", "dispute_reversal", "fee",
		"financing_paydown", "financing_paydown_reversal", "financing_payout", "financing_payout_reversal", "issuing_authorization_hold",
		"issuing_authorization_release", "issuing_dispute", "issuing_transaction", "network_cost", "other_adjustment", "partial_capture_reversal",
		"payout", "payout_reversal", "platform_earning", "platform_earning_refund", "refund", "refund_failure", "risk_reserved_funds", "tax",
		"topup", "topup_reversal", "transfer", "transfer_reversal", "unreconciled_customer_funds"} {
		if _, ok := kinds[c]; ok == out[c] {
			t.Errorf("category %s: in the table %v, left out on purpose %v", c, ok, out[c])
		}
	}
	if len(kinds)+len(out) != 37 {
		t.Errorf("the table has %d categories and %d are left out: one not in the specification's 37", len(kinds), len(out))
	}
}
