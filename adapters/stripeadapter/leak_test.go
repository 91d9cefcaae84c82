package stripeadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/reconciletest"
)

const (
	echoedKey = "sk_test_51EchoSECRETechoSECRET0123456789"
	// otherKey is another key-like string a broken server might send: it must not pass either.
	otherKey = "rk_live_51OtherSECRETotherSECRET987654"
)

// secrets are the parts of the keys that must never be seen, however they were cut.
var secrets = []string{"EchoSECRET", "OtherSECRET"}

// echoing answers every request with status, echoing the request's Authorization header, the
// bare key and another key into every field of a Stripe error and into every header. code is
// the error code when it decides the answer's meaning (resource_missing, lock_timeout); empty
// means the code echoes too. html sends a proxy's page instead of JSON.
func echoing(status int, code string, html bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		echo := fmt.Sprintf("echo %s | %s | %s | sk_test_****%s", auth, strings.TrimPrefix(auth, "Bearer "), otherKey, echoedKey[len(echoedKey)-4:])
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

// failSink is a memstore Sink that also records failed batches, as pgstore does for health.
type failSink struct {
	*memstore.Store[int64, string]
	mu     sync.Mutex
	causes []string
}

func (s *failSink) RecordFailure(_ context.Context, job string, cause error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.causes = append(s.causes, fmt.Sprintf("%s %v %+v %#v", job, cause, cause, cause))
	return nil
}

// argsObserver records every argument it is given, printed every way.
type argsObserver struct {
	mu   sync.Mutex
	args []string
}

func (o *argsObserver) GatewayCalls(job string, calls int, d time.Duration, class string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.args = append(o.args, fmt.Sprintf("%s %d %v %s", job, calls, d, class))
}

func (o *argsObserver) BatchDone(job string, rep reconcile.Report, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.args = append(o.args, fmt.Sprintf("%s %v %+v %#v %v %+v %#v", job, rep, rep, rep, err, err, err))
}

func assertNoKey(t *testing.T, what string, texts ...string) {
	t.Helper()
	for _, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows a key: %s", what, text)
			}
		}
	}
}

func TestTheKeyAppearsNowhereWhateverTheServerEchoes(t *testing.T) {
	faults := []struct {
		name   string
		status int
		code   string
		html   bool
	}{
		{"400", http.StatusBadRequest, "", false},
		{"401", http.StatusUnauthorized, "", false},
		{"403", http.StatusForbidden, "", false},
		{"404 resource_missing", http.StatusNotFound, "resource_missing", false},
		{"404 other", http.StatusNotFound, "", false},
		{"409", http.StatusConflict, "", false},
		{"409 lock_timeout", http.StatusConflict, "lock_timeout", false},
		{"429 lock_timeout", http.StatusTooManyRequests, "lock_timeout", false},
		{"429 rate limit with Retry-After and a reason", http.StatusTooManyRequests, "", false},
		{"429 page of a proxy", http.StatusTooManyRequests, "", true},
		{"500", http.StatusInternalServerError, "", false},
		{"502 page of a proxy", http.StatusBadGateway, "", true},
		{"503", http.StatusServiceUnavailable, "", false},
	}
	for _, f := range faults {
		for _, bulk := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, bulk %t", f.name, bulk), func(t *testing.T) {
				srv := httptest.NewServer(echoing(f.status, f.code, f.html))
				defer srv.Close()
				cfg := stripeadapter.GatewayConfig{Key: echoedKey, BaseURL: srv.URL, Timeout: 2 * time.Second}
				g, err := stripeadapter.NewGateway(cfg)
				if err != nil {
					t.Fatal(err)
				}
				var gw reconcile.Gateway[*stripe.PaymentIntent] = g
				if !bulk {
					gw = reconcile.PerObject(gw)
				}
				var logged bytes.Buffer
				logger := slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
				store := pendingRows(5)
				sink := &failSink{Store: store}
				obs := &argsObserver{}
				rcfg := reconcile.Config[string, *stripe.PaymentIntent]{
					Job: "sweep", Source: store, Sink: sink, Gateway: gw, Classifier: stripeadapter.PaymentIntentClassifier(),
					ExternalState: stripeadapter.PaymentIntentState, BatchSize: 100, Concurrency: 2,
					Logger: logger, Observer: obs,
				}
				var errs []string
				for range 2 { // a second batch after a rate limit or an abort
					rep, err := reconcile.RunBatch(context.Background(), rcfg)
					errs = append(errs, fmt.Sprintf("%v %+v %#v %v %+v", err, err, err, rep, rep))
				}
				for i := 1; i <= 5; i++ {
					if o, ok := store.Observation("sweep", fmt.Sprint(i)); ok {
						errs = append(errs, fmt.Sprintf("%+v", o))
					}
				}
				assertNoKey(t, "an error or report", errs...)
				assertNoKey(t, "the log", logged.String())
				assertNoKey(t, "an observer argument", obs.args...)
				assertNoKey(t, "a recorded failure", sink.causes...)
				assertNoKey(t, "a finding", fmt.Sprintf("%+v", reconciletest.Findings(t, store, "")))
				assertNoKey(t, "a command", fmt.Sprintf("%+v", store.Commands()))
				assertNoKey(t, "the cursor", fmt.Sprintf("%+v", store.Cursor("sweep")))

				// The gateway's own calls, and the lanes' feeds.
				_, ferr := g.Fetch(context.Background(), "pi_123")
				_, berr := g.FetchBatch(context.Background(), []reconcile.Lookup{{ExternalID: "pi_1", CreatedAt: t0}, {ExternalID: "pi_2", CreatedAt: t0}},
					func(context.Context) error { return nil })
				events, err := g.EventsFeed(stripeadapter.EventsOptions{Logger: logger})
				if err != nil {
					t.Fatal(err)
				}
				reverse, err := g.ReverseFeed(stripeadapter.ReverseOptions{Logger: logger})
				if err != nil {
					t.Fatal(err)
				}
				wait := func(context.Context) error { return nil }
				_, e1 := events.Next(context.Background(), "", wait)
				_, e2 := events.Next(context.Background(), fmt.Sprintf(`{"after":"evt_1","until":%d}`, time.Now().Add(-time.Hour).Unix()), wait)
				_, e3 := events.Next(context.Background(), fmt.Sprintf(`{"until":%d}`, time.Now().Add(-time.Hour).Unix()), wait)
				_, e4 := reverse.Next(context.Background(), "", wait)
				for _, err := range []error{ferr, berr, e1, e2, e3, e4} {
					if err == nil {
						t.Fatal("a fault answer gave no error")
					}
					assertNoKey(t, "a gateway or feed error", fmt.Sprintf("%v %+v %#v", err, err, err))
				}
				assertNoKey(t, "the log", logged.String())
			})
		}
	}
}

func TestTheGatewayConfigPrintsAndMarshalsWithoutItsKey(t *testing.T) {
	hc := &http.Client{Timeout: time.Second}
	for _, cfg := range []stripeadapter.GatewayConfig{
		{Key: echoedKey, BaseURL: "http://127.0.0.1:1", Timeout: time.Second, StripeAccount: "acct_1"},
		{Key: echoedKey, HTTPClient: hc},
		{Client: stripe.NewClient(echoedKey, stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{MaxNetworkRetries: stripe.Int64(0)})))},
	} {
		assertNoKey(t, "the printed config", fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg), fmt.Sprintf("%v %+v %#v", &cfg, &cfg, &cfg))
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("json.Marshal(config): %v", err)
		}
		assertNoKey(t, "the config as JSON", string(b))
		b, err = json.Marshal(&cfg)
		if err != nil {
			t.Fatalf("json.Marshal(&config): %v", err)
		}
		assertNoKey(t, "the config as JSON", string(b))
		var logged bytes.Buffer
		slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "cfg", cfg)
		slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "cfg", cfg)
		assertNoKey(t, "the logged config", logged.String())
	}
}

func TestAStatusEchoingAKeyIsStoredRedacted(t *testing.T) {
	pi := &stripe.PaymentIntent{ID: "pi_1", Status: stripe.PaymentIntentStatus("echo " + echoedKey + " " + otherKey)}
	assertNoKey(t, "the external state", stripeadapter.PaymentIntentState(pi))
	d := stripeadapter.PaymentIntentClassifier().Classify(stripeadapter.LocalPending, pi)
	assertNoKey(t, "the decision", fmt.Sprintf("%+v", d))
}
