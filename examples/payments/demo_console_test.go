package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

func TestTheConsoleTokenIsTheConsolesAuthentication(t *testing.T) {
	t.Parallel()
	auth := tokenAuth("s3cret-token")
	tests := []struct {
		name      string
		set       func(r *http.Request)
		wantActor string // empty: refused
	}{
		{"no credentials", func(*http.Request) {}, ""},
		{"basic auth with the token", func(r *http.Request) { r.SetBasicAuth("alice", "s3cret-token") }, "alice"},
		{"basic auth with another token", func(r *http.Request) { r.SetBasicAuth("alice", "s3cret-tokeN") }, ""},
		{"basic auth with a prefix of the token", func(r *http.Request) { r.SetBasicAuth("alice", "s3cret") }, ""},
		{"basic auth without a user name", func(r *http.Request) { r.SetBasicAuth("", "s3cret-token") }, ""},
		{"basic auth with markup for a user name", func(r *http.Request) { r.SetBasicAuth("<b>eve</b>", "s3cret-token") }, ""},
		{"a bearer token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret-token") }, "operator"},
		{"a wrong bearer token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, ""},
		{"the token as a query parameter", func(r *http.Request) { r.URL.RawQuery = "token=s3cret-token" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			tt.set(r)
			actor, err := auth(r)
			if actor != tt.wantActor || (err == nil) != (tt.wantActor != "") {
				t.Fatalf("auth = %q, %v; want %q", actor, err, tt.wantActor)
			}
		})
	}
}

func TestTheConsoleShowsTheRunsFindingsToTokenHolders(t *testing.T) {
	t.Parallel()
	f := newFixture(t, stripepolicy.CommandApplyPaymentSucceeded, 3)
	h, err := newConsole(f.store, "s3cret-token", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	anonymous := httptest.NewRecorder()
	h.ServeHTTP(anonymous, httptest.NewRequest(http.MethodGet, "/findings", nil))
	if anonymous.Code != http.StatusUnauthorized || !strings.HasPrefix(anonymous.Header().Get("WWW-Authenticate"), "Basic ") {
		t.Fatalf("without the token: %d, WWW-Authenticate %q; want 401 asking for basic auth", anonymous.Code, anonymous.Header().Get("WWW-Authenticate"))
	}
	req := httptest.NewRequest(http.MethodGet, "/findings", nil)
	req.SetBasicAuth("alice", "s3cret-token")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body := rec.Body.String()
	if rec.Code != http.StatusOK {
		t.Fatalf("with the token: %d\n%s", rec.Code, body)
	}
	for _, p := range f.p.payments {
		if want := "https://dashboard.stripe.com/test/payments/" + p.externalID; !strings.Contains(body, want) {
			t.Errorf("the list lacks the link %s to payment %s's PaymentIntent", want, p.orderID)
		}
	}
	// Each says what its kind means: the policy's table (stripepolicy.Kinds) is the console's.
	if n := strings.Count(body, `<span title="Stripe took the payment; the row is still pending (repaired by ApplyPaymentSucceeded).">missed_success</span>`); n != 3 {
		t.Errorf("the list shows %d missed successes with their meaning, want 3", n)
	}
}

func TestTheConsoleFindsAPaymentsFindingsByItsOrderID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, stripepolicy.CommandApplyRefund, 3)
	h, err := newConsole(f.store, "s3cret-token", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	want := f.p.payments[1]
	req := httptest.NewRequest(http.MethodGet, "/findings?q="+want.orderID, nil)
	req.SetBasicAuth("alice", "s3cret-token")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body := rec.Body.String()
	if rec.Code != http.StatusOK {
		t.Fatalf("search by order id: %d\n%s", rec.Code, body)
	}
	for _, p := range f.p.payments {
		if got := strings.Contains(body, p.externalID); got != (p == want) {
			t.Errorf("searching %s, the list shows %s's PaymentIntent %s: %v, want %v", want.orderID, p.orderID, p.externalID, got, p == want)
		}
	}
	// The finding says what differs, in the payment's currency.
	refunded := reconcile.FormatAmount(want.refund(), "usd")
	if !strings.Contains(body, "amount_refunded") || !strings.Contains(body, refunded) {
		t.Errorf("the list lacks the refunded amount that differs (%s):\n%s", refunded, body)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutine and the test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeConsoleServesUntilCanceledThenShutsDown(t *testing.T) {
	t.Setenv("CONSOLE_TOKEN", "") // a token of its own, printed
	f := newFixture(t, stripepolicy.CommandApplyPaymentCanceled, 2)
	if err := serveConsole(t.Context(), io.Discard, "", nil); err != nil {
		t.Fatalf("no -console: %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		// A port alone: the console listens on the loopback interface only.
		done <- serveConsoleTo(ctx, &out, &errOut, ":0", newReviewer(f.pool, f.store, f.gateway))
	}()
	at := regexp.MustCompile(`Review console at (http://127\.0\.0\.1:\d+/)`)
	token := regexp.MustCompile(`this run's console token is ([0-9a-f]{32})\n`)
	var url, tok string
	for deadline := time.Now().Add(10 * time.Second); url == "" || tok == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the console did not say where it serves on 127.0.0.1, or its token on standard error:\n%s\nstandard error:\n%s", out.String(), errOut.String())
		}
		if m, n := at.FindStringSubmatch(out.String()), token.FindStringSubmatch(errOut.String()); m != nil && n != nil {
			url, tok = m[1], n[1]
		}
	}
	if strings.Contains(out.String(), tok) {
		t.Errorf("the generated token is on standard output:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "not verified") {
		t.Errorf("standard output does not say that the user name is not verified:\n%s", out.String())
	}
	if strings.Contains(errOut.String(), "warning") {
		t.Errorf("a warning for a loopback address:\n%s", errOut.String())
	}
	req, err := http.NewRequest(http.MethodGet, url+"findings", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Count(string(body), ">missed_cancel</span>") != 2 {
		t.Fatalf("GET /findings = %d:\n%s", resp.StatusCode, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serveConsole after cancel: %v", err)
		}
	case <-time.After(shutdownGrace + 5*time.Second):
		t.Fatal("serveConsole did not return after its context was canceled")
	}
	if !strings.Contains(out.String(), "Review console stopped.") {
		t.Errorf("no word of the stop:\n%s", out.String())
	}
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Error("the console still answers after the shutdown")
	}
}

func TestTheConsoleListensOnLoopbackUnlessAHostIsGiven(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr, want string
		warn       bool
	}{
		{":8080", "127.0.0.1:8080", false},
		{":0", "127.0.0.1:0", false},
		{"127.0.0.1:8080", "127.0.0.1:8080", false},
		{"[::1]:8080", "[::1]:8080", false},
		{"localhost:8080", "localhost:8080", false},
		{"0.0.0.0:8080", "0.0.0.0:8080", true},
		{"[::]:8080", "[::]:8080", true},
		{"192.0.2.10:8080", "192.0.2.10:8080", true},
		{"review.example.com:8080", "review.example.com:8080", true},
	}
	for _, tt := range tests {
		listen, warning, err := consoleListenAddr(tt.addr)
		if err != nil || listen != tt.want || (warning != "") != tt.warn {
			t.Errorf("consoleListenAddr(%q) = %q, %q, %v; want %q, a warning %v", tt.addr, listen, warning, err, tt.want, tt.warn)
		}
		if tt.warn && !strings.Contains(warning, "plain HTTP") {
			t.Errorf("consoleListenAddr(%q) warns %q, which does not say why", tt.addr, warning)
		}
	}
	for _, bad := range []string{"8080", "", "127.0.0.1"} {
		if listen, _, err := consoleListenAddr(bad); err == nil {
			t.Errorf("consoleListenAddr(%q) = %q, want an error", bad, listen)
		}
	}
}
