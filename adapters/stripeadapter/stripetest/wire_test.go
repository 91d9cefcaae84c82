package stripetest

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/form"

	"github.com/reconcilekit/reconcile/internal/stripemock"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stripemock.Stop()
	os.Exit(code)
}

// The wire tests send the requests the money adapter sends to stripe-mock, which checks them
// against Stripe's OpenAPI specification (an unknown or malformed parameter is a 400), and the
// same requests to the fake, which must accept them too. Together they show that the fake
// answers the shapes Stripe accepts; its behaviour is tested over HTTP in the package's own
// tests.

// wireCase is one request, as stripe-go encodes it from params.
type wireCase struct {
	name, path string
	params     any
	// query holds parameters the encoded request must carry, to show the shape is the one
	// named.
	query url.Values
	// out decodes the answer; check, if not nil, looks at what stripe-mock answered.
	out   func() stripe.LastResponseSetter
	check func(t *testing.T, v stripe.LastResponseSetter)
}

func TestWireMoneyRequestsMatchStripesSpec(t *testing.T) {
	fake := NewServer(Options{})
	defer fake.Close()
	pi := fake.AddPaymentIntent(PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000})
	if _, err := fake.Refund(pi, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Dispute(pi, 0, stripe.DisputeStatusNeedsResponse, time.Now().Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	mock := stripemock.URL(t)
	since := time.Now().Add(-time.Hour).Unix()

	intents := &stripe.PaymentIntentListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: since}}
	intents.Limit = stripe.Int64(100)
	intents.AddExpand("data.latest_charge")
	intent := &stripe.PaymentIntentRetrieveParams{}
	intent.AddExpand("latest_charge")
	refunds := &stripe.RefundListParams{PaymentIntent: stripe.String(pi)}
	refunds.Limit = stripe.Int64(100)
	disputes := &stripe.DisputeListParams{PaymentIntent: stripe.String(pi)}
	disputes.Limit = stripe.Int64(100)
	events := &stripe.EventListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThan: since}}
	events.Limit = stripe.Int64(100)
	for _, typ := range moneyEventTypes {
		events.Types = append(events.Types, stripe.String(typ))
	}

	for _, tc := range []wireCase{
		{
			name: "the intents list with charges expanded", path: "/v1/payment_intents", params: intents,
			query: url.Values{"expand[0]": {"data.latest_charge"}, "created[gte]": {itoa(since)}, "limit": {"100"}},
			out:   func() stripe.LastResponseSetter { return &stripe.PaymentIntentList{} },
			check: func(t *testing.T, v stripe.LastResponseSetter) {
				l := v.(*stripe.PaymentIntentList)
				if len(l.Data) == 0 || l.Data[0].LatestCharge == nil || l.Data[0].LatestCharge.Object != "charge" {
					t.Errorf("stripe-mock's list does not carry an expanded charge: %+v", l.Data)
				}
			},
		},
		{
			name: "an intent with its charge expanded", path: "/v1/payment_intents/" + pi, params: intent,
			query: url.Values{"expand[0]": {"latest_charge"}},
			out:   func() stripe.LastResponseSetter { return &stripe.PaymentIntent{} },
			check: func(t *testing.T, v stripe.LastResponseSetter) {
				if ch := v.(*stripe.PaymentIntent).LatestCharge; ch == nil || ch.Object != "charge" {
					t.Errorf("stripe-mock's intent does not carry an expanded charge: %+v", ch)
				}
			},
		},
		{
			name: "an intent's refunds", path: "/v1/refunds", params: refunds,
			query: url.Values{"payment_intent": {pi}, "limit": {"100"}},
			out:   func() stripe.LastResponseSetter { return &stripe.RefundList{} },
		},
		{
			name: "an intent's disputes", path: "/v1/disputes", params: disputes,
			query: url.Values{"payment_intent": {pi}, "limit": {"100"}},
			out:   func() stripe.LastResponseSetter { return &stripe.DisputeList{} },
		},
		{
			name: "the money events, 18 types at once", path: "/v1/events", params: events,
			query: url.Values{"types[0]": {"payment_intent.succeeded"}, "types[17]": {"charge.dispute.funds_reinstated"}, "created[gt]": {itoa(since)}},
			out:   func() stripe.LastResponseSetter { return &stripe.EventList{} },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values := &form.Values{}
			form.AppendTo(values, tc.params)
			q := values.ToValues()
			for k, want := range tc.query {
				if got := q[k]; !slices.Equal(got, want) {
					t.Fatalf("stripe-go encodes %s as %v, want %v (query %s)", k, got, want, values.Encode())
				}
			}
			for _, account := range []string{"", "acct_1Connected"} {
				v := tc.out()
				if err := call(mock, "sk_test_123", tc.path, values, account, v); err != nil {
					t.Fatalf("stripe-mock refuses %s?%s (account %q): %v", tc.path, values.Encode(), account, err)
				}
				if tc.check != nil && account == "" {
					tc.check(t, v)
				}
			}
			if err := call(fake.URL(), fake.Key(), tc.path, values, "", tc.out()); err != nil {
				t.Fatalf("the fake refuses %s?%s: %v", tc.path, values.Encode(), err)
			}
		})
	}

	t.Run("both accept expand[] without numbers", func(t *testing.T) {
		for _, base := range []struct{ url, key string }{{mock, "sk_test_123"}, {fake.URL(), fake.Key()}} {
			status, body := getURL(t, base.url+"/v1/payment_intents?expand[]=data.latest_charge&limit=100", base.key)
			if status != http.StatusOK {
				t.Errorf("%s: %d %s", base.url, status, body)
			}
		}
	})
	t.Run("stripe-mock accepts a bogus expansion, which is why the fake refuses it", func(t *testing.T) {
		const path = "/v1/payment_intents?expand[]=data.latest_charge.bogus"
		if status, body := getURL(t, mock+path, "sk_test_123"); status != http.StatusOK {
			t.Logf("stripe-mock now refuses bogus paths (%d %s): the fake's check could be compared with it", status, body)
		}
		if status, body := getURL(t, fake.URL()+path, fake.Key()); status != http.StatusBadRequest ||
			!strings.Contains(body, "This property cannot be expanded (data.latest_charge.bogus).") {
			t.Errorf("the fake answered %d %s", status, body)
		}
	})
}

// call sends a GET with stripe-go's backend to base and decodes the answer into out.
func call(base, key, path string, values *form.Values, account string, out stripe.LastResponseSetter) error {
	backend := stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
		URL:               stripe.String(base),
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	p := &stripe.Params{Context: context.Background()}
	if account != "" {
		p.StripeAccount = stripe.String(account)
	}
	return backend.CallRaw(http.MethodGet, path, key, []byte(values.Encode()), p, out)
}

// getURL sends a GET with the query exactly as written.
func getURL(t *testing.T, u, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
