package stripeadapter_test

import (
	"context"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// A gateway of PaymentIntents against the fake Stripe, judged by the status policy: two pending
// payments whose success and cancellation webhooks were lost, and one paid payment Stripe has
// never heard of.
func Example() {
	ctx := context.Background()
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()
	created := time.Now().Add(-time.Hour)
	succeeded := srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Created: created})
	canceled := srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusCanceled, Created: created})

	store := memstore.New[int, string](memstore.Options{})
	store.Put(memstore.Row[int, string]{Key: 1, ExternalID: succeeded, Local: stripepolicy.LocalPending, CreatedAt: created, UpdatedAt: created})
	store.Put(memstore.Row[int, string]{Key: 2, ExternalID: canceled, Local: stripepolicy.LocalPending, CreatedAt: created, UpdatedAt: created})
	store.Put(memstore.Row[int, string]{Key: 3, ExternalID: "pi_NeverCreated", Local: stripepolicy.LocalPaid, CreatedAt: created, UpdatedAt: created})

	gateway, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}, stripeadapter.PaymentIntents())
	if err != nil {
		panic(err)
	}
	report, err := reconcile.RunBatch(ctx, reconcile.Config[string, *stripe.PaymentIntent]{
		Job: "payments", Source: store, Sink: store, Gateway: gateway,
		Classifier: stripepolicy.PaymentIntentPolicy(), ExternalState: stripepolicy.PaymentIntentState,
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("list calls %d, retrieve calls %d\n", srv.Requests(stripetest.ListPaymentIntents), srv.Requests(stripetest.RetrievePaymentIntent))
	findings, err := store.ListFindings(ctx, reconcile.FindingQuery{State: reconcile.FindingsAll})
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		fmt.Printf("row %s: %s (local %s, Stripe %q)\n", f.RecordID, f.Kind, f.Local, f.External)
	}
	for _, c := range store.Commands() {
		fmt.Println("queued", c.Command.Name, "for row", c.Command.RecordID)
	}
	fmt.Println("new findings:", report.NewFindings)
	// Output:
	// list calls 1, retrieve calls 1
	// row 1: missed_success (local pending, Stripe "succeeded")
	// row 2: missed_cancel (local pending, Stripe "canceled")
	// row 3: missing_externally (local paid, Stripe "")
	// queued ApplyPaymentSucceeded for row 1
	// queued ApplyPaymentCanceled for row 2
	// new findings: 3
}
