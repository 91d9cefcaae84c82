package stripeadapter

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/shared/redact"
)

// Defaults of GatewayConfig.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultCreatedSkew = 5 * time.Minute
)

// GatewayConfig configures a Gateway or an ObjectGateway. Give either Client or Key.
type GatewayConfig struct {
	// Client is a stripe-go client to use as it is, with its own backend settings, which must
	// not retry (BackendConfig.MaxNetworkRetries 0): stripe-go's retries are neither paced by
	// the limiter nor counted, and sleep past our deadline. When Client is set, Key, BaseURL and
	// HTTPClient must be empty. Prefer Key: rate limits are then recognised even when a proxy
	// answers 429 with a body that is not Stripe's JSON.
	Client *stripe.Client
	// Key is the secret (sk_...) or restricted (rk_...) API key. It appears in no error or log.
	Key string
	// BaseURL replaces https://api.stripe.com: stripe-mock, stripetest, or a proxy.
	BaseURL string
	// HTTPClient makes the requests; nil means one over http.DefaultTransport. Its Timeout, if
	// any, applies as well as Timeout below. stripe-go never retries: a row that cannot be
	// checked is Unverifiable and is checked again next cycle, which keeps a batch's duration
	// and API use predictable.
	HTTPClient *http.Client
	// Timeout bounds each API call. Zero means DefaultTimeout.
	Timeout time.Duration
	// StripeAccount is the connected account (acct_...) to act on, sent as the Stripe-Account
	// header; empty means the platform account.
	StripeAccount string
	// CreatedSkew widens the creation-time window of a bulk fetch on both sides: the most an
	// object's created time may differ from its row's created_at, clock skew included.
	// Zero means DefaultCreatedSkew.
	CreatedSkew time.Duration
	// MaxListPages caps the list calls of one bulk fetch, all its windows together; the rows
	// not found within them are asked one by one. Zero means one per row sought: never more
	// than asking each alone. It is only a cap: a list stops before it once its rows are
	// found, at its window's edge, or after two pages in a row that found few of them (a
	// crowded or misaligned window), so raising it never makes a list read further.
	MaxListPages int
	// ListCacheTTL bounds how long an object a bulk fetch listed without being asked about it
	// is kept for the next batches, counted from before the list call: no row is
	// verified on an answer older than this, nor on one listed before its cycle started, and a
	// row verified on a kept object is verified as of that list call (see
	// ObjectGateway.FetchBatchSince). Keep it below the job's Grace (10 minutes by
	// default), so that a row changed locally after the listing is still InFlight rather than
	// judged against the older state. Zero means DefaultListCacheTTL (30 s); negative turns the
	// look-ahead off.
	ListCacheTTL time.Duration
	// ListCacheSize caps the objects the look-ahead keeps (per gateway and account), a
	// PaymentIntent about 3 KB (more with expanded charges); the oldest are dropped first. Zero means DefaultListCacheSize (20,000,
	// a burst of two hundred pages).
	ListCacheSize int
	// DisputeCacheTTL bounds how long the PaymentGateway keeps a charge's final dispute
	// outcomes (at most DisputeCacheSize charges) before the sweep reads them again: a charge
	// may be disputed anew after its disputes closed (a chargeback after an inquiry), and the
	// events lane, which reads it anew on the event, may miss the event. Zero means
	// DefaultDisputeCacheTTL (24 h); negative turns keeping off, a disputes call per disputed
	// charge per read.
	DisputeCacheTTL time.Duration
}

// Gateway reads PaymentIntents. It is a reconcile.BatchGateway: for a batch of rows it lists the
// PaymentIntents created in the rows' created_at window, a hundred a call, and the engine asks
// one by one only about rows the list did not show. It is safe for concurrent use.
//
// It is the object kit's gateway of PaymentIntents (NewObjectGateway with PaymentIntents()),
// with the money reads (Payments, PaymentEventsFeed, PaymentReverseFeed) on top.
type Gateway struct {
	*client
	intents  *ObjectGateway[*stripe.PaymentIntent]
	payments *PaymentGateway
}

var (
	_ reconcile.DatedBatchGateway[*stripe.PaymentIntent] = (*Gateway)(nil)
	_ reconcile.IDChecker                                = (*Gateway)(nil)
)

// NewGateway checks cfg and returns a Gateway.
func NewGateway(cfg GatewayConfig) (*Gateway, error) {
	intents, err := NewObjectGateway(cfg, PaymentIntents())
	if err != nil {
		return nil, err
	}
	g := &Gateway{client: intents.c, intents: intents}
	g.payments = &PaymentGateway{g: g, outcomes: newOutcomeCache(DisputeCacheSize, cmp.Or(cfg.DisputeCacheTTL, DefaultDisputeCacheTTL))}
	return g, nil
}

// client is a stripe-go client with this package's defaults, the account its calls act on, and
// the error mapping every call goes through. Gateways for several accounts share one stripe-go
// client, each with its own client value.
type client struct {
	sc      *stripe.Client
	key     string // for redaction only
	timeout time.Duration
	account string // sent as Stripe-Account; "" is the platform
}

// newClient checks cfg's client settings and builds the client: stripe-go's retries off, its
// logger silenced, and the transport noting each answer's status (see statusRecorder).
func newClient(cfg GatewayConfig) (*client, error) {
	switch {
	case cfg.Client != nil && (cfg.Key != "" || cfg.BaseURL != "" || cfg.HTTPClient != nil):
		return nil, errors.New("stripeadapter: gateway config: Client is set, so Key, BaseURL and HTTPClient must be empty")
	case cfg.Client != nil && retries(cfg.Client) != 0:
		return nil, fmt.Errorf("stripeadapter: gateway config: Client retries failed requests %d times; "+
			"build it with BackendConfig.MaxNetworkRetries = stripe.Int64(0), or give Key instead", retries(cfg.Client))
	case cfg.Client == nil && cfg.Key == "":
		return nil, errors.New("stripeadapter: gateway config: Key is empty and no Client is set")
	case cfg.Client == nil && !validKey(cfg.Key):
		return nil, errors.New("stripeadapter: gateway config: Key is not a Stripe secret (sk_...) or restricted (rk_...) key")
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("stripeadapter: gateway config: Timeout %v is negative", cfg.Timeout)
	case cfg.CreatedSkew < 0:
		return nil, fmt.Errorf("stripeadapter: gateway config: CreatedSkew %v is negative", cfg.CreatedSkew)
	case cfg.ListCacheSize < 0:
		return nil, fmt.Errorf("stripeadapter: gateway config: ListCacheSize %d is negative", cfg.ListCacheSize)
	case cfg.MaxListPages < 0:
		return nil, fmt.Errorf("stripeadapter: gateway config: MaxListPages %d is negative", cfg.MaxListPages)
	case cfg.StripeAccount != "" && !validID("acct_", cfg.StripeAccount):
		// As ForAccount checks: anything else fails every call (net/http refuses the header),
		// an outage that is really a config error.
		return nil, fmt.Errorf("stripeadapter: gateway config: StripeAccount %s is not an account id (acct_ and letters and digits)", redactKeys(shorten(cfg.StripeAccount)))
	}
	c := &client{sc: cfg.Client, key: cfg.Key, timeout: cmp.Or(cfg.Timeout, DefaultTimeout), account: cfg.StripeAccount}
	if c.sc == nil {
		hc := &http.Client{}
		if cfg.HTTPClient != nil {
			*hc = *cfg.HTTPClient
		}
		hc.Transport = &statusRecorder{base: cmp.Or[http.RoundTripper](hc.Transport, http.DefaultTransport)}
		bc := &stripe.BackendConfig{
			HTTPClient:        hc,
			MaxNetworkRetries: stripe.Int64(0),
			// We report every failure ourselves, redacted; stripe-go's logger would print
			// response bodies to stderr.
			LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
		}
		if cfg.BaseURL != "" {
			bc.URL = stripe.String(strings.TrimRight(cfg.BaseURL, "/"))
		}
		c.sc = stripe.NewClient(cfg.Key, stripe.WithBackends(stripe.NewBackendsWithConfig(bc)))
	}
	return c, nil
}

// forAccount is c acting on the account acct, over the same stripe-go client.
func (c *client) forAccount(acct string) *client {
	cc := *c
	cc.account = acct
	return &cc
}

// retries returns how many times c's backend retries a request, 0 when it cannot tell.
func retries(c *stripe.Client) int64 {
	if c.V1PaymentIntents == nil {
		return 0
	}
	b := c.V1PaymentIntents.B
	if u, ok := b.(*stripe.UsageBackend); ok { // what stripe.NewClient wraps its defaults in
		b = u.B
	}
	if bi, ok := b.(*stripe.BackendImplementation); ok {
		return bi.MaxNetworkRetries
	}
	return 0
}

// String describes the gateway without its key.
func (g Gateway) String() string {
	if g.intents == nil { // a zero Gateway, not built by NewGateway
		return "stripeadapter.Gateway{}"
	}
	return fmt.Sprintf("stripeadapter.Gateway{account: %q, timeout: %v, skew: %v}", g.account, g.timeout, g.intents.skew)
}

// GoString describes the gateway without its key, also for %#v.
func (g Gateway) GoString() string { return g.String() }

// String describes the config with its key redacted, so that printing it leaks nothing.
func (c GatewayConfig) String() string {
	key := ""
	if c.Key != "" {
		key = "[redacted]"
	}
	return fmt.Sprintf("stripeadapter.GatewayConfig{Key: %q, BaseURL: %q, StripeAccount: %q, Timeout: %v, CreatedSkew: %v, MaxListPages: %d, ListCacheTTL: %v, ListCacheSize: %d, DisputeCacheTTL: %v, Client set: %t}",
		key, c.BaseURL, c.StripeAccount, c.Timeout, c.CreatedSkew, c.MaxListPages, c.ListCacheTTL, c.ListCacheSize, c.DisputeCacheTTL, c.Client != nil)
}

// GoString is String, also for %#v.
func (c GatewayConfig) GoString() string { return c.String() }

// LogValue logs the config with its key redacted.
func (c GatewayConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalJSON writes the config without its key (only whether one is set) and without the
// Client and HTTPClient, which may hold it: a config dumped as JSON leaks nothing.
func (c GatewayConfig) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		KeySet          bool   `json:"key_set"`
		ClientSet       bool   `json:"client_set"`
		BaseURL         string `json:"base_url,omitempty"`
		StripeAccount   string `json:"stripe_account,omitempty"`
		Timeout         string `json:"timeout,omitempty"`
		CreatedSkew     string `json:"created_skew,omitempty"`
		MaxListPages    int    `json:"max_list_pages,omitempty"`
		ListCacheTTL    string `json:"list_cache_ttl,omitempty"`
		ListCacheSize   int    `json:"list_cache_size,omitempty"`
		DisputeCacheTTL string `json:"dispute_cache_ttl,omitempty"`
	}{c.Key != "", c.Client != nil, c.BaseURL, c.StripeAccount, durationString(c.Timeout), durationString(c.CreatedSkew), c.MaxListPages,
		durationString(c.ListCacheTTL), c.ListCacheSize, durationString(c.DisputeCacheTTL)})
}

// durationString is d's String, empty for zero.
func durationString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// CheckID rejects, without a call, an id that cannot be a PaymentIntent's: a ReviewError of kind
// invalid_external_id. The engine asks it before spending a call or a limiter token.
func (g *Gateway) CheckID(externalID string) error { return g.intents.CheckID(externalID) }

// Fetch retrieves one PaymentIntent, its latest charge expanded. An id that cannot be a
// PaymentIntent's is a ReviewError of kind invalid_external_id, found without calling Stripe.
func (g *Gateway) Fetch(ctx context.Context, externalID string) (*stripe.PaymentIntent, error) {
	return g.intents.Fetch(ctx, externalID)
}

// FetchBatch is the bulk fetch of ObjectGateway.FetchBatch: a list of the intents created in
// the lookups' created_at window, their charges expanded.
func (g *Gateway) FetchBatch(ctx context.Context, lookups []reconcile.Lookup, wait func(context.Context) error) (map[string]*stripe.PaymentIntent, error) {
	return g.intents.FetchBatch(ctx, lookups, wait)
}

// FetchBatchSince is the bulk fetch of ObjectGateway.FetchBatchSince: the look-ahead's intents
// listed from since on, then a list of the intents created in the lookups' created_at window,
// their charges expanded.
func (g *Gateway) FetchBatchSince(ctx context.Context, lookups []reconcile.Lookup, since time.Time,
	wait func(context.Context) error) (map[string]reconcile.Answer[*stripe.PaymentIntent], error) {
	return g.intents.FetchBatchSince(ctx, lookups, since, wait)
}

// shorten quotes s, cut to 64 bytes: server-provided text in a message must stay short.
func shorten(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}

// validID reports whether id is prefix followed by letters and digits, at most 255 bytes.
func validID(prefix, id string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || rest == "" || len(id) > 255 {
		return false
	}
	for _, c := range rest {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// mapError turns a stripe-go error into the reconcile error that decides the row's fate. answer
// is what the transport saw of the response, when we built the client. A 403 with the error
// code missing (if not empty) is the object's absence, not the key's (see Object's
// missingCode).
func (c *client) mapError(ctx context.Context, op string, err error, answer *answer, missing stripe.ErrorCode) error {
	if ctx.Err() != nil {
		// Our caller gave up; that says nothing about Stripe.
		return fmt.Errorf("stripeadapter: %s: %w", op, context.Cause(ctx))
	}
	var se *stripe.Error
	if !errors.As(err, &se) {
		// No Stripe error body: connection refused, our per-call timeout, or a body that is not
		// JSON (a proxy's error page). A 429 is still a rate limit, whatever its body.
		if status, header := answer.get(); status == http.StatusTooManyRequests {
			return fmt.Errorf("stripeadapter: %s: answered 429 without a Stripe error body: %w", op, c.rateLimit(header))
		}
		return fmt.Errorf("stripeadapter: %s: %w: %s", op, reconcile.ErrUnavailable, c.redact(err.Error()))
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
	if id := c.redact(se.RequestID); id != "" {
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

// rateLimit builds the rate-limit error from a 429's headers, its reason redacted.
func (c *client) rateLimit(h http.Header) *reconcile.RateLimitError {
	return &reconcile.RateLimitError{
		RetryAfter: retryAfter(h.Get("Retry-After"), time.Now()),
		Reason:     c.redact(h.Get("Stripe-Rate-Limited-Reason")),
	}
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
func (c *client) redact(s string) string {
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
