package console_test

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile/console"
)

// tokenAuth accepts one bearer token or one basic-auth password, and names what it was given
// when it refuses, as a careless host's authenticator could.
func tokenAuth(r *http.Request) (string, error) {
	if user, pass, ok := r.BasicAuth(); ok {
		if user == "alice" && pass == "right-password" {
			return "alice", nil
		}
		return "", fmt.Errorf("bad password %q for %q", pass, user)
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "", fmt.Errorf("no credentials")
	}
	if tok == "the-good-token" {
		return "alice", nil
	}
	return "", fmt.Errorf("unknown token %s", tok)
}

func TestFailedSignInsAreLoggedAtWarnWithoutTheToken(t *testing.T) {
	t.Parallel()
	const (
		token    = "presented-token-7f3a9c1e5b"
		password = "guessed-password-d41d8cd9"
		remote   = "203.0.113.7:4242"
	)
	for _, tt := range []struct {
		name, challenge string
		set             func(*http.Request)
		secrets         []string
		warn            bool
	}{
		{"a wrong bearer token", "", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }, []string{token}, true},
		{"a wrong basic-auth password", `Basic realm="review"`, func(r *http.Request) { r.SetBasicAuth("mallory", password) },
			[]string{password, base64.StdEncoding.EncodeToString([]byte("mallory:" + password))}, true},
		// A browser's first request under basic auth carries no credentials and is always
		// refused once: that is not a failed sign-in.
		{"no credentials under a challenge", `Basic realm="review"`, func(*http.Request) {}, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := newLevelRecorder()
			c, err := console.New(console.Config{Store: &countingStore{}, Authenticate: tokenAuth, Challenge: tt.challenge, Logger: slog.New(rec.h)})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodGet, "/findings", nil)
			req.RemoteAddr = remote
			tt.set(req)
			r := httptest.NewRecorder()
			c.ServeHTTP(r, req)
			if r.Code != http.StatusForbidden && r.Code != http.StatusUnauthorized {
				t.Fatalf("a refused sign-in = %d", r.Code)
			}
			logs := rec.buf.String()
			if got := strings.Contains(logs, "level=WARN"); got != tt.warn {
				t.Errorf("logged at Warn: %v, want %v:\n%s", got, tt.warn, logs)
			}
			if tt.warn && !strings.Contains(logs, "203.0.113.7") {
				t.Errorf("the failed sign-in is logged without the remote address:\n%s", logs)
			}
			if !tt.warn && !strings.Contains(logs, "level=DEBUG") {
				t.Errorf("the refusal is not logged at Debug:\n%s", logs)
			}
			for _, s := range tt.secrets {
				if strings.Contains(logs, s) {
					t.Errorf("the log holds the presented credential %q:\n%s", s, logs)
				}
			}
		})
	}
}
