package stripetest

import (
	"fmt"
	"net/http"
	"time"
)

// Fault is a failure or delay injected into requests of one route.
type Fault struct {
	// Status is the HTTP status of the error answer; 0 means no error answer, the request is
	// only delayed by Latency and then served normally.
	Status int
	// Type is the Stripe error type. Empty means invalid_request_error for 4xx and api_error
	// for 5xx, as Stripe answers (a 429 rate limit is an invalid_request_error).
	Type string
	// Code is the Stripe error code, such as "rate_limit", "lock_timeout" or
	// "resource_missing". Empty means "rate_limit" for 429 and none otherwise.
	Code string
	// Message is the error message; empty means a default for the status.
	Message string
	// Header holds extra response headers, such as Retry-After or
	// Stripe-Rate-Limited-Reason. They are also sent when Status is 0.
	Header http.Header
	// Body, if not empty, is sent as is with Content-Type text/html instead of a Stripe-shaped
	// JSON error, like the HTML page of a proxy's 502. It needs a non-zero Status.
	Body string
	// Latency delays the answer; it ends early if the client gives up or the server closes.
	Latency time.Duration
	// Hang means never answer: the request ends only when the client gives up or the server
	// closes, and its connection is dropped.
	Hang bool
	// ID limits the fault to requests about this object, the id in a retrieve path. Empty
	// means every request of the route. A fault with an ID never matches list requests.
	ID string
	// Account limits the fault to requests acting for one Connect account, the value of their
	// Stripe-Account header; Platform limits it to requests without the header. Empty means
	// requests for any account and the platform. With it a test makes one account rate
	// limited or down while the others answer normally.
	Account string
	// Times is how many requests the fault affects; 0 means every request until ClearFaults.
	Times int
}

// Platform is the Fault.Account of a fault that applies only to the platform's own requests,
// those without a Stripe-Account header.
const Platform = "platform"

// injected is a Fault with its remaining uses.
type injected struct {
	route Route
	fault Fault
	left  int // -1: unlimited
}

// Inject adds a fault for route. Faults are checked in injection order and the first one that
// matches the request and has uses left applies; faults apply only to requests that passed
// authentication.
func (s *Server) Inject(route Route, f Fault) {
	left := f.Times
	if left <= 0 {
		left = -1
	}
	f.Header = f.Header.Clone()
	s.ctl.Lock()
	defer s.ctl.Unlock()
	s.faults = append(s.faults, &injected{route: route, fault: f, left: left})
}

// ClearFaults removes all injected faults. Latency set with SetLatency stays.
func (s *Server) ClearFaults() {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	s.faults = nil
}

// SetLatency delays every request of every route by d, on top of any fault's latency, to
// simulate the network and Stripe's processing time in benchmarks. Zero turns it off.
func (s *Server) SetLatency(d time.Duration) {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	s.latency = d
}

func (s *Server) baseLatency() time.Duration {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	return s.latency
}

// takeFault finds the fault for a request and uses it up once; account is the request's
// Stripe-Account header.
func (s *Server) takeFault(route Route, id, account string) (Fault, bool) {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	for i, in := range s.faults {
		if in.route != route || in.left == 0 || (in.fault.ID != "" && in.fault.ID != id) || !in.forAccount(account) {
			continue
		}
		if in.left > 0 {
			in.left--
			if in.left == 0 {
				// Spent faults are dropped so that the list does not grow with use.
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		return in.fault, true
	}
	return Fault{}, false
}

// forAccount reports whether the fault applies to requests with the Stripe-Account header.
func (in *injected) forAccount(account string) bool {
	switch in.fault.Account {
	case "":
		return true
	case Platform:
		return account == ""
	}
	return in.fault.Account == account
}

// applyFault delays, hangs or answers a request as f says; it reports whether the request has
// been dealt with, and otherwise the normal handler runs.
func (s *Server) applyFault(w http.ResponseWriter, r *http.Request, rec *Request, f Fault) bool {
	for k, vs := range f.Header {
		w.Header()[k] = append([]string(nil), vs...)
	}
	if !s.sleep(r, f.Latency, false) || (f.Hang && !s.sleep(r, 0, true)) {
		panic(http.ErrAbortHandler) // see serve: no answer at all, not an empty 200
	}
	if f.Status == 0 {
		return false
	}
	if f.Body != "" {
		s.answered(rec, f.Status)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(f.Status)
		_, _ = w.Write([]byte(f.Body))
		return true
	}
	s.fail(w, rec, &failure{f.Status, faultError(f)})
	return true
}

// faultError is the Stripe-shaped error of a fault, with Stripe's defaults filled in.
func faultError(f Fault) apiError {
	e := apiError{Type: f.Type, Code: f.Code, Message: f.Message}
	if e.Type == "" {
		e.Type = errInvalidRequest
		if f.Status >= 500 {
			e.Type = errAPI
		}
	}
	if e.Code == "" && f.Status == http.StatusTooManyRequests {
		e.Code = "rate_limit"
	}
	if e.Message == "" {
		switch {
		case e.Code == "rate_limit":
			e.Message = "Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits."
		case e.Code == "lock_timeout":
			e.Message = "This object cannot be accessed right now because another API request or Stripe process is currently accessing it. If you see this error intermittently, retry the request. If you see this error frequently and are making multiple concurrent requests to a single object, make your requests serially or at a lower rate."
		default:
			e.Message = fmt.Sprintf("stripetest: injected fault: %d %s", f.Status, http.StatusText(f.Status))
		}
	}
	e.DocURL = docURL(e.Code)
	return e
}
