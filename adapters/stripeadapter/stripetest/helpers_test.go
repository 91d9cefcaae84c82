package stripetest

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/form"
)

// t0 is the fixed clock of the tests' servers.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// fixture is a server and stripe-go pointed at it.
type fixture struct {
	srv     *Server
	sc      *stripe.Client
	backend stripe.Backend
}

// newFixture starts a server with a fixed clock and a stripe-go client without retries.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	srv := NewServer(Options{Now: func() time.Time { return t0 }})
	t.Cleanup(srv.Close)
	sc, b := newClient(srv, srv.Key(), nil)
	return &fixture{srv: srv, sc: sc, backend: b}
}

// newClient returns stripe-go configured for srv with key; hc may be nil.
func newClient(srv *Server, key string, hc *http.Client) (*stripe.Client, stripe.Backend) {
	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(srv.URL()),
		HTTPClient:        hc,
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	return stripe.NewClient(key, stripe.WithBackends(backends)), backends.API
}

// intentPage fetches one page of /v1/payment_intents, encoding params as stripe-go does, so
// that has_more can be checked (stripe-go's iterators hide it).
func (f *fixture) intentPage(t testing.TB, params *stripe.PaymentIntentListParams) (*stripe.PaymentIntentList, error) {
	t.Helper()
	values := &form.Values{}
	form.AppendTo(values, params)
	list := &stripe.PaymentIntentList{}
	p := &stripe.Params{Context: context.Background(), StripeAccount: params.StripeAccount}
	err := f.backend.CallRaw(http.MethodGet, "/v1/payment_intents", f.srv.Key(), []byte(values.Encode()), p, list)
	return list, err
}

// eventPage is intentPage for /v1/events.
func (f *fixture) eventPage(t testing.TB, params *stripe.EventListParams) (*stripe.EventList, error) {
	t.Helper()
	values := &form.Values{}
	form.AppendTo(values, params)
	list := &stripe.EventList{}
	p := &stripe.Params{Context: context.Background(), StripeAccount: params.StripeAccount}
	err := f.backend.CallRaw(http.MethodGet, "/v1/events", f.srv.Key(), []byte(values.Encode()), p, list)
	return list, err
}

// listIntentIDs lists through stripe-go's auto-paginating iterator.
func (f *fixture) listIntentIDs(t testing.TB, params *stripe.PaymentIntentListParams) []string {
	t.Helper()
	var ids []string
	for pi, err := range f.sc.V1PaymentIntents.List(context.Background(), params) {
		if err != nil {
			t.Fatalf("listing payment intents: %v", err)
		}
		ids = append(ids, pi.ID)
	}
	return ids
}

// stripeError asserts that err is a *stripe.Error with the HTTP status.
func stripeError(t testing.TB, err error, status int) *stripe.Error {
	t.Helper()
	var se *stripe.Error
	if !errors.As(err, &se) {
		t.Fatalf("error = %v (%T), want a *stripe.Error", err, err)
	}
	if se.HTTPStatusCode != status {
		t.Fatalf("status = %d, want %d (error %v)", se.HTTPStatusCode, status, se)
	}
	return se
}

// addAt adds intents with ids id0, id1, ... created at the given offsets from t0 in seconds.
func addAt(srv *Server, prefix string, offsets ...int) []string {
	pis := make([]PaymentIntent, len(offsets))
	for i, o := range offsets {
		pis[i] = PaymentIntent{ID: prefix + string(rune('a'+i)), Created: t0.Add(time.Duration(o) * time.Second), Amount: 100}
	}
	return srv.AddPaymentIntents(pis)
}

func idsOf[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}

func pageIDs(l *stripe.PaymentIntentList) []string {
	return idsOf(l.Data, func(pi *stripe.PaymentIntent) string { return pi.ID })
}

func reversed(s []string) []string {
	s = slices.Clone(s)
	slices.Reverse(s)
	return s
}
