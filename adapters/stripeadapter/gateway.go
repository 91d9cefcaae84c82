package stripeadapter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

// Defaults of GatewayConfig.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultCreatedSkew = 5 * time.Minute
)

// GatewayConfig configures a Gateway. Give either Client or Key.
type GatewayConfig struct {
	// Client is a stripe-go client to use as it is, with its own backend settings. When it is
	// set, Key, BaseURL, HTTPClient and NetworkRetries must be empty.
	Client *stripe.Client
	// Key is the secret (sk_...) or restricted (rk_...) API key. It appears in no error or log.
	Key string
	// BaseURL replaces https://api.stripe.com: stripe-mock, stripetest, or a proxy.
	BaseURL string
	// HTTPClient makes the requests; nil means stripe-go's default client.
	HTTPClient *http.Client
	// NetworkRetries is how many times stripe-go itself retries a failed request. Zero, the
	// default, means never: a row that cannot be checked is Unverifiable and is checked again
	// next cycle, which keeps a batch's duration and API use predictable.
	NetworkRetries int
	// Timeout bounds each API call. Zero means DefaultTimeout.
	Timeout time.Duration
	// StripeAccount is the connected account (acct_...) to act on, sent as the Stripe-Account
	// header; empty means the platform account.
	StripeAccount string
	// CreatedSkew widens the creation-time window of a bulk fetch on both sides: the most a
	// PaymentIntent's created time may differ from its row's created_at, clock skew included.
	// Zero means DefaultCreatedSkew.
	CreatedSkew time.Duration
	// MaxListPages caps the list calls of one bulk fetch, so that a crowded window degrades to
	// per-object calls instead of reading the whole account. Zero means two pages per hundred
	// rows plus two.
	MaxListPages int
}

// Gateway reads PaymentIntents. It is a reconcile.BatchGateway: for a batch of rows it lists the
// PaymentIntents created in the rows' created_at window, a hundred a call, and the engine asks
// one by one only about rows the list did not show. It is safe for concurrent use.
type Gateway struct {
	sc       *stripe.Client
	key      string // for redaction only
	timeout  time.Duration
	account  string
	skew     time.Duration
	maxPages int
}

var _ reconcile.BatchGateway[*stripe.PaymentIntent] = (*Gateway)(nil)

// NewGateway checks cfg and returns a Gateway.
func NewGateway(cfg GatewayConfig) (*Gateway, error) {
	switch {
	case cfg.Client != nil && (cfg.Key != "" || cfg.BaseURL != "" || cfg.HTTPClient != nil || cfg.NetworkRetries != 0):
		return nil, errors.New("stripeadapter: gateway config: Client is set, so Key, BaseURL, HTTPClient and NetworkRetries must be empty")
	case cfg.Client == nil && cfg.Key == "":
		return nil, errors.New("stripeadapter: gateway config: Key is empty and no Client is set")
	case cfg.Client == nil && !validKey(cfg.Key):
		return nil, errors.New("stripeadapter: gateway config: Key is not a Stripe secret (sk_...) or restricted (rk_...) key")
	case cfg.NetworkRetries < 0:
		return nil, fmt.Errorf("stripeadapter: gateway config: NetworkRetries %d is negative", cfg.NetworkRetries)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("stripeadapter: gateway config: Timeout %v is negative", cfg.Timeout)
	case cfg.CreatedSkew < 0:
		return nil, fmt.Errorf("stripeadapter: gateway config: CreatedSkew %v is negative", cfg.CreatedSkew)
	case cfg.MaxListPages < 0:
		return nil, fmt.Errorf("stripeadapter: gateway config: MaxListPages %d is negative", cfg.MaxListPages)
	case cfg.StripeAccount != "" && !strings.HasPrefix(cfg.StripeAccount, "acct_"):
		return nil, fmt.Errorf("stripeadapter: gateway config: StripeAccount %q is not an account id (acct_...)", cfg.StripeAccount)
	}
	g := &Gateway{sc: cfg.Client, key: cfg.Key, timeout: cfg.Timeout, account: cfg.StripeAccount, skew: cfg.CreatedSkew, maxPages: cfg.MaxListPages}
	if g.timeout == 0 {
		g.timeout = DefaultTimeout
	}
	if g.skew == 0 {
		g.skew = DefaultCreatedSkew
	}
	if g.sc == nil {
		bc := &stripe.BackendConfig{
			HTTPClient:        cfg.HTTPClient,
			MaxNetworkRetries: stripe.Int64(int64(cfg.NetworkRetries)),
			// We report every failure ourselves, redacted; stripe-go's logger would print
			// response bodies to stderr.
			LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
		}
		if cfg.BaseURL != "" {
			bc.URL = stripe.String(strings.TrimRight(cfg.BaseURL, "/"))
		}
		g.sc = stripe.NewClient(cfg.Key, stripe.WithBackends(stripe.NewBackendsWithConfig(bc)))
	}
	return g, nil
}

// Fetch retrieves one PaymentIntent. An id that cannot be a PaymentIntent's is a ReviewError of
// kind invalid_external_id, found without calling Stripe.
func (g *Gateway) Fetch(ctx context.Context, externalID string) (*stripe.PaymentIntent, error) {
	if !ValidPaymentIntentID(externalID) {
		return nil, &reconcile.ReviewError{Kind: reconcile.KindInvalidExternalID, Detail: invalidIDDetail(externalID)}
	}
	callCtx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	params := &stripe.PaymentIntentRetrieveParams{}
	if g.account != "" {
		params.SetStripeAccount(g.account)
	}
	pi, err := g.sc.V1PaymentIntents.Retrieve(callCtx, externalID, params)
	if err != nil { // stripe-go returns an empty object with the error: never look at it
		return nil, g.mapError(ctx, "retrieve "+externalID, err)
	}
	return pi, nil
}

// ValidPaymentIntentID reports whether id has the shape of a PaymentIntent id: "pi_" and
// letters and digits. Anything else would be a wasted call, or a request to another path.
func ValidPaymentIntentID(id string) bool {
	rest, ok := strings.CutPrefix(id, "pi_")
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

// invalidIDDetail explains a rejected id without storing an arbitrary amount of it.
func invalidIDDetail(id string) string {
	if id == "" {
		return "the row has no PaymentIntent id"
	}
	if len(id) > 64 {
		id = id[:64] + "..."
	}
	return fmt.Sprintf("%q is not a PaymentIntent id (pi_ followed by letters and digits)", id)
}

// mapError turns a stripe-go error into the reconcile error that decides the row's fate.
func (g *Gateway) mapError(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		// Our caller gave up; that says nothing about Stripe.
		return fmt.Errorf("stripeadapter: %s: %w", op, context.Cause(ctx))
	}
	var se *stripe.Error
	if !errors.As(err, &se) {
		// No Stripe error body: connection refused, our per-call timeout, a body that is not
		// JSON (a proxy's error page).
		return fmt.Errorf("stripeadapter: %s: %w: %s", op, reconcile.ErrUnavailable, g.redact(err.Error()))
	}
	status, msg := se.HTTPStatusCode, g.redact(se.Msg)
	desc := fmt.Sprintf("stripe answered %d", status)
	if se.Code != "" {
		desc += " " + string(se.Code)
	}
	if msg != "" {
		desc += ": " + msg
	}
	if se.RequestID != "" {
		desc += " (request " + se.RequestID + ")"
	}
	switch {
	case status == http.StatusNotFound && se.Code == stripe.ErrorCodeResourceMissing:
		return fmt.Errorf("stripeadapter: %s: %s: %w", op, desc, reconcile.ErrNotFound)
	case status == http.StatusTooManyRequests && se.Code != stripe.ErrorCodeLockTimeout:
		// lock_timeout is contention on one object, not our pace: a plain retry later.
		rl := &reconcile.RateLimitError{}
		if se.LastResponse != nil {
			rl.RetryAfter = retryAfter(se.LastResponse.Header.Get("Retry-After"), time.Now())
			rl.Reason = se.LastResponse.Header.Get("Stripe-Rate-Limited-Reason")
		}
		return fmt.Errorf("stripeadapter: %s: %s: %w", op, desc, rl)
	case status == http.StatusUnauthorized:
		return fmt.Errorf("stripeadapter: %s: the API key was rejected: it is wrong, expired or revoked (%s): %w", op, desc, reconcile.ErrAbortBatch)
	case status == http.StatusForbidden:
		return fmt.Errorf("stripeadapter: %s: the API key lacks permission to read PaymentIntents (%s): %w", op, desc, reconcile.ErrAbortBatch)
	case status == http.StatusBadRequest:
		return &reconcile.ReviewError{Kind: reconcile.KindRejected, Detail: desc}
	default: // 409, lock_timeout, 5xx, an unexpected 404
		return fmt.Errorf("stripeadapter: %s: %s: %w", op, desc, reconcile.ErrUnavailable)
	}
}

// retryAfter parses a Retry-After header: seconds, or an HTTP date. Zero if absent or invalid.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
		return max(0, time.Duration(s)*time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now))
	}
	return 0
}

// keyPattern matches Stripe API keys, whole or masked ("sk_test_****abcd"), wherever they occur
// in text that might be logged.
var keyPattern = regexp.MustCompile(`\b(sk|rk|pk)_(test|live)_[A-Za-z0-9*]*`)

// redact removes API keys from s.
func (g *Gateway) redact(s string) string {
	if g.key != "" {
		s = strings.ReplaceAll(s, g.key, "[redacted key]")
	}
	return keyPattern.ReplaceAllString(s, "[redacted key]")
}

// validKey reports whether key looks like a secret or restricted key.
func validKey(key string) bool {
	return strings.HasPrefix(key, "sk_") || strings.HasPrefix(key, "rk_")
}
