package stripetest

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// randomIntents returns n intents created at random seconds within a day, so that many share
// a created time and the bulk load arrives unsorted.
func randomIntents(n int) []PaymentIntent {
	r := rand.New(rand.NewPCG(1, 2))
	pis := make([]PaymentIntent, n)
	for i := range pis {
		pis[i] = PaymentIntent{Created: t0.Add(-time.Duration(r.IntN(86400)) * time.Second), Amount: int64(i)}
	}
	return pis
}

func TestBulkLoadListsInOrder(t *testing.T) {
	f := newFixture(t)
	pis := randomIntents(3000)
	ids := f.srv.AddPaymentIntents(pis)
	// Expected order: created desc, then insertion desc.
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := pis[b].Created.Compare(pis[a].Created); c != 0 {
			return c
		}
		return b - a
	})
	want := make([]string, len(order))
	for i, o := range order {
		want[i] = ids[o]
	}

	t.Run("auto-pagination visits every intent in Stripe's order", func(t *testing.T) {
		got := f.listIntentIDs(t, &stripe.PaymentIntentListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(100)}})
		if !slices.Equal(got, want) {
			t.Errorf("order differs (%d listed, %d added)", len(got), len(want))
		}
	})
	t.Run("an intent added after the bulk load takes its place among them", func(t *testing.T) {
		mid := pis[order[1500]].Created
		id := f.srv.AddPaymentIntent(PaymentIntent{Created: mid})
		page, err := f.intentPage(t, &stripe.PaymentIntentListParams{
			ListParams: stripe.ListParams{Limit: stripe.Int64(1)},
			Created:    stripe.Int64(mid.Unix()),
		})
		if err != nil || len(page.Data) != 1 || page.Data[0].ID != id {
			t.Errorf("newest at its second: %v, %v", pageIDs(page), err)
		}
	})
}

// loaded is a server with 200k intents (and so 200k events) for benchmarks.
func loaded(b *testing.B) (*Server, []string) {
	b.Helper()
	srv := NewServer(Options{Now: func() time.Time { return t0 }})
	b.Cleanup(srv.Close)
	ids := srv.AddPaymentIntents(randomIntents(200_000))
	// Sort once before timing, as the first list request would.
	if _, f := srv.listPaymentIntents(nil, "", url.Values{}); f != nil {
		b.Fatal(f.err.Message)
	}
	return srv, ids
}

// BenchmarkAddPaymentIntents loads 200k intents at once.
func BenchmarkAddPaymentIntents(b *testing.B) {
	pis := randomIntents(200_000)
	for b.Loop() {
		srv := NewServer(Options{})
		srv.AddPaymentIntents(pis)
		srv.listPaymentIntents(nil, "", url.Values{}) // includes the deferred sort
		srv.Close()
	}
}

// BenchmarkListPaymentIntentsPage measures one page of 100 over 200k intents, with a created
// filter and a cursor: in the server without the network (what the fake costs) and through
// stripe-go over HTTP (what a client sees, mostly stripe-go's decoding).
func BenchmarkListPaymentIntentsPage(b *testing.B) {
	srv, ids := loaded(b)
	q := url.Values{
		"limit":          {"100"},
		"starting_after": {ids[len(ids)/2]},
		"created[gte]":   {strconv.FormatInt(t0.Add(-20*time.Hour).Unix(), 10)},
	}
	b.Run("server without network", func(b *testing.B) {
		req := httptest.NewRequest(http.MethodGet, "/v1/payment_intents?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+srv.Key())
		w := &discard{header: http.Header{}}
		for b.Loop() {
			srv.serve(w, req)
			if w.status != http.StatusOK {
				b.Fatal(w.status)
			}
		}
		srv.ResetLog()
	})
	b.Run("stripe-go over HTTP", func(b *testing.B) {
		sc, _ := newClient(srv, srv.Key(), nil)
		params := &stripe.PaymentIntentListParams{ListParams: stripe.ListParams{
			Limit: stripe.Int64(100), StartingAfter: stripe.String(ids[len(ids)/2]), Single: true,
		}}
		for b.Loop() {
			for _, err := range sc.V1PaymentIntents.List(context.Background(), params) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkListEventsPage measures one page of 100 events over 200k, with a type wildcard, in
// the server without the network.
func BenchmarkListEventsPage(b *testing.B) {
	srv, _ := loaded(b)
	req := httptest.NewRequest(http.MethodGet, "/v1/events?limit=100&type=payment_intent.*", nil)
	req.Header.Set("Authorization", "Bearer "+srv.Key())
	w := &discard{header: http.Header{}}
	for b.Loop() {
		srv.serve(w, req)
		if w.status != http.StatusOK {
			b.Fatal(w.status)
		}
	}
}

// discard is a ResponseWriter that keeps only the status, so benchmarks measure the server.
type discard struct {
	header http.Header
	status int
}

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) WriteHeader(status int)      { d.status = status }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkListSubscriptionsPage measures one page of 100 over 200k subscriptions of a
// connected account, a tenth of them canceled, in the server without the network: status=all
// as the object kit asks (the index alone), and Stripe's default that hides canceled ones (a
// filter over the index).
func BenchmarkListSubscriptionsPage(b *testing.B) {
	srv := NewServer(Options{Now: func() time.Time { return t0 }})
	b.Cleanup(srv.Close)
	r := rand.New(rand.NewPCG(1, 2))
	subs := make([]Subscription, 200_000)
	for i := range subs {
		subs[i] = Subscription{Account: "acct_1Bench", Created: t0.Add(-time.Duration(r.IntN(86400)) * time.Second)}
		if i%10 == 0 {
			subs[i].Status = stripe.SubscriptionStatusCanceled
		}
	}
	ids := srv.AddSubscriptions(subs)
	// Sort once before timing, as the first list request would.
	if _, f := subscriptionObjects.list(srv, nil, "acct_1Bench", url.Values{}); f != nil {
		b.Fatal(f.err.Message)
	}
	for _, tc := range []struct{ name, status string }{{"status=all", "&status=all"}, {"default", ""}} {
		b.Run(tc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/v1/subscriptions?limit=100&starting_after="+ids[len(ids)/2]+tc.status, nil)
			req.Header.Set("Authorization", "Bearer "+srv.Key())
			req.Header.Set("Stripe-Account", "acct_1Bench")
			w := &discard{header: http.Header{}}
			for b.Loop() {
				srv.serve(w, req)
				if w.status != http.StatusOK {
					b.Fatal(w.status)
				}
			}
			srv.ResetLog()
		})
	}
}
