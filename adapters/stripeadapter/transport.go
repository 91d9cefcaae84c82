package stripeadapter

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// statusRecorder is the transport of the clients NewObjectGateway builds. It notes each response's
// status and headers in the call's answer, because stripe-go keeps neither when the body of
// an error is not Stripe's JSON: a proxy's 429 page would otherwise look like an outage. It
// also caps the size and the nesting of each JSON answer (see maxAnswerBytes, maxAnswerDepth).
type statusRecorder struct {
	base http.RoundTripper
}

func (t *statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	a, ok := req.Context().Value(answerKey{}).(*answer)
	if ok && resp != nil {
		a.set(resp.StatusCode, resp.Header)
	} else if ok && err != nil {
		a.setErr(err)
	}
	// A file's contents are not JSON (Download caps their size itself); its error answer is,
	// and stripe-go decodes it as any.
	if resp != nil && resp.Body != nil && !(ok && a.file && resp.StatusCode < 400) {
		resp.Body = &depthCapped{r: &sizeCapped{r: resp.Body, left: maxAnswerBytes}}
	}
	return resp, err
}

// maxAnswerBytes is how large a JSON answer may be. stripe-go reads an answer whole before it
// decodes it, without a limit, and net/http inflates a gzip answer as it is read: half a
// megabyte inflating to 512 MiB made the process allocate 1.7 GB, within the call's timeout.
// Stripe's pages are 100 objects, expanded: a few megabytes.
const maxAnswerBytes = 64 << 20

// errTooLarge fails the read of an answer larger than maxAnswerBytes. It quotes none of the
// answer.
var errTooLarge = fmt.Errorf("stripeadapter: the answer is larger than %d MiB: not Stripe's, not decoded", maxAnswerBytes>>20)

// sizeCapped is a response body that fails its read with errTooLarge at the byte past left.
type sizeCapped struct {
	r    io.ReadCloser
	left int64 // the bytes it may still read
	err  error
}

func (s *sizeCapped) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if int64(len(p)) > s.left+1 {
		p = p[:s.left+1] // one more than may be read: reading it tells the answer is too large
	}
	n, err := s.r.Read(p)
	if int64(n) > s.left {
		n, s.left, s.err = int(s.left), 0, errTooLarge
		return n, s.err
	}
	s.left -= int64(n)
	return n, err
}

func (s *sizeCapped) Close() error { return s.r.Close() }

// maxAnswerDepth is how deep a JSON answer may nest its objects and arrays. Both stripe-go's
// decode and the one-pass list decoder (plainlist.go) take time quadratic in the depth of
// nested expanded objects: 1,000 levels take seconds, 5,000 half a minute or more, deaf to the
// call's deadline. Stripe expands at most 4 levels, and each object adds a few of its own: the
// deepest page stripetest renders, every descriptor expanded, nests 8 (a list of intents with
// their charges' balance transactions and refunds). 64 leaves room for sub-objects Stripe adds
// later; a hostile answer fails at its 65th opener, before anything decodes it.
const maxAnswerDepth = 64

// errTooDeep fails the read of an answer nested deeper than maxAnswerDepth. It quotes none of
// the answer.
var errTooDeep = fmt.Errorf("stripeadapter: the answer nests JSON objects and arrays more than %d deep: "+
	"not Stripe's, not decoded", maxAnswerDepth)

// depthCapped is a response body that fails its read with errTooDeep once the JSON streaming
// through nests deeper than maxAnswerDepth. It counts brackets outside strings, its state kept
// across Reads so a string or an escape split between two is read as one; it does not check
// the JSON is valid, only that the decoder will not be handed a deep one. An answer that does
// not open with an object or an array is not counted: encoding/json decodes no container of
// it (it is a scalar alone, or fails before decoding anything), and a proxy's HTML page then
// fails as the page it is.
type depthCapped struct {
	r        io.ReadCloser
	depth    int
	inString bool
	escaped  bool // the last byte was a backslash in a string
	opened   bool // the answer's first byte other than JSON whitespace was read
	off      bool // it was no opener: nothing is counted
	err      error
}

func (d *depthCapped) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	n, err := d.r.Read(p)
	start := 0
	if !d.opened {
		for start < n && (p[start] == ' ' || p[start] == '\t' || p[start] == '\n' || p[start] == '\r') {
			start++
		}
		if start < n {
			d.opened, d.off = true, p[start] != '{' && p[start] != '['
		}
	}
	if d.off {
		return n, err
	}
	for i := start; i < n; i++ {
		c := p[i]
		switch {
		case !jsonMarks[c] && !d.escaped:
			// Most bytes (letters, digits, commas, colons): one table look-up.
		case d.escaped:
			d.escaped = false
		case d.inString:
			switch c {
			case '\\':
				d.escaped = true
			case '"':
				d.inString = false
			}
		case c == '"':
			d.inString = true
		case c == '{' || c == '[':
			if d.depth++; d.depth > maxAnswerDepth {
				d.err = errTooDeep
				return i, d.err
			}
		case c == '}' || c == ']':
			// Not below zero: closers first must not buy openers past the cap.
			d.depth = max(d.depth-1, 0)
		}
	}
	return n, err
}

// jsonMarks are the bytes depthCapped looks at: quotes, backslashes and brackets.
var jsonMarks = [256]bool{'"': true, '\\': true, '{': true, '[': true, '}': true, ']': true}

func (d *depthCapped) Close() error { return d.r.Close() }

type answerKey struct{}

// answer is what the transport saw of one call's response.
type answer struct {
	mu     sync.Mutex
	status int
	header http.Header
	err    error // the transport's, when there was no response
	file   bool  // the answer is a file's contents, not JSON: neither its size nor its depth is capped, unless it is an error
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
