package stripeadapter

import (
	"context"
	"net/http"
	"sync"
)

// statusRecorder is the transport of the clients NewObjectGateway builds. It notes each response's
// status and headers in the call's answer, because stripe-go keeps neither when the body of
// an error is not Stripe's JSON: a proxy's 429 page would otherwise look like an outage.
type statusRecorder struct {
	base http.RoundTripper
}

func (t *statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if a, ok := req.Context().Value(answerKey{}).(*answer); ok && resp != nil {
		a.set(resp.StatusCode, resp.Header)
	} else if ok && err != nil {
		a.setErr(err)
	}
	return resp, err
}

type answerKey struct{}

// answer is what the transport saw of one call's response.
type answer struct {
	mu     sync.Mutex
	status int
	header http.Header
	err    error // the transport's, when there was no response
}

// withAnswer returns a context whose call's response the transport will note in the answer.
func withAnswer(ctx context.Context) (context.Context, *answer) {
	a := &answer{}
	return context.WithValue(ctx, answerKey{}, a), a
}

func (a *answer) set(status int, h http.Header) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status, a.header = status, h
}

func (a *answer) setErr(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.err = err
}

// transportErr returns the transport's error of a call that got no response, nil if none was
// noted (nil-safe).
func (a *answer) transportErr() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// get returns the status and headers noted, zero if none (nil-safe).
func (a *answer) get() (int, http.Header) {
	if a == nil {
		return 0, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status, a.header
}
