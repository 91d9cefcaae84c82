package stripepayouts_test

import (
	"context"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/tieout"
)

// A payment and a refund made in the Dashboard are paid out; the host booked the payment
// only. The tie-out lists the payout and its balance transactions over HTTP (here from
// stripetest) and finds the refund, a missed booking the canonical writer can make.
func Example() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	srv := stripetest.NewServer(stripetest.Options{Now: func() time.Time { return now }})
	defer srv.Close()
	pi := srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 10000, Currency: "usd"})
	if _, err := srv.Refund(pi, 2500); err != nil {
		panic(err)
	}
	now = now.Add(48 * time.Hour) // the charge's funds are available: the payout carries both
	po := srv.AddPayout(stripetest.Payout{})
	if err := srv.SetPayoutStatus(po, stripe.PayoutStatusPaid); err != nil {
		panic(err)
	}

	var ledger tieout.MemoryLedger // the host's books
	ledger.Book(tieout.Booked{Kind: tieout.KindPayment, ID: pi, Amount: 10000, Currency: "usd", Basis: tieout.Presentment})

	payouts, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}, stripeadapter.Payouts())
	if err != nil {
		panic(err)
	}
	lister, err := stripepayouts.New(payouts, stripepayouts.Config{})
	if err != nil {
		panic(err)
	}
	store := memstore.New[string, string](memstore.Options{})
	sweep, err := tieout.NewStep(tieout.StepConfig{Job: "payouts", Lane: "sweep", Lister: lister, Ledger: &ledger, Sink: store})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	rep, err := sweep.RunBatch(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("payouts tied out %d, calls %d, new findings %d, end of pass %v\n", rep.Scanned, srv.Requests(stripetest.ListPayouts)+
		srv.Requests(stripetest.ListBalanceTransactions), rep.NewFindings, rep.Wrapped)
	findings, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: "payouts"})
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		fmt.Println(f.Kind, f.Command)
	}
	// Output:
	// payouts tied out 1, calls 2, new findings 1, end of pass true
	// unbooked_refund BookRefund
}
