package stripeadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/shared/redact"
)

// mapError turns a stripe-go error into the reconcile error that decides the row's fate. answer
// is what the transport saw of the response, when we built the client. A 403 with the error
// code missing (if not empty) is the object's absence, not the key's (see Object's
// missingCode).
func (c *Client) mapError(ctx context.Context, op string, err error, answer *answer, missing stripe.ErrorCode) error {
	if ctx.Err() != nil {
		// Our caller gave up; that says nothing about Stripe.
		return fmt.Errorf("stripeadapter: %s: %w", op, context.Cause(ctx))
	}
	var se *stripe.Error
	if !errors.As(err, &se) {
		// No Stripe error body: connection refused, our per-call timeout, or a body that is not
		// JSON (a proxy's error page). A 429 is still a rate limit, whatever its body.
		status, header := answer.get()
		if status == http.StatusTooManyRequests {
			return fmt.Errorf("stripeadapter: %s: answered 429 without a Stripe error body: %w", op, c.rateLimit(header))
		}
		var msg string
		switch {
		case errors.Is(err, errRedirect):
			// net/http's error names the redirect's Location: the server's bytes.
			msg = errRedirect.Error()
		case json.Valid([]byte(err.Error())):
			// stripe-go makes an error answer that is JSON without an "error" member its error's
			// whole text: the answer's bytes, as the sample's are (and it may hold what opens
			// the sample).
			msg = "an error answer that is JSON but not a Stripe error"
			if status != 0 {
				msg = fmt.Sprintf("answered %d with JSON that is not a Stripe error", status)
			}
		default:
			msg = withoutBodySample(err.Error())
		}
		return fmt.Errorf("stripeadapter: %s: %w: %s", op, reconcile.ErrUnavailable, c.redact(msg))
	}
	// Every string below comes from the server, or from whatever stands in between: a proxy
	// may echo the Authorization header into any of them. Each is redacted before it reaches
	// an error, a log, a finding's detail or a rate limit's reason.
	status := se.HTTPStatusCode
	desc := fmt.Sprintf("stripe answered %d", status)
	if t := c.redact(string(se.Type)); t != "" {
		desc += " " + t
	}
	if c := c.redact(string(se.Code)); c != "" {
		desc += " " + c
	}
	if dc := c.redact(string(se.DeclineCode)); dc != "" {
		desc += " (decline code " + dc + ")"
	}
	if p := c.redact(se.Param); p != "" {
		desc += " (param " + p + ")"
	}
	if msg := c.redact(se.Msg); msg != "" {
		desc += ": " + msg
	}
	if id := c.redact(headerWord(se.RequestID)); id != "" {
		desc += " (request " + id + ")"
	}
	switch {
	case status == http.StatusNotFound && se.Code == stripe.ErrorCodeResourceMissing:
		return fmt.Errorf("stripeadapter: %s: %s: %w", op, desc, reconcile.ErrNotFound)
	case status == http.StatusForbidden && missing != "" && se.Code == missing:
		return fmt.Errorf("stripeadapter: %s: %s: %w", op, desc, reconcile.ErrNotFound)
	case status == http.StatusTooManyRequests && se.Code != stripe.ErrorCodeLockTimeout:
		// lock_timeout is contention on one object, not our pace: a plain retry later.
		var header http.Header
		if se.LastResponse != nil {
			header = se.LastResponse.Header
		}
		return fmt.Errorf("stripeadapter: %s: %s: %w", op, desc, c.rateLimit(header))
	case status == http.StatusUnauthorized:
		return fmt.Errorf("stripeadapter: %s: the API key was rejected: it is wrong, expired or revoked (%s): %w", op, desc, reconcile.ErrAbortBatch)
	case status == http.StatusForbidden:
		return fmt.Errorf("stripeadapter: %s: the API key lacks permission for this call (%s): %w", op, desc, reconcile.ErrAbortBatch)
	case status == http.StatusBadRequest:
		return &reconcile.ReviewError{Kind: reconcile.KindRejected, Detail: desc}
	default: // 409, lock_timeout, 5xx, an unexpected 404
		return fmt.Errorf("stripeadapter: %s: %s: %w", op, desc, reconcile.ErrUnavailable)
	}
}

// bodySample opens the first 500 bytes of an answer that stripe-go puts in the error of an
// answer it cannot decode, up to sampleEnd: bytes from outside, which may echo a key in a form
// redact cannot see (escaped, "sk\u005flive_...").
const bodySample, sampleEnd = ", body sample: '", "'): "

// withoutBodySample returns msg without stripe-go's sample of the answer's body, or msg up to
// it if its end cannot be told.
func withoutBodySample(msg string) string {
	i := strings.Index(msg, bodySample)
	if i < 0 {
		return msg
	}
	// The sample's end is the last, or one in what follows, encoding/json's error, which
	// quotes one byte of the answer or a decoded string (a ",string" field's, which may hold
	// "'): "): either way what is kept is no raw byte of the answer.
	if j := strings.LastIndex(msg, sampleEnd); j > i {
		return msg[:i] + msg[j+1:]
	}
	return msg[:i] + ")"
}

// rateLimit builds the rate-limit error from a 429's headers, its reason redacted.
func (c *Client) rateLimit(h http.Header) *reconcile.RateLimitError {
	return &reconcile.RateLimitError{
		RetryAfter: retryAfter(h.Get("Retry-After"), time.Now()),
		Reason:     c.redact(headerWord(h.Get("Stripe-Rate-Limited-Reason"))),
	}
}

// headerWord returns v, a header the kit quotes (a request id, a rate limit's reason), if it is
// a word as Stripe's are (req_..., global-rate): at most 255 letters, digits, '_', '-' or '.'.
// Otherwise "": a header is the server's bytes, of any length, and may hold a key encoded
// ("sk%5Ftest_...") where redaction cannot see it.
func headerWord(v string) string {
	if len(v) > 255 {
		return ""
	}
	for _, c := range []byte(v) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return ""
		}
	}
	return v
}

// maxRetryAfter caps a Retry-After: a larger one is a misconfigured proxy, not advice.
const maxRetryAfter = time.Hour

// retryAfter parses a Retry-After header: seconds, or an HTTP date. Zero if absent or invalid;
// at most maxRetryAfter.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
		return time.Duration(min(max(s, 0), int64(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter)
	}
	return 0
}

// redact removes API keys from s: c's own key, and anything that looks like a secret or
// restricted key.
func (c *Client) redact(s string) string {
	if c.key != "" {
		s = strings.ReplaceAll(s, c.key, redact.Mask)
	}
	return redactKeys(s)
}

// redactKeys removes anything that looks like a Stripe API key from s: the project's one
// pattern, shared with the metrics, the console and the health handler.
func redactKeys(s string) string { return redact.Keys(s) }

// validKey reports whether key looks like a secret or restricted key.
func validKey(key string) bool {
	return strings.HasPrefix(key, "sk_") || strings.HasPrefix(key, "rk_")
}
