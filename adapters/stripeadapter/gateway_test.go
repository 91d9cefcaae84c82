package stripeadapter_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

const secretKey = "sk_test_51SECRETsecretSECRET0123456789"

// cannedStripe answers every request with one fixed response and counts requests.
type cannedStripe struct {
	status  int
	body    string
	header  map[string]string
	hang    bool
	calls   atomic.Int64
	account atomic.Value // last Stripe-Account header
	path    atomic.Value // last request path
}

func (c *cannedStripe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.calls.Add(1)
	c.account.Store(r.Header.Get("Stripe-Account"))
	c.path.Store(r.URL.Path)
	if c.hang {
		<-r.Context().Done()
		return
	}
	for k, v := range c.header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(c.status)
	_, _ = w.Write([]byte(c.body))
}

func stripeError(typ, code, msg string) string {
	b := `{"error":{"type":"` + typ + `","message":"` + msg + `"`
	if code != "" {
		b += `,"code":"` + code + `"`
	}
	return b + `}}`
}

func newGateway(t *testing.T, url string, mod func(*stripeadapter.GatewayConfig)) *stripeadapter.ObjectGateway[*stripe.PaymentIntent] {
	t.Helper()
	cfg := stripeadapter.GatewayConfig{Key: secretKey, BaseURL: url, Timeout: 2 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	g, err := stripeadapter.NewObjectGateway(cfg, stripeadapter.PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGatewayMapsEveryStripeAnswer(t *testing.T) {
	isRateLimit := func(retry time.Duration, reason string) func(*testing.T, error) {
		return func(t *testing.T, err error) {
			var rl *reconcile.RateLimitError
			if !errors.As(err, &rl) || !errors.Is(err, reconcile.ErrRateLimited) {
				t.Fatalf("err = %v, want a *reconcile.RateLimitError", err)
			}
			if rl.Reason != reason || rl.RetryAfter < retry-2*time.Second || rl.RetryAfter > retry {
				t.Fatalf("rate limit %+v, want RetryAfter about %v and reason %q", rl, retry, reason)
			}
		}
	}
	is := func(target error) func(*testing.T, error) {
		return func(t *testing.T, err error) {
			if !errors.Is(err, target) {
				t.Fatalf("err = %v, want %v", err, target)
			}
			if target != reconcile.ErrRateLimited && errors.Is(err, reconcile.ErrRateLimited) {
				t.Fatalf("err = %v is also a rate limit", err)
			}
		}
	}
	abortSaying := func(words string) func(*testing.T, error) {
		return func(t *testing.T, err error) {
			if !errors.Is(err, reconcile.ErrAbortBatch) || !strings.Contains(err.Error(), words) {
				t.Fatalf("err = %v, want ErrAbortBatch saying %q", err, words)
			}
		}
	}
	tests := []struct {
		name   string
		status int
		body   string
		header map[string]string
		check  func(*testing.T, error)
	}{
		{name: "404 resource_missing is not found", status: 404,
			body: stripeError("invalid_request_error", "resource_missing", "No such payment_intent: 'pi_1'"), check: is(reconcile.ErrNotFound)},
		{name: "404 without resource_missing (a wrong base URL) is unavailable, not absence", status: 404,
			body: stripeError("invalid_request_error", "", "Unrecognized request URL (GET: /x)."), check: is(reconcile.ErrUnavailable)},
		{name: "429 rate_limit is rate limited with Retry-After in seconds and the reason", status: 429,
			body:   stripeError("invalid_request_error", "rate_limit", "Too many requests"),
			header: map[string]string{"Retry-After": "7", "Stripe-Rate-Limited-Reason": "global-rate"}, check: isRateLimit(7*time.Second, "global-rate")},
		{name: "429 with a Retry-After date is rate limited until that date", status: 429,
			body:   stripeError("invalid_request_error", "rate_limit", "Too many requests"),
			header: map[string]string{"Retry-After": time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)}, check: isRateLimit(30*time.Second, "")},
		{name: "a 429's reason that is no word of Stripe's (a key percent-encoded) is left out", status: 429,
			body:   stripeError("invalid_request_error", "rate_limit", "Too many requests"),
			header: map[string]string{"Retry-After": "7", "Stripe-Rate-Limited-Reason": percentEncoded(secretKey)}, check: isRateLimit(7*time.Second, "")},
		{name: "a 429's reason of 10 KB is left out", status: 429,
			body:   stripeError("invalid_request_error", "rate_limit", "Too many requests"),
			header: map[string]string{"Stripe-Rate-Limited-Reason": strings.Repeat("a", 10<<10)}, check: isRateLimit(0, "")},
		{name: "a request id that is not Stripe's (a key percent-encoded) is left out", status: 400,
			body:   stripeError("invalid_request_error", "parameter_invalid_empty", "You passed an empty string for 'expand[]'"),
			header: map[string]string{"Request-Id": percentEncoded(secretKey)},
			check: func(t *testing.T, err error) {
				var re *reconcile.ReviewError
				if !errors.As(err, &re) || strings.Contains(re.Detail, "%") || strings.Contains(re.Detail, "(request") {
					t.Fatalf("err = %v, want a ReviewError without the request id", err)
				}
			}},
		{name: "Stripe's request id is kept", status: 500, body: stripeError("api_error", "", "Something went wrong"),
			header: map[string]string{"Request-Id": "req_8Tw3kB1xYz0aQp"},
			check: func(t *testing.T, err error) {
				if !errors.Is(err, reconcile.ErrUnavailable) || !strings.Contains(err.Error(), "(request req_8Tw3kB1xYz0aQp)") {
					t.Fatalf("err = %v, want ErrUnavailable naming the request", err)
				}
			}},
		{name: "429 with no code is rate limited", status: 429, body: stripeError("invalid_request_error", "", "slow down"), check: isRateLimit(0, "")},
		{name: "a 429 whose body is a proxy's HTML page is still rate limited", status: 429, body: "<html>Too Many Requests</html>",
			header: map[string]string{"Content-Type": "text/html", "Retry-After": "3"}, check: isRateLimit(3*time.Second, "")},
		{name: "an absurd Retry-After is capped at an hour", status: 429, body: stripeError("invalid_request_error", "rate_limit", "Too many requests"),
			header: map[string]string{"Retry-After": "99999999999999999"}, check: isRateLimit(time.Hour, "")},
		{name: "429 lock_timeout is unavailable, not a reason to slow down", status: 429,
			body: stripeError("invalid_request_error", "lock_timeout", "This object cannot be accessed right now"), check: is(reconcile.ErrUnavailable)},
		{name: "500 is unavailable", status: 500, body: stripeError("api_error", "", "Something went wrong"), check: is(reconcile.ErrUnavailable)},
		{name: "503 is unavailable", status: 503, body: stripeError("api_error", "", "Service unavailable"), check: is(reconcile.ErrUnavailable)},
		{name: "409 is unavailable", status: 409, body: stripeError("idempotency_error", "", "Keys for idempotent requests can only be used with the same parameters"), check: is(reconcile.ErrUnavailable)},
		{name: "a 502 HTML page from a proxy is unavailable", status: 502, body: "<html><body>Bad Gateway</body></html>",
			header: map[string]string{"Content-Type": "text/html"}, check: is(reconcile.ErrUnavailable)},
		{name: "a 200 that is not JSON is unavailable", status: 200, body: "not json", check: is(reconcile.ErrUnavailable)},
		{name: "401 aborts the batch saying the key is wrong", status: 401,
			body: stripeError("invalid_request_error", "", "Invalid API Key provided: sk_test_****6789"), check: abortSaying("key was rejected")},
		{name: "403 aborts the batch saying the key lacks permission", status: 403,
			body: stripeError("invalid_request_error", "", "The provided key '"+secretKey+"' does not have the required permissions"), check: abortSaying("lacks permission")},
		{name: "400 needs review with Stripe's message", status: 400,
			body: stripeError("invalid_request_error", "parameter_invalid_empty", "You passed an empty string for 'expand[]'"),
			check: func(t *testing.T, err error) {
				var re *reconcile.ReviewError
				if !errors.As(err, &re) || re.Kind != reconcile.KindRejected || !strings.Contains(re.Detail, "You passed an empty string") {
					t.Fatalf("err = %v, want a ReviewError of kind %s carrying Stripe's message", err, reconcile.KindRejected)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &cannedStripe{status: tt.status, body: tt.body, header: tt.header}
			srv := httptest.NewServer(c)
			defer srv.Close()
			pi, err := newGateway(t, srv.URL, nil).Fetch(context.Background(), "pi_123")
			if pi != nil {
				t.Errorf("Fetch returned object %+v with error %v; want nil", pi, err)
			}
			tt.check(t, err)
			if strings.Contains(err.Error(), secretKey) || strings.Contains(err.Error(), "sk_test_") {
				t.Fatalf("error %q shows the API key", err)
			}
			if n := c.calls.Load(); n != 1 {
				t.Fatalf("%d requests; want exactly 1 (stripe-go's own retries must be off)", n)
			}
		})
	}
}

func TestGatewayNetworkFailuresAreUnavailable(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		_, err := newGateway(t, url, nil).Fetch(context.Background(), "pi_123")
		if !errors.Is(err, reconcile.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	})
	t.Run("a call that outlasts the per-call timeout", func(t *testing.T) {
		srv := httptest.NewServer(&cannedStripe{hang: true})
		defer srv.Close()
		g := newGateway(t, srv.URL, func(c *stripeadapter.GatewayConfig) { c.Timeout = 50 * time.Millisecond })
		_, err := g.Fetch(context.Background(), "pi_123")
		if !errors.Is(err, reconcile.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	})
	t.Run("our own cancelled context is not the external system's failure", func(t *testing.T) {
		srv := httptest.NewServer(&cannedStripe{hang: true})
		defer srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := newGateway(t, srv.URL, nil).Fetch(ctx, "pi_123")
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, reconcile.ErrUnavailable) {
			t.Fatalf("err = %v, want the context's error and not ErrUnavailable", err)
		}
	})
}

func TestGatewayNeverSendsAnInvalidID(t *testing.T) {
	c := &cannedStripe{status: 200, body: `{"id":"pi_3MtwBwLkdIwHu7ix28a3tqPa","object":"payment_intent","status":"succeeded"}`}
	srv := httptest.NewServer(c)
	defer srv.Close()
	g := newGateway(t, srv.URL, nil)
	for _, id := range []string{"", "pi_", "ch_123", "PI_123", "pi_12/../../v1/customers", "pi_1 2", "pi_1?expand=x", "pi_é", "pi_" + strings.Repeat("a", 300)} {
		_, err := g.Fetch(context.Background(), id)
		var re *reconcile.ReviewError
		if !errors.As(err, &re) || re.Kind != reconcile.KindInvalidExternalID {
			t.Errorf("Fetch(%q) = %v, want a ReviewError of kind %s", id, err, reconcile.KindInvalidExternalID)
		}
	}
	if n := c.calls.Load(); n != 0 {
		t.Fatalf("%d requests reached Stripe for invalid ids", n)
	}
	pi, err := g.Fetch(context.Background(), "pi_3MtwBwLkdIwHu7ix28a3tqPa")
	if err != nil || pi.Status != stripe.PaymentIntentStatusSucceeded {
		t.Fatalf("a valid id: %+v, %v", pi, err)
	}
}

func TestGatewaySendsTheConnectedAccount(t *testing.T) {
	c := &cannedStripe{status: 200, body: `{"id":"pi_1","object":"payment_intent","status":"succeeded"}`}
	srv := httptest.NewServer(c)
	defer srv.Close()
	g := newGateway(t, srv.URL, func(c *stripeadapter.GatewayConfig) { c.StripeAccount = "acct_1Connected" })
	if _, err := g.Fetch(context.Background(), "pi_1"); err != nil {
		t.Fatal(err)
	}
	if got := c.account.Load(); got != "acct_1Connected" {
		t.Fatalf("Stripe-Account = %v, want acct_1Connected", got)
	}
	if got := c.path.Load(); got != "/v1/payment_intents/pi_1" {
		t.Fatalf("path = %v", got)
	}
}

func TestNewObjectGatewayRejectsBadConfig(t *testing.T) {
	client := stripe.NewClient(secretKey) // stripe-go's default: two retries
	tests := []struct {
		name string
		cfg  stripeadapter.GatewayConfig
	}{
		{"no key and no client", stripeadapter.GatewayConfig{}},
		{"a publishable key", stripeadapter.GatewayConfig{Key: "pk_test_123"}},
		{"a client and a key", stripeadapter.GatewayConfig{Client: client, Key: secretKey}},
		{"a client and a base URL", stripeadapter.GatewayConfig{Client: client, BaseURL: "http://127.0.0.1:1"}},
		{"a client that retries on its own", stripeadapter.GatewayConfig{Client: client}},
		{"a negative timeout", stripeadapter.GatewayConfig{Key: secretKey, Timeout: -time.Second}},
		{"a negative skew", stripeadapter.GatewayConfig{Key: secretKey, CreatedSkew: -time.Second}},
		{"a negative page cap", stripeadapter.GatewayConfig{Key: secretKey, MaxListPages: -1}},
		{"an account that is not an account id", stripeadapter.GatewayConfig{Key: secretKey, StripeAccount: "cus_123"}},
		{"the key given as the account", stripeadapter.GatewayConfig{Key: secretKey, StripeAccount: secretKey}},
		// ForAccount refuses these too: accepted here, each would be an outage on every call.
		{"an account id with a header after it", stripeadapter.GatewayConfig{Key: secretKey, StripeAccount: "acct_1\r\nX-Evil: 1"}},
		{"an account id with a space", stripeadapter.GatewayConfig{Key: secretKey, StripeAccount: "acct_1 "}},
		{"an account prefix alone", stripeadapter.GatewayConfig{Key: secretKey, StripeAccount: "acct_"}},
		{"a negative look-ahead size", stripeadapter.GatewayConfig{Key: secretKey, ListCacheSize: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is an error", func(t *testing.T) {
			_, err := stripeadapter.NewObjectGateway(tt.cfg, stripeadapter.PaymentIntents())
			if err == nil {
				t.Fatal("NewObjectGateway accepted it")
			}
			if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "pk_test_123") {
				t.Fatalf("error %q shows the key", err)
			}
		})
	}
	quiet := stripe.NewClient(secretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{MaxNetworkRetries: stripe.Int64(0)})))
	if _, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Client: quiet}, stripeadapter.PaymentIntents()); err != nil {
		t.Fatalf("a client without retries: %v", err)
	}
}

func TestPrintingTheGatewayOrItsConfigShowsNoKey(t *testing.T) {
	cfg := stripeadapter.GatewayConfig{Key: secretKey, BaseURL: "http://127.0.0.1:1"}
	g, err := stripeadapter.NewObjectGateway(cfg, stripeadapter.PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "cfg", cfg, "gateway", g)
	for _, out := range []string{fmt.Sprint(g), fmt.Sprintf("%+v", g), fmt.Sprintf("%#v", g), fmt.Sprintf("%v", *g),
		fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), logged.String()} {
		if strings.Contains(out, "SECRET") {
			t.Fatalf("%q shows the key", out)
		}
	}
}

func TestABadExpandPathIsAClearError(t *testing.T) {
	srv := stripetest.NewServer(stripetest.Options{})
	t.Cleanup(srv.Close)
	gw := objectGateway(t, srv, stripeadapter.PaymentIntents())
	_, err := gw.ListWithExpand(context.Background(), "data.latest_chargee")
	var re *reconcile.ReviewError
	if !errors.As(err, &re) || !strings.Contains(re.Detail, "cannot be expanded") || !strings.Contains(re.Detail, "data.latest_chargee") {
		t.Fatalf("list with a bad expand path: %v; want a ReviewError naming the path", err)
	}
}

// percentEncoded is s with every byte percent-encoded: a form of it no redaction can read.
func percentEncoded(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
