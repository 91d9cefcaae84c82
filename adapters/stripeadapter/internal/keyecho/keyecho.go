// Package keyecho is a server that echoes API keys into everything it answers, and the check
// that none reaches what the Stripe packages give back: their tests of key redaction share it.
package keyecho

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

const (
	// Key is the key the tests configure, which the server echoes.
	Key = "sk_test_51EchoSECRETechoSECRET0123456789"
	// OtherKey is another key-like string a broken server might send: it must not pass either.
	OtherKey = "rk_live_51OtherSECRETotherSECRET987654"
)

// secrets are the parts of the keys that must never be seen, however they were cut.
var secrets = []string{"EchoSECRET", "OtherSECRET"}

// Handler answers every request with status, echoing the request's Authorization header, the
// bare key and another key into every field of a Stripe error and into every header. code is
// the error code when it decides the answer's meaning (resource_missing, lock_timeout); empty
// means the code echoes too. html sends a proxy's page instead of JSON.
func Handler(status int, code string, html bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		echo := fmt.Sprintf("echo %s | %s | %s | sk_test_****%s", auth, strings.TrimPrefix(auth, "Bearer "), OtherKey, Key[len(Key)-4:])
		for _, h := range []string{"Request-Id", "Stripe-Rate-Limited-Reason", "Stripe-Version", "Stripe-Should-Retry",
			"Idempotency-Key", "Original-Request", "Stripe-Account", "Www-Authenticate", "Location", "X-Echo", "Server"} {
			w.Header().Set(h, echo)
		}
		w.Header().Set("Retry-After", echo)
		if status == http.StatusTooManyRequests && code == "" {
			w.Header().Set("Retry-After", "1")
		}
		if html {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(status)
			fmt.Fprintf(w, "<html><body>%s</body></html>", echo)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		c := code
		if c == "" {
			c = echo
		}
		e := map[string]any{"type": echo, "code": c, "message": echo, "param": echo, "doc_url": echo,
			"decline_code": echo, "charge": echo, "request_log_url": echo, "advice_code": echo, "network_decline_code": echo,
			"payment_intent": map[string]any{"id": echo, "status": echo}}
		_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
	})
}

// AssertNone fails t if any of texts shows a part of either key.
func AssertNone(t testing.TB, what string, texts ...string) {
	t.Helper()
	for _, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows a key: %s", what, text)
			}
		}
	}
}
