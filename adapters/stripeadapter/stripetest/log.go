package stripetest

import (
	"net/http"
	"net/url"
	"time"
)

// Request is one request the server received.
type Request struct {
	// Time is when the request arrived, by the wall clock (time.Now, not Options.Now), so
	// that tests can measure calls per second.
	Time time.Time
	// Route is the endpoint, "" for a path the fake does not serve.
	Route  Route
	Method string
	Path   string
	Query  url.Values
	// Status is the HTTP status answered. It is 0 while the request is in flight, and stays 0
	// when no answer was sent because the client gave up or the server closed.
	Status int
	// StripeAccount is the Stripe-Account header, the Connect account the request acts for.
	StripeAccount string
}

// record logs a request on arrival, so that a request is counted as soon as it exists,
// including ones that hang or are refused.
func (s *Server) record(r *http.Request, route Route) *Request {
	rec := &Request{
		Time:          time.Now(),
		Route:         route,
		Method:        r.Method,
		Path:          r.URL.Path,
		Query:         r.URL.Query(),
		StripeAccount: r.Header.Get("Stripe-Account"),
	}
	s.ctl.Lock()
	defer s.ctl.Unlock()
	s.log = append(s.log, rec)
	s.counts[route]++
	s.countsBy[routeAccount{route, rec.StripeAccount}]++
	return rec
}

// answered sets the status of a logged request.
func (s *Server) answered(rec *Request, status int) {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	rec.Status = status
}

// Requests returns how many requests of route the server has received since it started or
// since ResetLog: answered, faulted, refused for a bad key, and in flight. Route "" counts
// requests for paths the fake does not serve.
func (s *Server) Requests(route Route) int {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	return s.counts[route]
}

// routeAccount is a route and a Stripe-Account header, "" for the platform.
type routeAccount struct {
	route   Route
	account string
}

// AccountRequests is Requests for the requests of route acting for one Connect account, those
// with its Stripe-Account header; "" counts the platform's own requests, without the header.
// Requests refused for the account (an unknown or disconnected one) count too.
func (s *Server) AccountRequests(route Route, account string) int {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	return s.countsBy[routeAccount{route, account}]
}

// Log returns a copy of the requests received, in arrival order. The log grows with every
// request; long benchmarks can call ResetLog between rounds.
func (s *Server) Log() []Request {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	out := make([]Request, len(s.log))
	for i, rec := range s.log {
		out[i] = *rec
		out[i].Query = cloneValues(rec.Query)
	}
	return out
}

// ResetLog forgets the requests received so far and resets the counts of Requests.
func (s *Server) ResetLog() {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	s.log = nil
	s.counts = make(map[Route]int)
	s.countsBy = make(map[routeAccount]int)
}

// cloneValues copies query values deeply, so callers cannot alter the log.
func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
