package main

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// requestLog is an http.RoundTripper that logs the requests it sends, as stripetest logs those
// it receives. In real mode the gateway's HTTP client goes through one, so that the run counts
// its calls to Stripe as it counts them at stripetest, and checks them the same way. It keeps
// the method, path, query, Stripe-Account and status of each request, and no other header: the
// key never enters it.
type requestLog struct {
	base http.RoundTripper
	mu   sync.Mutex
	log  []stripetest.Request
}

var _ stripeLog = (*requestLog)(nil)

// newRequestLog returns a log over base; nil means http.DefaultTransport.
func newRequestLog(base http.RoundTripper) *requestLog {
	if base == nil {
		base = http.DefaultTransport
	}
	return &requestLog{base: base}
}

// RoundTrip sends req and logs it with the status answered, 0 if none was.
func (l *requestLog) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := stripetest.Request{
		Time:          time.Now(),
		Route:         routeOf(req.Method, req.URL.Path),
		Method:        req.Method,
		Path:          req.URL.Path,
		Query:         req.URL.Query(),
		StripeAccount: req.Header.Get("Stripe-Account"),
	}
	resp, err := l.base.RoundTrip(req)
	if err == nil {
		rec.Status = resp.StatusCode
	}
	l.mu.Lock()
	l.log = append(l.log, rec)
	l.mu.Unlock()
	return resp, err
}

// routeOf names the endpoint of a request as stripetest does: "" for one it does not serve.
func routeOf(method, path string) stripetest.Route {
	if method != http.MethodGet {
		return ""
	}
	for _, r := range []struct {
		prefix         string
		list, retrieve stripetest.Route
	}{
		{"/v1/payment_intents", stripetest.ListPaymentIntents, stripetest.RetrievePaymentIntent},
		{"/v1/events", stripetest.ListEvents, stripetest.RetrieveEvent},
		{"/v1/charges", "", stripetest.RetrieveCharge},
		{"/v1/refunds", stripetest.ListRefunds, stripetest.RetrieveRefund},
		{"/v1/disputes", stripetest.ListDisputes, stripetest.RetrieveDispute},
	} {
		rest, ok := strings.CutPrefix(path, r.prefix)
		switch {
		case !ok:
		case rest == "" && r.list != "":
			return r.list
		case len(rest) > 1 && rest[0] == '/' && !strings.Contains(rest[1:], "/"):
			return r.retrieve
		}
	}
	return ""
}

// Log returns the requests logged since the last ResetLog, in the order they were answered.
func (l *requestLog) Log() []stripetest.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]stripetest.Request(nil), l.log...)
}

// ResetLog empties the log.
func (l *requestLog) ResetLog() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = nil
}

// Requests counts the logged requests to route.
func (l *requestLog) Requests(route stripetest.Route) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.log {
		if r.Route == route {
			n++
		}
	}
	return n
}
