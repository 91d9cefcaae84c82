package stripepolicy_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// A subscriptions row of the host's own, and the view the policy reads it through.
type SubscriptionRow struct {
	Status            string
	CancelAtPeriodEnd bool
	CurrentPeriodEnd  time.Time
}

// The subscription policy takes back access Stripe no longer bills for, and sends a row that
// cancelled what Stripe still bills to a person.
func ExampleSubscriptionPolicy() {
	policy := stripepolicy.SubscriptionPolicy(func(r SubscriptionRow) stripepolicy.LocalSubscription {
		return stripepolicy.LocalSubscription{Status: r.Status, CancelAtPeriodEnd: r.CancelAtPeriodEnd, PaidThrough: r.CurrentPeriodEnd}
	})
	end := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	sub := func(status stripe.SubscriptionStatus) *stripe.Subscription {
		return &stripe.Subscription{ID: "sub_1", Status: status, Items: &stripe.SubscriptionItemList{
			Data: []*stripe.SubscriptionItem{{CurrentPeriodEnd: end.Unix()}}}}
	}
	for _, c := range []struct {
		row SubscriptionRow
		sub *stripe.Subscription
	}{
		{SubscriptionRow{"active", false, end}, sub("active")},
		{SubscriptionRow{"active", false, end}, sub("canceled")},
		{SubscriptionRow{"active", false, end.AddDate(0, 1, 0)}, sub("active")},
		{SubscriptionRow{"canceled", false, end}, sub("active")},
	} {
		d := policy.Classify(c.row, c.sub)
		fmt.Println(strings.Join(strings.Fields(fmt.Sprintf("%s x %s => %s %s %s", c.row.Status, c.sub.Status, d.Verdict, d.Kind, d.Command)), " "), d.Diffs)
	}
	// Output:
	// active x active => in_sync []
	// active x canceled => repairable subscription_canceled_externally ApplySubscriptionStatus [{status active canceled}]
	// active x active => repairable paid_through_ahead ApplySubscriptionStatus [{paid_through 2026-06-01T00:00:00Z 2026-05-01T00:00:00Z}]
	// canceled x active => needs_review billing_without_access [{status canceled active}]
}

// The checkout policy fulfils on payment_status: a session completed by a bank debit is not
// paid yet.
func ExampleCheckoutPolicy() {
	policy := stripepolicy.CheckoutPolicy(func(l stripepolicy.LocalCheckout) stripepolicy.LocalCheckout { return l })
	for _, c := range []struct {
		row             stripepolicy.LocalCheckout
		status, payment string
	}{
		{stripepolicy.LocalCheckout{Status: "complete", PaymentStatus: "unpaid"}, "complete", "unpaid"},
		{stripepolicy.LocalCheckout{Status: "complete", PaymentStatus: "unpaid", Fulfilled: true}, "complete", "unpaid"},
		{stripepolicy.LocalCheckout{Status: "complete", PaymentStatus: "unpaid"}, "complete", "paid"},
	} {
		cs := &stripe.CheckoutSession{ID: "cs_test_1", Status: stripe.CheckoutSessionStatus(c.status), PaymentStatus: stripe.CheckoutSessionPaymentStatus(c.payment)}
		d := policy.Classify(c.row, cs)
		fmt.Println(strings.TrimSpace(fmt.Sprintf("fulfilled=%-5t x %s/%s => %s %s %s", c.row.Fulfilled, c.status, c.payment, d.Verdict, d.Kind, d.Command)))
	}
	// Output:
	// fulfilled=false x complete/unpaid => in_sync
	// fulfilled=true  x complete/unpaid => needs_review fulfilled_without_payment
	// fulfilled=false x complete/paid => repairable missed_fulfillment FulfillCheckout
}

// The invoice policy compares the currency and the amount due first, then the status: a
// payment Stripe collected is caught up, one our books record alone goes to a person.
func ExampleInvoicePolicy() {
	policy := stripepolicy.InvoicePolicy(func(l stripepolicy.LocalInvoice) stripepolicy.LocalInvoice { return l })
	open := stripepolicy.LocalInvoice{Status: "open", Currency: "usd", AmountDue: 1000, AmountRemaining: 1000}
	paid := stripepolicy.LocalInvoice{Status: "paid", Currency: "usd", AmountDue: 1000, AmountPaid: 1000}
	for _, c := range []struct {
		row stripepolicy.LocalInvoice
		inv *stripe.Invoice
	}{
		{open, &stripe.Invoice{Status: "paid", Currency: "usd", AmountDue: 1000, AmountPaid: 1000}},
		{paid, &stripe.Invoice{Status: "open", Currency: "usd", AmountDue: 1000, AmountRemaining: 1000}},
		{paid, &stripe.Invoice{Status: "paid", Currency: "eur", AmountDue: 1000, AmountPaid: 1000}},
	} {
		d := policy.Classify(c.row, c.inv)
		fmt.Println(strings.Join(strings.Fields(fmt.Sprintf("%s x %s => %s %s %s", c.row.Status, c.inv.Status, d.Verdict, d.Kind, d.Command)), " "), d.Diffs)
	}
	// Output:
	// open x paid => repairable missed_payment ApplyInvoiceStatus [{status open paid} {amount_paid USD 0.00 USD 10.00} {amount_remaining USD 10.00 USD 0.00}]
	// paid x open => needs_review paid_locally_not_externally [{status paid open} {amount_paid USD 10.00 USD 0.00} {amount_remaining USD 0.00 USD 10.00}]
	// paid x paid => needs_review currency_mismatch [{currency USD EUR}]
}
