package stripeadapter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// Client is the kit's connection to Stripe: a stripe-go client with the package's defaults
// (its retries off, its logging silenced, each answer's HTTP status noted), the account its
// calls act on, and the error mapping of the package doc. Every gateway and feed of the kit
// calls through one, and so does an extension of the kit (package stripemoney reads a
// payment's disputes and refunds, and the events that touch it, through its gateway's). It is
// safe for concurrent use. Gateways for several accounts share one stripe-go client, each with
// a Client of its own.
type Client struct {
	sc      *stripe.Client
	key     string // for redaction only
	timeout time.Duration
	account string // sent as Stripe-Account; "" is the platform
	now     func() time.Time
}

// Account is the connected account the client's calls act on, "" for the platform.
func (c *Client) Account() string { return c.account }

// Now is the clock by which the kit dates Stripe's answers (reconcile.Answer.At) and ages what
// it keeps: time.Now. An extension that tells its own calls' answers from kept ones reads it,
// so that both are measured on one clock.
func (c *Client) Now() time.Time { return c.now() }

// Redact removes API keys from s: the client's own key, and anything that looks like a secret
// or restricted key. Text from Stripe's side is stored and shown, and a proxy may echo the
// request's Authorization header into any of it.
func (c *Client) Redact(s string) string { return c.redact(s) }

// newClient checks cfg's client settings and builds the client: stripe-go's retries off, its
// logger silenced, and the transport noting each answer's status (see statusRecorder).
func newClient(cfg GatewayConfig) (*Client, error) {
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
	c := &Client{sc: cfg.Client, key: cfg.Key, timeout: cmp.Or(cfg.Timeout, DefaultTimeout), account: cfg.StripeAccount, now: time.Now}
	if c.sc == nil {
		hc := &http.Client{}
		if cfg.HTTPClient != nil {
			*hc = *cfg.HTTPClient
		}
		hc.Transport = &statusRecorder{base: cmp.Or[http.RoundTripper](hc.Transport, http.DefaultTransport)}
		hc.CheckRedirect = refuseRedirect
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

// errRedirect is the error of a call answered with a redirect.
var errRedirect = errors.New("stripeadapter: a redirect, not followed: the API key goes to no other url")

// refuseRedirect is the CheckRedirect of the clients newClient builds. net/http would send the
// Authorization header on to a redirect's target of the same host name whatever its port or
// scheme, and to its subdomains; Stripe answers its API and its files without redirects.
func refuseRedirect(*http.Request, []*http.Request) error { return errRedirect }

// forAccount is c acting on the account acct, over the same stripe-go client.
func (c *Client) forAccount(acct string) *Client {
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

// begin readies the request settings p of one call of the client's: a context of ctx that
// notes the call's answer (withAnswer) and ends at the client's timeout, and the client's
// account. The caller calls cancel once the call is done.
func (c *Client) begin(ctx context.Context, p *stripe.Params) (*answer, context.CancelFunc) {
	callCtx, a := withAnswer(ctx)
	callCtx, cancel := context.WithTimeout(callCtx, c.timeout)
	p.Context = callCtx
	if c.account != "" {
		p.SetStripeAccount(c.account)
	}
	return a, cancel
}
