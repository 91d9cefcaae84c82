package stripetest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/form"

	"github.com/reconcilekit/reconcile/internal/stripemock"
)

// The payout tie-out's requests: a payout's balance transactions with their sources expanded,
// the payouts, the charges list and the payout events. Each must be accepted by stripe-mock
// (Stripe's specification) and by the fake, decode into stripe-go's types from both, and the
// fake's objects must have the fields stripe-mock's have, of the same JSON types where neither
// is null.
func TestWirePayoutRequestsMatchStripesSpec(t *testing.T) {
	fake := NewServer(Options{})
	defer fake.Close()
	pi := fake.AddPaymentIntent(PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000,
		Created: time.Now().Add(-72 * time.Hour), Metadata: map[string]string{"order": "1"}})
	if _, err := fake.Refund(pi, 100); err != nil {
		t.Fatal(err)
	}
	fake.SetExchangeRate("eur", "usd", 1.1)
	fake.AddPaymentIntent(PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000, Currency: "eur",
		Created: time.Now().Add(-72 * time.Hour)})
	if _, err := fake.Dispute(pi, 200, stripe.DisputeStatusNeedsResponse, time.Time{}); err != nil {
		t.Fatal(err)
	}
	po := fake.AddPayout(Payout{Description: "STRIPE PAYOUT", Metadata: map[string]string{"k": "v"}})
	if err := fake.FailPayout(fake.AddPayout(Payout{Manual: true, Amount: 5}), "", ""); err != nil {
		t.Fatal(err)
	}
	poTxn := mustPayout(t, fake, po).BalanceTransaction
	mock := stripemock.URL(t)
	since := time.Now().Add(-7 * 24 * time.Hour).Unix()
	limit := stripe.ListParams{Limit: stripe.Int64(100)}

	itemized := &stripe.BalanceTransactionListParams{ListParams: limit, Payout: stripe.String(po)}
	itemized.AddExpand("data.source")
	filtered := &stripe.BalanceTransactionListParams{ListParams: limit, Type: stripe.String("payout"), Source: stripe.String(po),
		Currency: stripe.String("usd"), CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: since}}
	payouts := &stripe.PayoutListParams{ListParams: limit, Status: stripe.String("pending"),
		CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: since}, ArrivalDateRange: &stripe.RangeQueryParams{LesserThan: time.Now().Add(30 * 24 * time.Hour).Unix()}}
	payout := &stripe.PayoutRetrieveParams{}
	payout.AddExpand("balance_transaction")
	payout.AddExpand("failure_balance_transaction")
	charges := &stripe.ChargeListParams{ListParams: limit, PaymentIntent: stripe.String(pi), CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: since}}
	charges.AddExpand("data.balance_transaction")
	customerCharges := &stripe.ChargeListParams{ListParams: limit, Customer: stripe.String("cus_1")}
	events := &stripe.EventListParams{ListParams: limit, CreatedRange: &stripe.RangeQueryParams{GreaterThan: since}}
	for _, typ := range []string{"payout.created", "payout.updated", "payout.paid", "payout.failed", "payout.canceled", "payout.reconciliation_completed"} {
		events.Types = append(events.Types, stripe.String(typ))
	}

	for _, tc := range []wireCase{
		{
			name: "a payout's balance transactions, sources expanded", path: "/v1/balance_transactions", params: itemized,
			query: url.Values{"payout": {po}, "expand[0]": {"data.source"}, "limit": {"100"}},
			out:   func() stripe.LastResponseSetter { return &stripe.BalanceTransactionList{} },
			check: func(t *testing.T, v stripe.LastResponseSetter) {
				l := v.(*stripe.BalanceTransactionList)
				if len(l.Data) == 0 || l.Data[0].Object != "balance_transaction" || l.Data[0].Source == nil || l.Data[0].Source.Type == "" {
					t.Errorf("no expanded source: %+v", l.Data)
				}
			},
		},
		{
			name: "balance transactions by type, source, currency and created", path: "/v1/balance_transactions", params: filtered,
			query: url.Values{"type": {"payout"}, "source": {po}, "currency": {"usd"}, "created[gte]": {itoa(since)}},
			out:   func() stripe.LastResponseSetter { return &stripe.BalanceTransactionList{} },
		},
		{
			name: "one balance transaction", path: "/v1/balance_transactions/" + poTxn, params: &stripe.BalanceTransactionRetrieveParams{},
			out: func() stripe.LastResponseSetter { return &stripe.BalanceTransaction{} },
			check: func(t *testing.T, v stripe.LastResponseSetter) {
				if bt := v.(*stripe.BalanceTransaction); bt.Object != "balance_transaction" || bt.Type == "" {
					t.Errorf("got %+v", bt)
				}
			},
		},
		{
			name: "payouts by status, created and arrival date", path: "/v1/payouts", params: payouts,
			query: url.Values{"status": {"pending"}, "created[gte]": {itoa(since)}, "arrival_date[lt]": {itoa(payouts.ArrivalDateRange.LesserThan)}},
			out:   func() stripe.LastResponseSetter { return &stripe.PayoutList{} },
		},
		{
			name: "a payout with its balance transactions", path: "/v1/payouts/" + po, params: payout,
			query: url.Values{"expand[0]": {"balance_transaction"}, "expand[1]": {"failure_balance_transaction"}},
			out:   func() stripe.LastResponseSetter { return &stripe.Payout{} },
			check: func(t *testing.T, v stripe.LastResponseSetter) {
				if p := v.(*stripe.Payout); p.Object != "payout" || p.BalanceTransaction == nil || p.BalanceTransaction.Object != "balance_transaction" {
					t.Errorf("got %+v", p)
				}
			},
		},
		{
			name: "an intent's charges, balance transactions expanded", path: "/v1/charges", params: charges,
			query: url.Values{"payment_intent": {pi}, "expand[0]": {"data.balance_transaction"}, "created[gte]": {itoa(since)}},
			out:   func() stripe.LastResponseSetter { return &stripe.ChargeList{} },
			check: func(t *testing.T, v stripe.LastResponseSetter) {
				l := v.(*stripe.ChargeList)
				if len(l.Data) == 0 || l.Data[0].BalanceTransaction == nil || l.Data[0].BalanceTransaction.Object != "balance_transaction" {
					t.Errorf("no expanded balance transaction: %+v", l.Data)
				}
			},
		},
		{
			name: "a customer's charges", path: "/v1/charges", params: customerCharges,
			query: url.Values{"customer": {"cus_1"}},
			out:   func() stripe.LastResponseSetter { return &stripe.ChargeList{} },
		},
		{
			name: "the payout events", path: "/v1/events", params: events,
			query: url.Values{"types[0]": {"payout.created"}, "types[5]": {"payout.reconciliation_completed"}},
			out:   func() stripe.LastResponseSetter { return &stripe.EventList{} },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, mock, fake)
			sameShape(t, mock, fake, tc)
		})
	}

	t.Run("the fake refuses to itemize a manual payout, which stripe-mock cannot know", func(t *testing.T) {
		manual := fake.AddPayout(Payout{Manual: true, Amount: 1})
		status, body := getURL(t, fake.URL()+"/v1/balance_transactions?payout="+manual, fake.Key())
		if status != http.StatusBadRequest {
			t.Errorf("the fake answered %d %s", status, body)
		}
	})
}

// sameShape fetches the case's request raw from stripe-mock and the fake and compares the
// shape of their first object (the object itself, or a list's first item): every field
// stripe-mock renders, the fake renders too and nothing else, and where both are not null,
// with the same JSON type.
func sameShape(t *testing.T, mock string, fake *Server, tc wireCase) {
	t.Helper()
	values := &form.Values{}
	form.AppendTo(values, tc.params)
	first := func(base, key string) map[string]any {
		status, body := getURL(t, base+tc.path+"?"+values.Encode(), key)
		if status != http.StatusOK {
			t.Fatalf("%s: %d %s", base, status, body)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(body), &obj); err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		if obj["object"] == "list" {
			data, _ := obj["data"].([]any)
			if len(data) == 0 {
				return nil
			}
			obj, _ = data[0].(map[string]any)
		}
		return obj
	}
	want, got := first(mock, "sk_test_123"), first(fake.URL(), fake.Key())
	if want == nil || got == nil {
		return // an empty list has no shape to compare
	}
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: the fake's %v lacks %q", tc.path, got["object"], k)
		case want[k] != nil && g != nil && jsonKind(want[k]) != jsonKind(g):
			t.Errorf("%s: %q is a %s at stripe-mock, a %s in the fake", tc.path, k, jsonKind(want[k]), jsonKind(g))
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: the fake's %v has %q, which stripe-mock's has not", tc.path, got["object"], k)
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}
