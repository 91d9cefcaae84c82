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

// The same tie-out with the sweep's payouts itemized by a report run: the report type read,
// the run created, polled and its file downloaded, whatever the number of lines, instead of a
// list call per hundred lines of each payout. The refund never booked is found the same way.
func ExampleLister_WithReports() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	srv := stripetest.NewServer(stripetest.Options{Now: func() time.Time { return now }})
	defer srv.Close()
	pi := srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 10000, Currency: "usd"})
	if _, err := srv.Refund(pi, 2500); err != nil {
		panic(err)
	}
	now = now.Add(48 * time.Hour)
	po := srv.AddPayout(stripetest.Payout{})
	if err := srv.SetPayoutStatus(po, stripe.PayoutStatusPaid); err != nil {
		panic(err)
	}
	now = now.Add(4 * 24 * time.Hour) // the payout arrived days ago: in the report's data

	var ledger tieout.MemoryLedger
	ledger.Book(tieout.Booked{Kind: tieout.KindPayment, ID: pi, Amount: 10000, Currency: "usd", Basis: tieout.Presentment})

	payouts, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}, stripeadapter.Payouts())
	if err != nil {
		panic(err)
	}
	lister, err := stripepayouts.New(payouts, stripepayouts.Config{})
	if err != nil {
		panic(err)
	}
	// Stripe takes seconds to minutes to run a report: the default polls from every 2s.
	byReport, err := lister.WithReports(stripepayouts.ReportOptions{PollInterval: time.Millisecond})
	if err != nil {
		panic(err)
	}
	store := memstore.New[string, string](memstore.Options{})
	sweep, err := tieout.NewStep(tieout.StepConfig{Job: "payouts", Lane: "sweep", Lister: byReport, Ledger: &ledger, Sink: store})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	rep, err := sweep.RunBatch(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("payouts tied out %d, new findings %d\n", rep.Scanned, rep.NewFindings)
	fmt.Printf("calls: payout lists %d, report type %d, runs created %d, polled %d, files %d, balance transaction lists %d\n",
		srv.Requests(stripetest.ListPayouts), srv.Requests(stripetest.RetrieveReportType), srv.Requests(stripetest.CreateReportRun),
		srv.Requests(stripetest.RetrieveReportRun), srv.Requests(stripetest.DownloadFile), srv.Requests(stripetest.ListBalanceTransactions))
	findings, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: "payouts"})
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		fmt.Println(f.Kind, f.Command)
	}
	// Output:
	// payouts tied out 1, new findings 1
	// calls: payout lists 1, report type 1, runs created 1, polled 1, files 1, balance transaction lists 0
	// unbooked_refund BookRefund
}
