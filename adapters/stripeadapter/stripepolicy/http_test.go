package stripepolicy_test

import (
	"context"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// The policies read fields the table tests set by hand: the period on a subscription's items,
// cancel_at_period_end, an invoice's three amounts, a session's payment_status. These tests
// read them as the object kit's gateways decode them from stripetest over HTTP, as the
// objects move the way Stripe moves them.

// objectGateway is a gateway of obj's objects at srv.
func objectGateway[T any](t *testing.T, srv *stripetest.Server, obj stripeadapter.Object[T]) *stripeadapter.ObjectGateway[T] {
	t.Helper()
	g, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL(), Timeout: 5 * time.Second}, obj)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// judge fetches id through gateway and returns the policy's decision on row against it.
func judge[L, T any](t *testing.T, gateway *stripeadapter.ObjectGateway[T], policy reconcile.Classifier[L, T], id string, row L) reconcile.Decision {
	t.Helper()
	obj, err := gateway.Fetch(context.Background(), id)
	if err != nil {
		t.Fatalf("fetch %s: %v", id, err)
	}
	d := policy.Classify(row, obj)
	if err := d.Validate(); err != nil {
		t.Fatalf("invalid decision %+v: %v", d, err)
	}
	return d
}

func TestTheSubscriptionPolicyJudgesSubscriptionsReadOverHTTP(t *testing.T) {
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()
	end := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	id := srv.AddSubscription(stripetest.Subscription{CurrentPeriodStart: end.AddDate(0, -1, 0), CurrentPeriodEnd: end})
	gateway, policy := objectGateway(t, srv, stripeadapter.Subscriptions()), stripepolicy.SubscriptionPolicy(subView)

	row := subRow{status: "active", paidThrough: end}
	if d := judge(t, gateway, policy, id, row); d.Verdict != reconcile.InSync {
		t.Fatalf("an agreeing row: %+v, want in sync", d)
	}
	if d := judge(t, gateway, policy, id, subRow{status: "active", paidThrough: end.Add(time.Second)}); d.Kind != stripepolicy.KindPaidThroughAhead {
		t.Errorf("a row a second past the items' period end: %+v, want %s", d, stripepolicy.KindPaidThroughAhead)
	}
	if err := srv.SetCancelAtPeriodEnd(id, true); err != nil {
		t.Fatal(err)
	}
	if d := judge(t, gateway, policy, id, row); d.Kind != stripepolicy.KindCancellationScheduledExternally {
		t.Errorf("a cancellation set in the portal: %+v, want %s", d, stripepolicy.KindCancellationScheduledExternally)
	}
	if err := srv.SetSubscriptionStatus(id, stripe.SubscriptionStatusCanceled); err != nil {
		t.Fatal(err)
	}
	if d := judge(t, gateway, policy, id, row); d.Kind != stripepolicy.KindSubscriptionCanceledExternally {
		t.Errorf("a subscription canceled at Stripe: %+v, want %s", d, stripepolicy.KindSubscriptionCanceledExternally)
	}
}

func TestTheInvoicePolicyJudgesInvoicesReadOverHTTP(t *testing.T) {
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()
	id := srv.AddInvoice(stripetest.Invoice{Status: stripe.InvoiceStatusOpen, Currency: "jpy", AmountDue: 1000})
	gateway, policy := objectGateway(t, srv, stripeadapter.Invoices()), stripepolicy.InvoicePolicy(invoiceView)

	open := invoiceRow{status: "open", currency: "jpy", due: 1000, remaining: 1000}
	if d := judge(t, gateway, policy, id, open); d.Verdict != reconcile.InSync {
		t.Fatalf("an agreeing row: %+v, want in sync", d)
	}
	if err := srv.SetInvoiceAmountPaid(id, 400); err != nil {
		t.Fatal(err)
	}
	d := judge(t, gateway, policy, id, open)
	if d.Kind != stripepolicy.KindMissedPayment || len(d.Diffs) != 2 || d.Diffs[1] != diff("amount_remaining", "JPY 1,000", "JPY 600") {
		t.Errorf("a part paid at Stripe: %+v, want %s with amount_paid and amount_remaining", d, stripepolicy.KindMissedPayment)
	}
	if err := srv.SetInvoiceStatus(id, stripe.InvoiceStatusPaid); err != nil {
		t.Fatal(err)
	}
	if d := judge(t, gateway, policy, id, invoiceRow{status: "paid", currency: "jpy", due: 1000, paid: 1000}); d.Verdict != reconcile.InSync {
		t.Errorf("a row paid as Stripe is: %+v, want in sync", d)
	}
	if d := judge(t, gateway, policy, id, invoiceRow{status: "paid", currency: "jpy", due: 1100, paid: 1100}); d.Kind != stripepolicy.KindAmountMismatch {
		t.Errorf("a row billing another amount: %+v, want %s", d, stripepolicy.KindAmountMismatch)
	}
}

func TestTheCheckoutPolicyFulfilsOnPaymentStatusReadOverHTTP(t *testing.T) {
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()
	id := srv.AddCheckoutSession(stripetest.CheckoutSession{AmountTotal: 2500})
	// The order records what it charges, USD 25.00, as the session does.
	gateway, policy := objectGateway(t, srv, stripeadapter.CheckoutSessions()), stripepolicy.CheckoutPolicy(func(r orderRow) stripepolicy.LocalCheckout {
		lc := checkoutView(r)
		lc.Currency, lc.AmountTotal = "usd", 2500
		return lc
	})

	// A bank debit: the session completes unpaid.
	if err := srv.CompleteCheckoutSession(id, stripe.CheckoutSessionPaymentStatusUnpaid); err != nil {
		t.Fatal(err)
	}
	if d := judge(t, gateway, policy, id, orderRow{"complete", "unpaid", true}); d.Kind != stripepolicy.KindFulfilledWithoutPayment {
		t.Errorf("an order fulfilled on status complete alone: %+v, want %s", d, stripepolicy.KindFulfilledWithoutPayment)
	}
	if d := judge(t, gateway, policy, id, orderRow{"complete", "unpaid", false}); d.Verdict != reconcile.InSync {
		t.Errorf("an order waiting for its bank debit: %+v, want in sync", d)
	}
	if err := srv.SettleCheckoutSession(id, true); err != nil {
		t.Fatal(err)
	}
	if d := judge(t, gateway, policy, id, orderRow{"complete", "unpaid", false}); d.Kind != stripepolicy.KindMissedFulfillment || d.Command != stripepolicy.CommandFulfillCheckout {
		t.Errorf("a debit that succeeded, the order not fulfilled: %+v, want %s", d, stripepolicy.KindMissedFulfillment)
	}
}
