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
	f, _ := newClockFixture(t)
	return f
}

// newClockFixture is newFixture with a clock the test moves; it starts at t0. The test sets it
// between requests, never during one.
func newClockFixture(t testing.TB) (*fixture, *time.Time) {
	t.Helper()
	now := t0
	srv := NewServer(Options{Now: func() time.Time { return now }})
	t.Cleanup(srv.Close)
	sc, b := newClient(srv, srv.Key(), nil)
	return &fixture{srv: srv, sc: sc, backend: b}, &now
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

// call sends a GET to path with params encoded as stripe-go does and decodes the answer into
// out, for pages whose has_more stripe-go's iterators hide and for raw shapes. account, if not
// empty, is the Stripe-Account header.
func (f *fixture) call(path string, params any, account string, out stripe.LastResponseSetter) error {
	values := &form.Values{}
	if params != nil {
		form.AppendTo(values, params)
	}
	p := &stripe.Params{Context: context.Background()}
	if account != "" {
		p.StripeAccount = stripe.String(account)
	}
	return f.backend.CallRaw(http.MethodGet, path, f.srv.Key(), []byte(values.Encode()), p, out)
}

// charged adds an intent of amount in currency that succeeded at t0-1h, and so has a captured
// charge, and returns its id.
func (f *fixture) charged(t testing.TB, account string, amount int64, currency string) string {
	t.Helper()
	return f.srv.AddPaymentIntent(PaymentIntent{
		Account: account, Status: stripe.PaymentIntentStatusSucceeded, Created: t0.Add(-time.Hour),
		Amount: amount, Currency: currency,
	})
}

// latestCharge returns the id of an intent's charge, read back over HTTP.
func (f *fixture) latestCharge(t testing.TB, piID, account string) string {
	t.Helper()
	pi := &stripe.PaymentIntent{}
	if err := f.call("/v1/payment_intents/"+piID, nil, account, pi); err != nil {
		t.Fatal(err)
	}
	if pi.LatestCharge == nil {
		t.Fatalf("%s has no latest_charge", piID)
	}
	return pi.LatestCharge.ID
}

// retrieveCharge reads a charge over HTTP, with its payment intent expanded when asked.
func (f *fixture) retrieveCharge(t testing.TB, id, account string, expand ...string) *stripe.Charge {
	t.Helper()
	p := &stripe.ChargeRetrieveParams{}
	for _, e := range expand {
		p.AddExpand(e)
	}
	ch := &stripe.Charge{}
	if err := f.call("/v1/charges/"+id, p, account, ch); err != nil {
		t.Fatalf("retrieving charge %s: %v", id, err)
	}
	return ch
}

// eventsOf lists the events whose type matches the pattern (with * as a wildcard), newest
// first.
func (f *fixture) eventsOf(t testing.TB, pattern string) []*stripe.Event {
	t.Helper()
	return f.listEvents(t, &stripe.EventListParams{Type: stripe.String(pattern)})
}
