package stripemoney_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripemoney"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// order is a host's payments row: its status, amount in minor units and currency, and what it
// knows of refunds and disputes.
type order struct {
	Status, Currency string
	Amount, Refunded int64
	Dispute          string
}

// The money policy reads each payment whole from Stripe (the intent, its charge, the charge's
// disputes) and says what differs: a refund made in the Dashboard, a dispute awaiting
// evidence, an amount in yen that is not the order's.
func Example() {
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()
	intents, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}, stripeadapter.PaymentIntents())
	if err != nil {
		panic(err)
	}
	gateway, err := stripemoney.New(intents, stripemoney.Config{})
	if err != nil {
		panic(err)
	}
	paid := func(amount int64, currency string) string {
		return srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: amount, Currency: currency})
	}
	refunded, disputed, yen := paid(2500, "usd"), paid(4000, "eur"), paid(1500, "jpy")
	if _, err := srv.Refund(refunded, 1000); err != nil { // a partial refund, in the Dashboard
		panic(err)
	}
	due := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	dispute, err := srv.Dispute(disputed, 0, stripe.DisputeStatusNeedsResponse, due)
	if err != nil {
		panic(err)
	}

	policy := stripepolicy.PaymentPolicy(func(o order) stripepolicy.LocalPayment {
		return stripepolicy.LocalPayment{Status: o.Status, Amount: o.Amount, Currency: o.Currency,
			AmountRefunded: o.Refunded, DisputeStatus: o.Dispute}
	})
	for _, c := range []struct {
		id  string
		row order
	}{
		{refunded, order{Status: "paid", Amount: 2500, Currency: "usd"}},
		{disputed, order{Status: "paid", Amount: 4000, Currency: "eur"}},
		{yen, order{Status: "paid", Amount: 150000, Currency: "jpy"}}, // yen multiplied by 100
	} {
		p, err := gateway.Fetch(context.Background(), c.id)
		if err != nil {
			panic(err)
		}
		d := policy.Classify(c.row, p)
		detail := strings.ReplaceAll(d.Detail, dispute, "dp_123") // the fake's ids are random
		fmt.Printf("%s %s: %s\n", d.Verdict, d.Kind, detail)
		for _, df := range d.Diffs {
			fmt.Printf("  %s: ours %s, Stripe's %s\n", df.Field, df.Local, df.External)
		}
	}
	// Output:
	// repairable missed_partial_refund: Stripe refunded USD 10.00, the row records USD 0.00
	//   amount_refunded: ours USD 0.00, Stripe's USD 10.00
	// needs_review dispute_needs_response: dispute dp_123 (fraudulent, EUR 40.00) needs a response: respond by 2026-03-01T12:00:00Z
	//   dispute_status: ours none, Stripe's needs_response
	// needs_review amount_mismatch: the row charges JPY 150,000, the PaymentIntent JPY 1,500
	//   amount: ours JPY 150,000, Stripe's JPY 1,500
}
