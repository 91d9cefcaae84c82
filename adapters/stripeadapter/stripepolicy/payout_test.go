package stripepolicy_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/tieout"
)

// bt reads a balance transaction as stripe-go reads the wire, so that the expanded source
// is decoded as a list call with expand[]=data.source returns it.
func bt(t *testing.T, js string) *stripe.BalanceTransaction {
	t.Helper()
	var b stripe.BalanceTransaction
	if err := json.Unmarshal([]byte(js), &b); err != nil {
		t.Fatal(err)
	}
	return &b
}

func TestPayoutMember(t *testing.T) {
	tests := []struct {
		name string
		opts stripepolicy.PayoutOptions
		json string
		want tieout.Member
	}{
		{name: "a EUR charge settled in USD carries its presentment amount and is booked under its PaymentIntent",
			json: `{"id":"txn_1","object":"balance_transaction","type":"charge","amount":1234,"fee":66,"net":1168,"currency":"usd",
				"exchange_rate":1.234,"available_on":1777593600,"status":"available",
				"source":{"id":"ch_1","object":"charge","amount":1000,"amount_captured":1000,"currency":"eur","payment_intent":"pi_1"}}`,
			want: tieout.Member{ID: "txn_1", Type: "charge", Kind: tieout.KindPayment, SourceID: "ch_1", BookedID: "pi_1", Amount: 1234, Fee: 66,
				Net: 1168, Currency: "usd", SourceAmount: 1000, SourceCurrency: "eur", ExchangeRate: 1.234, Status: "available"}},
		{name: "a refund is negative on both sides and booked under its own id",
			json: `{"id":"txn_2","type":"refund","amount":-500,"net":-500,"currency":"usd",
				"source":{"id":"re_1","object":"refund","amount":500,"currency":"usd","payment_intent":"pi_1"}}`,
			want: tieout.Member{ID: "txn_2", Type: "refund", Kind: tieout.KindRefund, SourceID: "re_1", Amount: -500, Net: -500, Currency: "usd",
				SourceAmount: -500, SourceCurrency: "usd"}},
		{name: "a host that books by PaymentIntent gets refunds under it",
			opts: stripepolicy.PayoutOptions{ByPaymentIntent: true},
			json: `{"id":"txn_2","type":"refund","amount":-500,"net":-500,"currency":"usd",
				"source":{"id":"re_1","object":"refund","amount":500,"currency":"usd","payment_intent":"pi_1"}}`,
			want: tieout.Member{ID: "txn_2", Type: "refund", Kind: tieout.KindRefund, SourceID: "re_1", BookedID: "pi_1", Amount: -500, Net: -500,
				Currency: "usd", SourceAmount: -500, SourceCurrency: "usd"}},
		{name: "an adjustment for a dispute's withdrawal is a dispute",
			json: `{"id":"txn_3","type":"adjustment","amount":-1500,"fee":1500,"net":-3000,"currency":"usd",
				"source":{"id":"du_1","object":"dispute","amount":1500,"currency":"usd","payment_intent":"pi_1"}}`,
			want: tieout.Member{ID: "txn_3", Type: "adjustment", Kind: tieout.KindDispute, SourceID: "du_1", Amount: -1500, Fee: 1500, Net: -3000,
				Currency: "usd", SourceAmount: -1500, SourceCurrency: "usd"}},
		{name: "an adjustment whose source was not expanded is a dispute by its id",
			json: `{"id":"txn_4","type":"adjustment","amount":1500,"net":1500,"currency":"usd","source":"du_1"}`,
			want: tieout.Member{ID: "txn_4", Type: "adjustment", Kind: tieout.KindDispute, SourceID: "du_1", Amount: 1500, Net: 1500, Currency: "usd"}},
		{name: "an adjustment of anything else has no kind: the tie-out reports it",
			json: `{"id":"txn_5","type":"adjustment","amount":-7,"net":-7,"currency":"usd","source":"ch_9"}`,
			want: tieout.Member{ID: "txn_5", Type: "adjustment", SourceID: "ch_9", Amount: -7, Net: -7, Currency: "usd"}},
		{name: "a type the table does not know has no kind",
			json: `{"id":"txn_6","type":"teleport","amount":1,"net":1,"currency":"usd"}`,
			want: tieout.Member{ID: "txn_6", Type: "teleport", Amount: 1, Net: 1, Currency: "usd"}},
		{name: "the payout's own line",
			json: `{"id":"txn_7","type":"payout","amount":-8000,"net":-8000,"currency":"usd","source":"po_1"}`,
			want: tieout.Member{ID: "txn_7", Type: "payout", Kind: tieout.KindGroup, SourceID: "po_1", Amount: -8000, Net: -8000, Currency: "usd"}},
		{name: "a failed payout's money back",
			json: `{"id":"txn_8","type":"payout_failure","amount":8000,"net":8000,"currency":"usd","source":"po_0"}`,
			want: tieout.Member{ID: "txn_8", Type: "payout_failure", Kind: tieout.KindGroupFailure, SourceID: "po_0", Amount: 8000, Net: 8000, Currency: "usd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.opts.PayoutMember(bt(t, tt.json))
			got.AvailableOn = got.AvailableOn.UTC()
			if tt.want.ID == "txn_1" {
				tt.want.AvailableOn = got.AvailableOn
				if got.AvailableOn.Unix() != 1777593600 {
					t.Errorf("available on %v", got.AvailableOn)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("member (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEveryKnownBalanceTransactionTypeHasAKindOrIsLeftOutOnPurpose(t *testing.T) {
	kinds := stripepolicy.BalanceTransactionKinds()
	// The types left out on purpose: judged by their source (adjustment), or money movements
	// whose booking no host shape here says (a person looks).
	out := map[string]bool{"adjustment": true, "payment_reversal": true, "payment_unreconciled": true, "obligation_outbound": true,
		"obligation_reversal_inbound": true, "advance": true, "advance_funding": true, "anticipation_repayment": true,
		"stripe_balance_payment_debit": true, "stripe_balance_payment_debit_reversal": true}
	for _, typ := range []stripe.BalanceTransactionType{"adjustment", "advance", "advance_funding", "anticipation_repayment", "application_fee",
		"application_fee_refund", "charge", "climate_order_purchase", "climate_order_refund", "connect_collection_transfer", "contribution",
		"issuing_authorization_hold", "issuing_authorization_release", "issuing_dispute", "issuing_transaction", "obligation_outbound",
		"obligation_reversal_inbound", "payment", "payment_failure_refund", "payment_network_reserve_hold", "payment_network_reserve_release",
		"payment_refund", "payment_reversal", "payment_unreconciled", "payout", "payout_cancel", "payout_failure", "payout_minimum_balance_hold",
		"payout_minimum_balance_release", "refund", "refund_failure", "reserve_transaction", "reserved_funds", "stripe_balance_payment_debit",
		"stripe_balance_payment_debit_reversal", "stripe_fee", "stripe_fx_fee", "tax_fee", "topup", "topup_reversal", "transfer",
		"transfer_cancel", "transfer_failure", "transfer_refund"} {
		if _, ok := kinds[string(typ)]; ok == out[string(typ)] {
			t.Errorf("type %s: in the table %v, left out on purpose %v", typ, ok, out[string(typ)])
		}
	}
}

func TestPayoutGroup(t *testing.T) {
	for _, tt := range []struct {
		status    stripe.PayoutStatus
		automatic bool
		want      tieout.Group
	}{
		{"paid", true, tieout.Group{ID: "po_1", Account: "acct_1", Status: "paid", State: tieout.GroupPaid, Amount: 8000, Currency: "usd", Itemized: true}},
		{"in_transit", true, tieout.Group{ID: "po_1", Account: "acct_1", Status: "in_transit", State: tieout.GroupPending, Amount: 8000, Currency: "usd", Itemized: true}},
		{"failed", true, tieout.Group{ID: "po_1", Account: "acct_1", Status: "failed", State: tieout.GroupFailed, Terminal: true, Amount: 8000, Currency: "usd", Itemized: true}},
		{"canceled", false, tieout.Group{ID: "po_1", Account: "acct_1", Status: "canceled", State: tieout.GroupFailed, Terminal: true, Amount: 8000, Currency: "usd"}},
		{"teleported", true, tieout.Group{ID: "po_1", Account: "acct_1", Status: "teleported", Amount: 8000, Currency: "usd", Itemized: true}},
	} {
		got := stripepolicy.PayoutGroup(&stripe.Payout{ID: "po_1", Status: tt.status, Automatic: tt.automatic, Amount: 8000, Currency: "usd"}, "acct_1")
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.status, diff)
		}
	}
}

// A payout as Stripe lists it, converted by the policy and tied out against a host that
// books by PaymentIntent in presentment currency: in sync.
func TestAStripePayoutTiesOut(t *testing.T) {
	opts := stripepolicy.PayoutOptions{ByPaymentIntent: true}
	var members []tieout.Member
	for _, js := range []string{
		`{"id":"txn_1","type":"charge","amount":1234,"fee":66,"net":1168,"currency":"usd","exchange_rate":1.234,
			"source":{"id":"ch_1","object":"charge","amount":1000,"amount_captured":1000,"currency":"eur","payment_intent":"pi_1"}}`,
		`{"id":"txn_2","type":"refund","amount":-300,"net":-300,"currency":"usd","exchange_rate":1.2,
			"source":{"id":"re_1","object":"refund","amount":250,"currency":"eur","payment_intent":"pi_1"}}`,
		`{"id":"txn_3","type":"stripe_fee","amount":-18,"net":-18,"currency":"usd"}`,
		`{"id":"txn_4","type":"payout","amount":-850,"net":-850,"currency":"usd","source":"po_1"}`,
	} {
		members = append(members, opts.PayoutMember(bt(t, js)))
	}
	g := stripepolicy.PayoutGroup(&stripe.Payout{ID: "po_1", Status: "paid", Automatic: true, Amount: 850, Currency: "usd"}, "")
	booked := []tieout.Booked{
		{Kind: tieout.KindPayment, ID: "pi_1", Amount: 1000, Currency: "eur", Basis: tieout.Presentment},
		{Kind: tieout.KindRefund, ID: "pi_1", Amount: -250, Currency: "eur", Basis: tieout.Presentment},
	}
	if fs := (tieout.Policy{}).Classify(g, members, booked); len(fs) != 0 {
		t.Errorf("findings: %+v", fs)
	}
}
