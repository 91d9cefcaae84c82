package stripepolicy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// orderRow is a host's own orders row paid through Checkout, seen by the policy through its view.
type orderRow struct {
	status, payment string
	fulfilled       bool
}

func checkoutView(r orderRow) stripepolicy.LocalCheckout {
	return stripepolicy.LocalCheckout{Status: r.status, PaymentStatus: r.payment, Fulfilled: r.fulfilled}
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

// stateDiffs are the diffs of a row's state against a session's: status, payment_status, and
// whether the order is fulfilled against whether the session calls for it.
func stateDiffs(row orderRow, st [2]string) []reconcile.Diff {
	var diffs []reconcile.Diff
	if row.status != st[0] {
		diffs = append(diffs, diff("status", row.status, st[0]))
	}
	if row.payment != st[1] {
		diffs = append(diffs, diff("payment_status", row.payment, st[1]))
	}
	if due := st[0] == "complete" && st[1] != "unpaid"; row.fulfilled != due {
		diffs = append(diffs, diff("fulfilled", fmt.Sprint(row.fulfilled), fmt.Sprint(due)))
	}
	return diffs
}

// findingDiffs is diffs when want is a finding, none otherwise.
func findingDiffs(want reconcile.Decision, diffs []reconcile.Diff) []reconcile.Diff {
	if want.Verdict != reconcile.Repairable && want.Verdict != reconcile.NeedsReview {
		return nil
	}
	return diffs
}

// checkoutMatrix is the checkout policy's decision for every row state and session state.
func checkoutMatrix() map[orderRow][6]reconcile.Decision {
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
	return map[orderRow][6]reconcile.Decision{
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
}

func TestCheckoutPolicyCoversEveryStateAndFulfilment(t *testing.T) {
	matrix := checkoutMatrix()
	policy := stripepolicy.CheckoutPolicy(checkoutView)
	for row, wants := range matrix {
		for i, st := range checkoutStates {
			want := wants[i]
			diffs := findingDiffs(want, stateDiffs(row, st))
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
	policy := stripepolicy.CheckoutPolicy(checkoutView)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDecision(t, policy.Classify(tt.row, tt.cs), tt.want, tt.diffs, tt.detail)
		})
	}
}

func TestCheckoutPolicyNamesStatesAndHandlesNoSession(t *testing.T) {
	policy := stripepolicy.CheckoutPolicy(checkoutView)
	namer, ok := any(policy).(reconcile.StateNamer[orderRow, *stripe.CheckoutSession])
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

// orderWithTotal is an orders row that records what it charges.
type orderWithTotal struct {
	orderRow
	currency string
	total    int64
}

func sessionWithTotal(status, payment, currency string, total int64) *stripe.CheckoutSession {
	cs := session(status, payment)
	cs.Currency, cs.AmountTotal = stripe.Currency(currency), total
	return cs
}

// The currency and the total are compared once Stripe's session is complete, whatever the
// row's state: for every row state, session state, and currency and total alike or not.
func TestCheckoutPolicyComparesTheTotalOfACompletedSession(t *testing.T) {
	policy := stripepolicy.CheckoutPolicy(func(r orderWithTotal) stripepolicy.LocalCheckout {
		lc := checkoutView(r.orderRow)
		lc.Currency, lc.AmountTotal = r.currency, r.total
		return lc
	})
	// Written out by hand: which session states, in the order of checkoutStates, compare the
	// order's total (complete/paid, complete/unpaid, complete/no_payment_required).
	compared := [6]bool{false, false, true, true, true, false}
	amounts := []struct {
		name         string
		currency     string
		total        int64
		wantKind     string // when compared; "" means the state's own decision
		diffCurrency bool   // the diffs listed when compared
		diffTotal    bool
	}{
		{"the same currency and total", "usd", 2500, "", false, false},
		{"the same currency written in capitals", "USD", 2500, "", false, false},
		{"another total", "usd", 2000, "amount_mismatch", false, true},
		{"another currency", "eur", 2500, "currency_mismatch", true, false},
		{"another currency and total", "jpy", 2000, "currency_mismatch", true, true},
	}
	for row, wants := range checkoutMatrix() {
		for i, st := range checkoutStates {
			for _, a := range amounts {
				want := wants[i]
				if compared[i] && a.wantKind != "" {
					want = reviewKind(a.wantKind)
				}
				var diffs []reconcile.Diff
				if compared[i] && a.diffCurrency {
					diffs = append(diffs, diff("currency", strings.ToUpper(a.currency), "USD"))
				}
				if compared[i] && a.diffTotal {
					diffs = append(diffs, diff("amount_total", reconcile.FormatAmount(a.total, a.currency), "USD 25.00"))
				}
				diffs = findingDiffs(want, append(diffs, stateDiffs(row, st)...))
				r := orderWithTotal{row, a.currency, a.total}
				t.Run(fmt.Sprintf("%s/%s fulfilled=%t with %s against %s/%s", row.status, row.payment, row.fulfilled, a.name, st[0], st[1]), func(t *testing.T) {
					checkDecision(t, policy.Classify(r, sessionWithTotal(st[0], st[1], "usd", 2500)), want, diffs, "")
				})
			}
		}
	}
}

func TestCheckoutPolicyAmountDetails(t *testing.T) {
	policy := stripepolicy.CheckoutPolicy(func(r orderWithTotal) stripepolicy.LocalCheckout {
		lc := checkoutView(r.orderRow)
		lc.Currency, lc.AmountTotal = r.currency, r.total
		return lc
	})
	tests := []struct {
		name   string
		row    orderWithTotal
		cs     *stripe.CheckoutSession
		want   reconcile.Decision
		detail string
	}{
		{"a session paid with a promotion code the order does not know", orderWithTotal{orderRow{"open", "unpaid", false}, "usd", 2500},
			sessionWithTotal("complete", "paid", "usd", 2000), reviewKind("amount_mismatch"), "the order charges USD 25.00, Stripe's session USD 20.00"},
		{"a session in another currency", orderWithTotal{orderRow{"complete", "paid", true}, "usd", 1000},
			sessionWithTotal("complete", "paid", "jpy", 1000), reviewKind("currency_mismatch"), "the order is in USD, Stripe's session in JPY"},
		{"an open session whose total still changes", orderWithTotal{orderRow{"open", "unpaid", false}, "usd", 2500},
			sessionWithTotal("open", "unpaid", "usd", 2000), inSync, ""},
		{"an expired session, which took no money", orderWithTotal{orderRow{"open", "unpaid", false}, "usd", 2500},
			sessionWithTotal("expired", "unpaid", "eur", 0),
			reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_expiry", Command: "ApplyCheckoutStatus"}, "the row says open/unpaid"},
		{"a setup session without a total", orderWithTotal{orderRow{"complete", "no_payment_required", true}, "", 0},
			sessionWithTotal("complete", "no_payment_required", "", 0), inSync, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := policy.Classify(tt.row, tt.cs)
			if got.Verdict != tt.want.Verdict || got.Kind != tt.want.Kind || got.Command != tt.want.Command || !strings.Contains(got.Detail, tt.detail) {
				t.Errorf("got %s %q %q %q, want %s %q %q and a detail saying %q", got.Verdict, got.Kind, got.Command, got.Detail,
					tt.want.Verdict, tt.want.Kind, tt.want.Command, tt.detail)
			}
		})
	}
}

// orderStatuses is a host's orders table with one status of its own, as the CheckoutStatuses
// doc describes it.
var orderStatuses = stripepolicy.CheckoutStatuses{
	"awaiting_payment": {Status: "open", PaymentStatus: "unpaid"},
	"payment_pending":  {Status: "complete", PaymentStatus: "unpaid"},
	"paid":             {Status: "complete", PaymentStatus: "paid", Fulfilled: true},
	"shipped":          {Status: "complete", PaymentStatus: "paid", Fulfilled: true},
	"abandoned":        {Status: "expired", PaymentStatus: "unpaid"},
}

// An order table with one status describes its rows directly, and findings name its own
// words: every host status (one the map lacks too) against every session state.
func TestCheckoutStatusesMapAHostsOwnStatus(t *testing.T) {
	policy := stripepolicy.CheckoutPolicy(func(status string) stripepolicy.LocalCheckout {
		lc := orderStatuses.Local(status)
		lc.Currency, lc.AmountTotal = "usd", 2500
		return lc
	})
	var (
		sync      = inSync
		fulfil    = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_fulfillment", Command: "FulfillCheckout"}
		expiry    = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_expiry", Command: "ApplyCheckoutStatus"}
		complete  = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_completion", Command: "ApplyCheckoutStatus"}
		update    = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_session_update", Command: "ApplyCheckoutStatus"}
		unpaid    = reviewKind("fulfilled_without_payment")
		stillOpen = reviewKind("session_still_open")
		unknown   = func(session string) reconcile.Decision { return reviewKind("unexpected:refunded->" + session) }
	)
	// Written out by hand, in the order of checkoutStates.
	matrix := map[string][6]reconcile.Decision{
		//                    open/unpaid open/npr   complete/paid complete/unpaid complete/npr expired
		"awaiting_payment": {sync, update, fulfil, complete, fulfil, expiry},
		"payment_pending":  {stillOpen, stillOpen, fulfil, sync, fulfil, expiry},
		"paid":             {unpaid, unpaid, sync, unpaid, update, unpaid},
		"shipped":          {unpaid, unpaid, sync, unpaid, update, unpaid},
		"abandoned":        {stillOpen, stillOpen, fulfil, complete, fulfil, sync},
		"refunded": {unknown("open/unpaid"), unknown("open/no_payment_required"), unknown("complete/paid"),
			unknown("complete/unpaid"), unknown("complete/no_payment_required"), unknown("expired/unpaid")},
	}
	for status, wants := range matrix {
		if got := policy.LocalState(status); got != status {
			t.Errorf("LocalState(%q) = %q, want the host's own word", status, got)
		}
		for i, st := range checkoutStates {
			t.Run(status+" against "+st[0]+"/"+st[1], func(t *testing.T) {
				got := policy.Classify(status, sessionWithTotal(st[0], st[1], "usd", 2500))
				want := wants[i]
				if got.Verdict != want.Verdict || got.Kind != want.Kind || got.Command != want.Command {
					t.Fatalf("got %s %q %q, want %s %q %q (detail %q)", got.Verdict, got.Kind, got.Command, want.Verdict, want.Kind, want.Command, got.Detail)
				}
				if err := got.Validate(); err != nil {
					t.Fatal(err)
				}
				if strings.Contains(got.Detail, "the row says") && !strings.Contains(got.Detail, "the row says "+status) {
					t.Errorf("detail %q does not name the row's state in the host's word %q", got.Detail, status)
				}
			})
		}
	}
}

func TestCheckoutStatusesLocalReadsOnlyTheStatusFields(t *testing.T) {
	m := stripepolicy.CheckoutStatuses{"paid": {Status: "complete", PaymentStatus: "paid", Fulfilled: true, Currency: "eur", AmountTotal: 9, State: "x"}}
	want := stripepolicy.LocalCheckout{Status: "complete", PaymentStatus: "paid", Fulfilled: true, State: "paid"}
	if got := m.Local("paid"); got != want {
		t.Errorf("Local(paid) = %+v, want %+v", got, want)
	}
	if got := m.Local("lost"); got != (stripepolicy.LocalCheckout{State: "lost"}) {
		t.Errorf("Local(lost) = %+v, want only its name", got)
	}
}
