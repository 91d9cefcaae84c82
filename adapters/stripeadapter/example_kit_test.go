package stripeadapter_test

import (
	"context"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// A shipped object: Subscriptions, whose list sends status=all so that a canceled subscription
// is listed with the others instead of looking missing.
func ExampleNewObjectGateway() {
	ctx := context.Background()
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()
	created := time.Now().Add(-time.Hour)
	active := srv.AddSubscription(stripetest.Subscription{Status: stripe.SubscriptionStatusActive, Created: created})
	canceled := srv.AddSubscription(stripetest.Subscription{Status: stripe.SubscriptionStatusCanceled, Created: created})

	subs, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}, stripeadapter.Subscriptions())
	if err != nil {
		panic(err)
	}
	got, err := subs.FetchBatch(ctx, []reconcile.Lookup{
		{ExternalID: active, CreatedAt: created}, {ExternalID: canceled, CreatedAt: created},
	}, func(context.Context) error { return nil })
	if err != nil {
		panic(err)
	}
	fmt.Println(got[active].Status, got[canceled].Status)
	fmt.Printf("list calls %d, retrieve calls %d\n", srv.Requests(stripetest.ListSubscriptions), srv.Requests(stripetest.RetrieveSubscription))
	// Output:
	// active canceled
	// list calls 1, retrieve calls 0
}

// An object the project does not ship: a host describes Refunds (path, id prefix, event types,
// how to read id, creation time and state; ListParams and Expand when the object needs them) and reconciles a refunds table against them with
// its own classifier. The gateway brings the error mapping, the id check, the bulk list and
// the feeds.
func ExampleObject() {
	ctx := context.Background()
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()
	pi := srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000})
	refund, err := srv.Refund(pi, 400)
	if err != nil {
		panic(err)
	}
	if err := srv.SetRefundStatus(refund, stripe.RefundStatusFailed, "expired_or_canceled_card"); err != nil {
		panic(err)
	}

	refunds := stripeadapter.Object[*stripe.Refund]{
		Name:       "refund", // Stripe's "object" value
		Path:       "/v1/refunds",
		IDPrefix:   "re_",
		EventTypes: []string{"refund.created", "refund.updated", "refund.failed"},
		ID:         func(r *stripe.Refund) string { return r.ID },
		Created:    func(r *stripe.Refund) int64 { return r.Created },
		State:      func(r *stripe.Refund) string { return string(r.Status) },
	}
	gateway, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}, refunds)
	if err != nil {
		panic(err)
	}

	// The refunds table says the refund went through; Stripe says it failed.
	store := memstore.New[int, string](memstore.Options{})
	now := time.Now().Add(-time.Hour)
	store.Put(memstore.Row[int, string]{Key: 1, ExternalID: refund, Local: "succeeded", CreatedAt: now, UpdatedAt: now})
	store.Put(memstore.Row[int, string]{Key: 2, ExternalID: "ch_NotARefund", Local: "succeeded", CreatedAt: now, UpdatedAt: now})
	classify := reconcile.ClassifierFunc[string, *stripe.Refund](func(local string, r *stripe.Refund) reconcile.Decision {
		if r == nil {
			return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "missing_externally"}
		}
		if string(r.Status) == local {
			return reconcile.Decision{Verdict: reconcile.InSync}
		}
		return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "refund_" + string(r.Status)}
	})
	_, err = reconcile.RunBatch(ctx, reconcile.Config[string, *stripe.Refund]{
		Job: "refunds", Source: store, Sink: store, Gateway: gateway, Classifier: classify,
		ExternalState: func(r *stripe.Refund) string { return string(r.Status) },
	})
	if err != nil {
		panic(err)
	}
	findings, err := store.ListFindings(ctx, reconcile.FindingQuery{State: reconcile.FindingsAll})
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		fmt.Printf("row %s: %s (local %s, Stripe %q)\n", f.RecordID, f.Kind, f.Local, f.External)
	}
	fmt.Println("refund retrieves:", srv.Requests(stripetest.RetrieveRefund))
	// Output:
	// row 1: refund_failed (local succeeded, Stripe "failed")
	// row 2: invalid_external_id (local succeeded, Stripe "")
	// refund retrieves: 1
}
