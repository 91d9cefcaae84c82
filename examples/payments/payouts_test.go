package main

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/pgledger"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/tieout"
)

// payoutLedger is this host's ledger as the payout tie-out reads it: its ledger table's
// entries under their payment's PaymentIntent. The host books payments (payment_succeeded)
// and refunds (refund, negative, one entry per change of the amount refunded); a dispute only
// changes the payment's dispute_status, so dispute adjustments are not booked here and count
// in a payout's sum only (the money policy watches disputes).
const payoutLedger = `CREATE VIEW reconcile_demo.payout_ledger AS
	SELECT l.id, l.entry, p.external_id, l.amount, p.currency, l.created_at
	FROM reconcile_demo.ledger l JOIN reconcile_demo.payments p ON p.id = l.payment_id`

// The tie-out reads this host's ledger: a payout carrying a payment and its refund, both booked,
// and a refund made in the Dashboard that the host never booked, which the tie-out repairs.
func TestThisHostsPayoutsTieOut(t *testing.T) {
	ctx := t.Context()
	pool, schema := pgtest.PoolSchema(t)
	for _, sql := range []string{createSchema, payoutLedger,
		`INSERT INTO reconcile_demo.payments (order_id, external_id, status, amount, currency, amount_refunded)
			VALUES ('ord_1', 'pi_1', 'paid', 1000, 'eur', 300)`,
		`INSERT INTO reconcile_demo.ledger (payment_id, entry, amount, applied_by)
			SELECT id, 'payment_succeeded', 1000, 'stripe-webhook' FROM reconcile_demo.payments
			UNION ALL SELECT id, 'refund', -300, 'stripe-webhook' FROM reconcile_demo.payments`,
	} {
		if _, err := pool.Exec(ctx, inSchema(schema, sql)); err != nil {
			t.Fatal(err)
		}
	}
	ledger, err := pgledger.New(pool, pgledger.Config{Tables: []pgledger.Table{{Schema: schema, Name: "payout_ledger",
		KindColumn: "entry", KindValues: map[string]string{"payment_succeeded": tieout.KindPayment, "refund": tieout.KindRefund},
		IDColumn: "external_id"}}})
	if err != nil {
		t.Fatal(err)
	}
	// The payout as Stripe lists it (?payout=po_1, expand[]=data.source): EUR settled in USD.
	opts := stripepolicy.PayoutOptions{ByPaymentIntent: true}
	var members []tieout.Member
	for _, js := range []string{
		`{"id":"txn_1","type":"charge","amount":1100,"fee":62,"net":1038,"currency":"usd","exchange_rate":1.1,
			"source":{"id":"ch_1","object":"charge","amount":1000,"amount_captured":1000,"currency":"eur","payment_intent":"pi_1"}}`,
		`{"id":"txn_2","type":"refund","amount":-330,"net":-330,"currency":"usd","exchange_rate":1.1,
			"source":{"id":"re_1","object":"refund","amount":300,"currency":"eur","payment_intent":"pi_1"}}`,
		`{"id":"txn_3","type":"refund","amount":-110,"net":-110,"currency":"usd","exchange_rate":1.1,
			"source":{"id":"re_2","object":"refund","amount":100,"currency":"eur","payment_intent":"pi_1"}}`,
		`{"id":"txn_4","type":"payout","amount":-598,"net":-598,"currency":"usd","source":"po_1"}`,
	} {
		var bt stripe.BalanceTransaction
		if err := json.Unmarshal([]byte(js), &bt); err != nil {
			t.Fatal(err)
		}
		members = append(members, opts.PayoutMember(&bt))
	}
	g := stripepolicy.PayoutGroup(&stripe.Payout{ID: "po_1", Status: "paid", Automatic: true, Amount: 598, Currency: "usd"}, "")
	policy := tieout.Policy{Books: []string{tieout.KindPayment, tieout.KindRefund}}
	booked, err := ledger.Booked(ctx, policy.Keys(members))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range policy.Classify(g, members, booked) {
		got = append(got, f.Record+" "+f.Decision.Kind+" "+f.Decision.Command)
	}
	if want := []string{"txn_3 unbooked_refund BookRefund"}; !slices.Equal(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	}
}
