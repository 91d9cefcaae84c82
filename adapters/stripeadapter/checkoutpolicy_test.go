package stripeadapter_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
)

// orderRow is a host's own orders row paid through Checkout, seen by the policy through its view.
type orderRow struct {
	status, payment string
	fulfilled       bool
}

func checkoutView(r orderRow) stripeadapter.LocalCheckout {
	return stripeadapter.LocalCheckout{Status: r.status, PaymentStatus: r.payment, Fulfilled: r.fulfilled}
}

func session(status, payment string) *stripe.CheckoutSession {
	return &stripe.CheckoutSession{ID: "cs_test_1", Status: stripe.CheckoutSessionStatus(status), PaymentStatus: stripe.CheckoutSessionPaymentStatus(payment)}
}

// checkoutStates are the sessions' states the tests cross, as status/payment_status.
var checkoutStates = [][2]string{
	{"open", "unpaid"}, {"open", "no_payment_required"},
	{"complete", "paid"}, {"complete", "unpaid"}, {"complete", "no_payment_required"},
	{"expired", "unpaid"},
}

func TestCheckoutPolicyCoversEveryStateAndFulfilment(t *testing.T) {
	var (
		sync      = inSync
		fulfil    = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_fulfillment", Command: "FulfillCheckout"}
		expiry    = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_expiry", Command: "ApplyCheckoutStatus"}
		complete  = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_completion", Command: "ApplyCheckoutStatus"}
		update    = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_session_update", Command: "ApplyCheckoutStatus"}
		unpaid    = reviewKind("fulfilled_without_payment")
		paidNot   = reviewKind("paid_locally_not_externally")
		stillOpen = reviewKind("session_still_open")
	)
	// Written out by hand from the policy table in the package doc, not derived from the
	// rules: the row's state and whether it fulfilled the order down, Stripe's state across,
	// in the order of checkoutStates.
	matrix := map[orderRow][6]reconcile.Decision{
		//                                                 open/unpaid open/npr  complete/paid complete/unpaid complete/npr expired
		{"open", "unpaid", false}:                  {sync, update, fulfil, complete, fulfil, expiry},
		{"open", "no_payment_required", false}:     {update, sync, fulfil, complete, fulfil, expiry},
		{"complete", "paid", false}:                {paidNot, paidNot, fulfil, paidNot, fulfil, paidNot},
		{"complete", "unpaid", false}:              {stillOpen, stillOpen, fulfil, sync, fulfil, expiry},
		{"complete", "no_payment_required", false}: {paidNot, paidNot, fulfil, paidNot, fulfil, paidNot},
		{"expired", "unpaid", false}:               {stillOpen, stillOpen, fulfil, complete, fulfil, sync},
		{"open", "unpaid", true}:                   {unpaid, unpaid, update, unpaid, update, unpaid},
		{"open", "no_payment_required", true}:      {unpaid, unpaid, update, unpaid, update, unpaid},
		{"complete", "paid", true}:                 {unpaid, unpaid, sync, unpaid, update, unpaid},
		{"complete", "unpaid", true}:               {unpaid, unpaid, update, unpaid, update, unpaid},
		{"complete", "no_payment_required", true}:  {unpaid, unpaid, update, unpaid, sync, unpaid},
		{"expired", "unpaid", true}:                {unpaid, unpaid, update, unpaid, update, unpaid},
	}
	policy := stripeadapter.CheckoutPolicy(checkoutView)
	for row, wants := range matrix {
		for i, st := range checkoutStates {
			want := wants[i]
			due := st[0] == "complete" && st[1] != "unpaid"
			var diffs []reconcile.Diff
			if row.status != st[0] {
				diffs = append(diffs, diff("status", row.status, st[0]))
			}
			if row.payment != st[1] {
				diffs = append(diffs, diff("payment_status", row.payment, st[1]))
			}
			if row.fulfilled != due {
				diffs = append(diffs, diff("fulfilled", fmt.Sprint(row.fulfilled), fmt.Sprint(due)))
			}
			if want.Verdict != reconcile.Repairable && want.Verdict != reconcile.NeedsReview {
				diffs = nil
			}
			t.Run(fmt.Sprintf("%s/%s fulfilled=%t against %s/%s", row.status, row.payment, row.fulfilled, st[0], st[1]), func(t *testing.T) {
				checkDecision(t, policy.Classify(row, session(st[0], st[1])), want, diffs, "")
			})
		}
	}
}

func TestCheckoutPolicyDetailsAndUnknownStates(t *testing.T) {
	tests := []struct {
		name   string
		row    orderRow
		cs     *stripe.CheckoutSession
		want   reconcile.Decision
		diffs  []reconcile.Diff
		detail string
	}{
		{name: "an order fulfilled on status complete alone, its bank debit not yet paid",
			row: orderRow{"complete", "unpaid", true}, cs: session("complete", "unpaid"),
			want: reviewKind("fulfilled_without_payment"), diffs: []reconcile.Diff{diff("fulfilled", "true", "false")},
			detail: "the order was fulfilled, Stripe's session is complete/unpaid"},
		{name: "a paid session whose order was not fulfilled",
			row: orderRow{"open", "unpaid", false}, cs: session("complete", "paid"),
			want:   reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_fulfillment", Command: "FulfillCheckout"},
			diffs:  []reconcile.Diff{diff("status", "open", "complete"), diff("payment_status", "unpaid", "paid"), diff("fulfilled", "false", "true")},
			detail: "Stripe's session is complete/paid, the order was not fulfilled (the row says open/unpaid)"},
		{name: "a session expired here and still open at Stripe",
			row: orderRow{"expired", "unpaid", false}, cs: session("open", "unpaid"),
			want: reviewKind("session_still_open"), diffs: []reconcile.Diff{diff("status", "expired", "open")},
			detail: "the row says expired/unpaid, Stripe's session is open/unpaid"},
		{name: "a status nobody knows",
			row: orderRow{"open", "unpaid", false}, cs: session("canceled", "unpaid"),
			want: reviewKind("unexpected:open/unpaid->canceled/unpaid"), diffs: []reconcile.Diff{diff("status", "open", "canceled")}},
		{name: "a payment status nobody knows",
			row: orderRow{"complete", "paid", true}, cs: session("complete", "refunded"),
			want:  reviewKind("unexpected:complete/paid->complete/refunded"),
			diffs: []reconcile.Diff{diff("payment_status", "paid", "refunded"), diff("fulfilled", "true", "false")}},
		{name: "a row that records no payment status",
			row: orderRow{"complete", "", true}, cs: session("complete", "paid"),
			want: reviewKind("unexpected:complete/->complete/paid"), diffs: []reconcile.Diff{diff("payment_status", "", "paid")}},
	}
	policy := stripeadapter.CheckoutPolicy(checkoutView)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDecision(t, policy.Classify(tt.row, tt.cs), tt.want, tt.diffs, tt.detail)
		})
	}
}

func TestCheckoutPolicyNamesStatesAndHandlesNoSession(t *testing.T) {
	policy := stripeadapter.CheckoutPolicy(checkoutView)
	namer, ok := policy.(reconcile.StateNamer[orderRow, *stripe.CheckoutSession])
	if !ok {
		t.Fatal("the checkout policy is not a StateNamer")
	}
	if got := namer.LocalState(orderRow{"complete", "unpaid", true}); got != "complete/unpaid" {
		t.Errorf("LocalState = %q, want complete/unpaid", got)
	}
	cs := session("complete", "paid")
	if got := namer.ExternalState(cs); got != "complete/paid" {
		t.Errorf("ExternalState = %q, want complete/paid", got)
	}
	for _, cs := range []*stripe.CheckoutSession{nil, {ID: "cs_test_1"}} {
		if got := namer.ExternalState(cs); got != "" {
			t.Errorf("ExternalState(%+v) = %q, want \"\" (not an answer)", cs, got)
		}
	}
	cs.PaymentStatus = "sk_live_abcdefgh12345678"
	got := policy.Classify(orderRow{"complete", "paid", true}, cs)
	if s := namer.ExternalState(cs) + got.Kind + got.Detail + fmt.Sprint(got.Diffs); strings.Contains(strings.ToLower(s), "sk_live") {
		t.Errorf("a state or decision holds a key: %s", s)
	}
	if got, want := policy.Classify(orderRow{"open", "unpaid", false}, nil), reconcile.Unexpected("open/unpaid", ""); !cmp.Equal(got, want) {
		t.Errorf("Classify(open/unpaid, nil) = %+v, want %+v", got, want)
	}
}
