package stripeadapter

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// The one-pass decoder reads bytes from outside: Stripe, or whatever stands in between. For any
// bytes, a list call through it either falls back (and answers as stripe-go's own decode
// answers) or gives exactly the page stripe-go's decode gives: decodeBoth is the property.

// listPageSeeds are real pages of every ship-ready descriptor from stripetest, expanded and
// not, and the hostile pages of plainlist_hostile_internal_test.go that are small enough.
func listPageSeeds(t testing.TB) [][]byte {
	t.Helper()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	srv := stripetest.NewServer(stripetest.Options{Now: func() time.Time { return now }})
	defer srv.Close()
	ids := srv.AddPaymentIntents([]stripetest.PaymentIntent{
		{Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000, Currency: "eur", Metadata: map[string]string{"order": "o\"1", "ü\\": "\u2028"}},
		{Status: stripe.PaymentIntentStatusSucceeded, Amount: 2000},
		{Status: stripe.PaymentIntentStatusProcessing},
		{Status: stripe.PaymentIntentStatusRequiresCapture},
		{},
	})
	if _, err := srv.Refund(ids[0], 300); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Dispute(ids[1], 2000, stripe.DisputeStatusNeedsResponse, now.Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	srv.AddSubscriptions([]stripetest.Subscription{{Metadata: map[string]string{"k": "v"}}, {Status: stripe.SubscriptionStatusCanceled}})
	srv.AddInvoices([]stripetest.Invoice{{}, {Metadata: map[string]string{"k": "v"}}})
	srv.AddCheckoutSessions([]stripetest.CheckoutSession{{}, {Status: stripe.CheckoutSessionStatusComplete}})
	srv.AddAccounts([]stripetest.Account{{}, {ChargesEnabled: true, PayoutsEnabled: true, DetailsSubmitted: true}})
	var seeds [][]byte
	for _, pq := range []string{
		"/v1/payment_intents?limit=100",
		"/v1/payment_intents?limit=2",
		"/v1/payment_intents?limit=100&expand[]=data.latest_charge",
		"/v1/payment_intents?limit=100&expand[]=data.latest_charge.payment_intent",
		"/v1/payment_intents?limit=100&expand[]=data.latest_charge.balance_transaction&expand[]=data.latest_charge.refunds",
		"/v1/subscriptions?limit=100&status=all",
		"/v1/subscriptions?limit=100&status=all&expand[]=data.latest_invoice",
		"/v1/invoices?limit=100",
		"/v1/invoices?limit=100&expand[]=data.parent.subscription_details.subscription",
		"/v1/checkout/sessions?limit=100",
		"/v1/checkout/sessions?limit=100&expand[]=data.payment_intent",
		"/v1/accounts?limit=100",
	} {
		if body, ok := pageBytesIf(t, srv, pq); ok {
			seeds = append(seeds, body)
		}
	}
	for _, c := range hostilePages() {
		if len(c.page) <= 16<<10 {
			seeds = append(seeds, []byte(c.page))
		}
	}
	return seeds
}

// pageBytesIf is pageBytes, false for an answer other than a 200 (an expansion stripetest does
// not know).
func pageBytesIf(t testing.TB, srv *stripetest.Server, pathQuery string) ([]byte, bool) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL()+pathQuery, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.Key())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body, resp.StatusCode == http.StatusOK
}

// fuzzListPage fuzzes obj's listDecoder with every seed.
func fuzzListPage[T any](f *testing.F, obj Object[T]) {
	for _, s := range listPageSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) { decodeBoth(t, obj, data) })
}

func FuzzListPagePaymentIntentsCharged(f *testing.F) { fuzzListPage(f, PaymentIntents()) }

func FuzzListPagePaymentIntents(f *testing.F) {
	obj := PaymentIntents()
	obj.Expand = nil
	fuzzListPage(f, obj)
}

func FuzzListPageSubscriptions(f *testing.F)    { fuzzListPage(f, Subscriptions()) }
func FuzzListPageInvoices(f *testing.F)         { fuzzListPage(f, Invoices()) }
func FuzzListPageCheckoutSessions(f *testing.F) { fuzzListPage(f, CheckoutSessions()) }
func FuzzListPageAccounts(f *testing.F)         { fuzzListPage(f, Accounts()) }
