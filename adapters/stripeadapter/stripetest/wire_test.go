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
	// platform marks a platform-level request, never sent for a connected account.
	platform bool
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
		t.Run(tc.name, func(t *testing.T) { tc.run(t, mock, fake) })
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

// run sends the case's request to stripe-mock, as the platform and for a connected account
// unless it is a platform request, and to the fake as the platform; both must accept it.
func (tc wireCase) run(t *testing.T, mock string, fake *Server) {
	t.Helper()
	values := &form.Values{}
	form.AppendTo(values, tc.params)
	q := values.ToValues()
	for k, want := range tc.query {
		if got := q[k]; !slices.Equal(got, want) {
			t.Fatalf("stripe-go encodes %s as %v, want %v (query %s)", k, got, want, values.Encode())
		}
	}
	accounts := []string{"", "acct_1Connected"}
	if tc.platform {
		accounts = accounts[:1]
	}
	for _, account := range accounts {
		v := tc.out()
		if err := call(mock, "sk_test_123", tc.path, values, account, v); err != nil {
			t.Fatalf("stripe-mock refuses %s?%s (account %q): %v", tc.path, values.Encode(), account, err)
		}
		if tc.check != nil && account == "" {
			tc.check(t, v)
		}
	}
	v := tc.out()
	if err := call(fake.URL(), fake.Key(), tc.path, values, "", v); err != nil {
		t.Fatalf("the fake refuses %s?%s: %v", tc.path, values.Encode(), err)
	}
	if tc.check != nil {
		tc.check(t, v) // the fake's answer has the shape stripe-mock's has
	}
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

// The billing and Connect requests: what the object kit sends for subscriptions, invoices,
// Checkout Sessions and connected accounts, and the filters the fake serves.
func TestWireBillingAndConnectRequestsMatchStripesSpec(t *testing.T) {
	fake := NewServer(Options{})
	defer fake.Close()
	acct := fake.AddAccount(Account{ChargesEnabled: true})
	sub := fake.AddSubscription(Subscription{Customer: "cus_1"})
	inv := fake.AddInvoice(Invoice{Subscription: sub, Status: stripe.InvoiceStatusOpen, AmountDue: 500})
	pi := fake.AddPaymentIntent(PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 500})
	cs := fake.AddCheckoutSession(CheckoutSession{PaymentIntent: pi, Status: stripe.CheckoutSessionStatusComplete, AmountTotal: 500})
	mock := stripemock.URL(t)
	since := time.Now().Add(-time.Hour).Unix()
	created := &stripe.RangeQueryParams{GreaterThanOrEqual: since}
	limit := stripe.ListParams{Limit: stripe.Int64(100)}

	subs := &stripe.SubscriptionListParams{ListParams: limit, Status: stripe.String("all"), CreatedRange: created}
	subs.AddExpand("data.latest_invoice")
	subRetrieve := &stripe.SubscriptionRetrieveParams{}
	subRetrieve.AddExpand("latest_invoice")
	invRetrieve := &stripe.InvoiceRetrieveParams{}
	invRetrieve.AddExpand("parent.subscription_details.subscription")
	csRetrieve := &stripe.CheckoutSessionRetrieveParams{}
	csRetrieve.AddExpand("payment_intent")
	events := &stripe.EventListParams{ListParams: limit, CreatedRange: &stripe.RangeQueryParams{GreaterThan: since}}
	for _, typ := range []string{
		"customer.subscription.created", "customer.subscription.updated", "customer.subscription.deleted",
		"customer.subscription.paused", "customer.subscription.resumed",
		"invoice.created", "invoice.finalized", "invoice.paid", "invoice.payment_succeeded", "invoice.payment_failed",
		"invoice.voided", "invoice.marked_uncollectible", "invoice.updated",
		"checkout.session.completed", "checkout.session.async_payment_succeeded",
		"checkout.session.async_payment_failed", "checkout.session.expired", "account.updated",
	} {
		events.Types = append(events.Types, stripe.String(typ))
	}
	for _, tc := range []wireCase{
		{
			name: "every subscription, latest invoices expanded", path: "/v1/subscriptions", params: subs,
			query: url.Values{"status": {"all"}, "expand[0]": {"data.latest_invoice"}, "created[gte]": {itoa(since)}, "limit": {"100"}},
			out:   func() stripe.LastResponseSetter { return &stripe.SubscriptionList{} },
			check: func(t *testing.T, v stripe.LastResponseSetter) {
				l := v.(*stripe.SubscriptionList)
				if len(l.Data) == 0 || l.Data[0].Items == nil || len(l.Data[0].Items.Data) == 0 || l.Data[0].Items.Data[0].CurrentPeriodEnd == 0 {
					t.Fatalf("no item with a current period: %+v", l.Data)
				}
				if in := l.Data[0].LatestInvoice; in == nil || in.Object != "invoice" {
					t.Errorf("latest invoice not expanded: %+v", in)
				}
			},
		},
		{
			name: "the filters the fake serves on subscriptions", path: "/v1/subscriptions",
			params: &stripe.SubscriptionListParams{ListParams: limit, Status: stripe.String("ended"), Customer: stripe.String("cus_1")},
			query:  url.Values{"status": {"ended"}, "customer": {"cus_1"}},
			out:    func() stripe.LastResponseSetter { return &stripe.SubscriptionList{} },
		},
		{
			name: "a subscription with its latest invoice", path: "/v1/subscriptions/" + sub, params: subRetrieve,
			query: url.Values{"expand[0]": {"latest_invoice"}},
			out:   func() stripe.LastResponseSetter { return &stripe.Subscription{} },
			check: func(t *testing.T, v stripe.LastResponseSetter) {
				if s := v.(*stripe.Subscription); s.Object != "subscription" || s.LatestInvoice == nil || s.LatestInvoice.Object != "invoice" {
					t.Errorf("got %+v", s)
				}
			},
		},
		{
			name: "invoices by created, status, subscription and customer", path: "/v1/invoices",
			params: &stripe.InvoiceListParams{ListParams: limit, CreatedRange: created, Status: stripe.String("open"), Subscription: stripe.String(sub), Customer: stripe.String("cus_1")},
			query:  url.Values{"status": {"open"}, "subscription": {sub}, "customer": {"cus_1"}, "created[gte]": {itoa(since)}},
			out:    func() stripe.LastResponseSetter { return &stripe.InvoiceList{} },
		},
		{
			name: "an invoice with its parent's subscription", path: "/v1/invoices/" + inv, params: invRetrieve,
			query: url.Values{"expand[0]": {"parent.subscription_details.subscription"}},
			out:   func() stripe.LastResponseSetter { return &stripe.Invoice{} },
			check: func(t *testing.T, v stripe.LastResponseSetter) {
				in := v.(*stripe.Invoice)
				if in.Object != "invoice" || in.Parent == nil || in.Parent.SubscriptionDetails == nil ||
					in.Parent.SubscriptionDetails.Subscription == nil || in.Parent.SubscriptionDetails.Subscription.Object != "subscription" {
					t.Errorf("the parent's subscription is not expanded: %+v", in.Parent)
				}
			},
		},
		{
			name: "Checkout Sessions by created, status and payment intent", path: "/v1/checkout/sessions",
			params: &stripe.CheckoutSessionListParams{ListParams: limit, CreatedRange: created, Status: stripe.String("complete"), PaymentIntent: stripe.String(pi)},
			query:  url.Values{"status": {"complete"}, "payment_intent": {pi}, "created[gte]": {itoa(since)}},
			out:    func() stripe.LastResponseSetter { return &stripe.CheckoutSessionList{} },
		},
		{
			name: "a Checkout Session with its intent", path: "/v1/checkout/sessions/" + cs, params: csRetrieve,
			query: url.Values{"expand[0]": {"payment_intent"}},
			out:   func() stripe.LastResponseSetter { return &stripe.CheckoutSession{} },
			check: func(t *testing.T, v stripe.LastResponseSetter) {
				if s := v.(*stripe.CheckoutSession); s.Object != "checkout.session" || s.PaymentIntent == nil || s.PaymentIntent.Object != "payment_intent" {
					t.Errorf("got %+v", s)
				}
			},
		},
		{
			name: "the platform's accounts", path: "/v1/accounts", platform: true,
			params: &stripe.AccountListParams{ListParams: limit, CreatedRange: created},
			query:  url.Values{"limit": {"100"}, "created[gte]": {itoa(since)}},
			out:    func() stripe.LastResponseSetter { return &stripe.AccountList{} },
			check: func(t *testing.T, v stripe.LastResponseSetter) {
				if l := v.(*stripe.AccountList); len(l.Data) == 0 || l.Data[0].Object != "account" {
					t.Errorf("got %+v", l.Data)
				}
			},
		},
		{
			name: "one account", path: "/v1/accounts/" + acct, params: &stripe.AccountRetrieveParams{}, platform: true,
			out: func() stripe.LastResponseSetter { return &stripe.Account{} },
			check: func(t *testing.T, v stripe.LastResponseSetter) {
				if a := v.(*stripe.Account); a.Object != "account" || a.Requirements == nil {
					t.Errorf("got %+v", a)
				}
			},
		},
		{
			name: "the billing and account events, 18 types at once", path: "/v1/events", params: events,
			query: url.Values{"types[0]": {"customer.subscription.created"}, "types[17]": {"account.updated"}},
			out:   func() stripe.LastResponseSetter { return &stripe.EventList{} },
		},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, mock, fake) })
	}

	t.Run("both refuse a status the list does not know", func(t *testing.T) {
		for _, path := range []string{"/v1/subscriptions?status=bogus", "/v1/invoices?status=deleted", "/v1/checkout/sessions?status=paid"} {
			for _, base := range []struct{ url, key string }{{mock, "sk_test_123"}, {fake.URL(), fake.Key()}} {
				if status, body := getURL(t, base.url+path, base.key); status != http.StatusBadRequest {
					t.Errorf("%s%s: %d %s", base.url, path, status, body)
				}
			}
		}
	})
}
