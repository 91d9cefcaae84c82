package stripetest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// Example_payouts settles a payment and a refund, pays them out automatically, fails the payout
// after it was paid, and lists the payout's balance transactions with their sources, as a
// tie-out does.
func Example_payouts() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	srv := stripetest.NewServer(stripetest.Options{Now: func() time.Time { return now }})
	defer srv.Close()

	pi := srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 10000})
	if _, err := srv.Refund(pi, 2500); err != nil {
		panic(err)
	}
	now = now.Add(48 * time.Hour) // the charge's funds become available
	po := srv.AddPayout(stripetest.Payout{})
	if err := srv.SetPayoutStatus(po, stripe.PayoutStatusPaid); err != nil {
		panic(err)
	}
	if err := srv.FailPayout(po, stripe.PayoutFailureCodeAccountClosed, ""); err != nil {
		panic(err)
	}

	sc := stripe.NewClient(srv.Key(), stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:           stripe.String(srv.URL()),
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
	ctx := context.Background()
	p, err := sc.V1Payouts.Retrieve(ctx, po, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("payout:", p.Amount, p.Status, p.FailureCode, p.ReconciliationStatus)
	params := &stripe.BalanceTransactionListParams{Payout: stripe.String(po)}
	params.AddExpand("data.source")
	for bt, err := range sc.V1BalanceTransactions.List(ctx, params) {
		if err != nil {
			panic(err)
		}
		fmt.Println("line:", bt.Type, bt.Amount, bt.Fee, bt.Net, bt.Source.Type)
	}
	// Output:
	// payout: 7180 failed account_closed completed
	// line: payout -7180 0 -7180 payout
	// line: refund -2500 0 -2500 refund
	// line: charge 10000 320 9680 charge
}
