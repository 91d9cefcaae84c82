package stripeadapter

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// Defaults of GatewayConfig.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultCreatedSkew = 5 * time.Minute
)

// GatewayConfig configures an ObjectGateway: its Client, and its bulk fetch. Give either
// Client or Key.
type GatewayConfig struct {
	// Client is a stripe-go client to use as it is, with its own backend settings, which must
	// not retry (BackendConfig.MaxNetworkRetries 0): stripe-go's retries are neither paced by
	// the limiter nor counted, and sleep past our deadline. When Client is set, Key, BaseURL and
	// HTTPClient must be empty. Prefer Key: rate limits are then recognised even when a proxy
	// answers 429 with a body that is not Stripe's JSON, and no redirect is followed, whereas
	// Client's own http.Client follows them as it is set to (net/http's default sends the key
	// on to any port of the same host name, and to its subdomains), and its answers may nest
	// deeper than the 64 levels the kit's own client allows (one nested thousands deep decodes
	// in quadratic time, deaf to the deadline), and be larger than its 64 MiB (stripe-go reads
	// an answer whole, a gzip one inflated).
	Client *stripe.Client
	// Key is the secret (sk_...) or restricted (rk_...) API key. It appears in no error or log.
	Key string
	// BaseURL replaces https://api.stripe.com: stripe-mock, stripetest, or a proxy.
	BaseURL string
	// HTTPClient makes the requests; nil means one over http.DefaultTransport. Its Timeout, if
	// any, applies as well as Timeout below. stripe-go never retries: a row that cannot be
	// checked is Unverifiable and is checked again next cycle, which keeps a batch's duration
	// and API use predictable. Its CheckRedirect is replaced: no redirect is followed (see
	// Client.Download).
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
}

// String describes the config with its key redacted, so that printing it leaks nothing.
func (c GatewayConfig) String() string {
	key := ""
	if c.Key != "" {
		key = "[redacted]"
	}
	return fmt.Sprintf("stripeadapter.GatewayConfig{Key: %q, BaseURL: %q, StripeAccount: %q, Timeout: %v, CreatedSkew: %v, MaxListPages: %d, ListCacheTTL: %v, ListCacheSize: %d, Client set: %t}",
		key, c.BaseURL, c.StripeAccount, c.Timeout, c.CreatedSkew, c.MaxListPages, c.ListCacheTTL, c.ListCacheSize, c.Client != nil)
}

// GoString is String, also for %#v.
func (c GatewayConfig) GoString() string { return c.String() }

// LogValue logs the config with its key redacted.
func (c GatewayConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalJSON writes the config without its key (only whether one is set) and without the
// Client and HTTPClient, which may hold it: a config dumped as JSON leaks nothing.
func (c GatewayConfig) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		KeySet        bool   `json:"key_set"`
		ClientSet     bool   `json:"client_set"`
		BaseURL       string `json:"base_url,omitempty"`
		StripeAccount string `json:"stripe_account,omitempty"`
		Timeout       string `json:"timeout,omitempty"`
		CreatedSkew   string `json:"created_skew,omitempty"`
		MaxListPages  int    `json:"max_list_pages,omitempty"`
		ListCacheTTL  string `json:"list_cache_ttl,omitempty"`
		ListCacheSize int    `json:"list_cache_size,omitempty"`
	}{c.Key != "", c.Client != nil, c.BaseURL, c.StripeAccount, durationString(c.Timeout), durationString(c.CreatedSkew), c.MaxListPages,
		durationString(c.ListCacheTTL), c.ListCacheSize})
}

// durationString is d's String, empty for zero.
func durationString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}
