package stripeadapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

// DefaultFilesURL is where Stripe serves files' contents (a report run's result), the client's
// files host unless the gateway was given a BaseURL.
const DefaultFilesURL = "https://files.stripe.com"

// FilesURL returns the base URL the client downloads files from: stripe-go's uploads backend,
// DefaultFilesURL, or the gateway's BaseURL (a fake or a proxy serves both). Empty when the
// host's own stripe-go client has a backend whose URL it cannot tell.
func (c *Client) FilesURL() string {
	b := c.sc.V1Files.BUploads
	if u, ok := b.(*stripe.UsageBackend); ok {
		b = u.B
	}
	if bi, ok := b.(*stripe.BackendImplementation); ok {
		return strings.TrimRight(bi.URL, "/")
	}
	return ""
}

// Download fetches the contents of a Stripe file, given the url Stripe gave for it (a File's
// url, FilesURL()/v1/files/file_.../contents), with the client's key: exactly one GET, at most
// limit bytes read (more is an error), with the client's timeout and error mapping. The key goes
// only to the client's files host: a url of another scheme, host, port or shape is refused
// before any request is made, with an error that does not quote the url (the server's bytes,
// which may hold the key encoded where redaction cannot see it, "sk%5Flive_..."); a redirect
// is not followed, and is such an error too, not an outage.
func (c *Client) Download(ctx context.Context, op, fileURL string, limit int64) ([]byte, error) {
	base := c.FilesURL()
	id, ok := fileID(base, fileURL)
	if !ok {
		return nil, fmt.Errorf("stripeadapter: %s: the file's url is not a file of the files host %s (%s/v1/files/file_.../contents): "+
			"not fetched, the API key goes to no other host", op, shorten(base), base)
	}
	if limit <= 0 {
		return nil, fmt.Errorf("stripeadapter: %s: download limit %d is not positive", op, limit)
	}
	p := &stripe.Params{}
	answer, cancel := c.begin(ctx, p)
	defer cancel()
	answer.file = true // a report's CSV, whose brackets are no JSON's
	var res streamed
	if err := callStreaming(answer, func() error {
		return c.sc.V1Files.BUploads.CallStreaming(http.MethodGet, "/v1/files/"+id+"/contents", c.sc.V1Files.Key, p, &res)
	}); err != nil {
		if errors.Is(err, errRedirect) && ctx.Err() == nil {
			// Not an outage: the file is not fetched, as for a url of another host. net/http's
			// error names the redirect's Location, the server's bytes: not quoted.
			return nil, fmt.Errorf("stripeadapter: %s: not fetched: %v", op, errRedirect)
		}
		return nil, c.mapError(ctx, op, err, answer, "")
	}
	if res.r == nil || res.r.Body == nil {
		return nil, fmt.Errorf("stripeadapter: %s: an answer without a body: %w", op, reconcile.ErrUnavailable)
	}
	defer res.r.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.r.Body, limit+1))
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("stripeadapter: %s: %w", op, context.Cause(ctx))
	case err != nil:
		return nil, fmt.Errorf("stripeadapter: %s: reading the file: %w: %s", op, reconcile.ErrUnavailable, c.redact(err.Error()))
	case int64(len(b)) > limit:
		return nil, fmt.Errorf("stripeadapter: %s: the file is larger than %d bytes: %w", op, limit, ErrTooLarge)
	}
	return b, nil
}

// callStreaming runs call, a stripe-go CallStreaming, and returns the error of a request that
// got no answer (a timeout, a refused or dropped connection) where stripe-go v82 panics on it:
// it reads the body of the response it did not get (stripe/stripe-go#2211, fixed in v83).
func callStreaming(a *answer, call func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = a.transportErr()
			if err == nil {
				err = fmt.Errorf("no answer (stripe-go: %v)", r)
			}
		}
	}()
	return call()
}

// ErrTooLarge is the error of a download larger than its limit.
var ErrTooLarge = errors.New("stripeadapter: too large")

// streamed keeps a streaming answer, whose body the caller reads.
type streamed struct{ r *stripe.StreamingAPIResponse }

func (s *streamed) SetLastResponse(r *stripe.StreamingAPIResponse) { s.r = r }

// fileID returns the id of the file whose contents u names on the files host base: the same
// scheme, host and port, no user, query or fragment, and the path base/v1/files/<id>/contents.
func fileID(base, u string) (string, bool) {
	b, err := url.Parse(base)
	if base == "" || err != nil {
		return "", false
	}
	f, err := url.Parse(u)
	if err != nil || f.Scheme != b.Scheme || !strings.EqualFold(f.Host, b.Host) || f.User != nil || f.Opaque != "" ||
		f.RawQuery != "" || f.ForceQuery || f.Fragment != "" || f.RawPath != "" {
		return "", false
	}
	rest, ok := strings.CutPrefix(f.Path, strings.TrimRight(b.Path, "/")+"/v1/files/")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/contents")
	if !ok || !validID("file_", id) {
		return "", false
	}
	return id, true
}
