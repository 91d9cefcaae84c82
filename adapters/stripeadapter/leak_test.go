package stripeadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/internal/keyecho"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/reconciletest"
)

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
				srv := httptest.NewServer(keyecho.Handler(f.status, f.code, f.html))
				defer srv.Close()
				cfg := stripeadapter.GatewayConfig{Key: keyecho.Key, BaseURL: srv.URL, Timeout: 2 * time.Second}
				g, err := stripeadapter.NewObjectGateway(cfg, stripeadapter.PaymentIntents())
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
					Job: "sweep", Source: store, Sink: sink, Gateway: gw, Classifier: stripepolicy.PaymentIntentPolicy(),
					ExternalState: stripepolicy.PaymentIntentState, BatchSize: 100, Concurrency: 2,
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
				keyecho.AssertNone(t, "an error or report", errs...)
				keyecho.AssertNone(t, "the log", logged.String())
				keyecho.AssertNone(t, "an observer argument", obs.args...)
				keyecho.AssertNone(t, "a recorded failure", sink.causes...)
				keyecho.AssertNone(t, "a finding", fmt.Sprintf("%+v", reconciletest.Findings(t, store, "")))
				keyecho.AssertNone(t, "a command", fmt.Sprintf("%+v", store.Commands()))
				keyecho.AssertNone(t, "the cursor", fmt.Sprintf("%+v", store.Cursor("sweep")))

				// The gateway's own calls, and the lanes' feeds.
				_, ferr := g.Fetch(context.Background(), "pi_123")
				_, berr := g.FetchBatch(context.Background(), []reconcile.Lookup{{ExternalID: "pi_1", CreatedAt: t0}, {ExternalID: "pi_2", CreatedAt: t0}},
					func(context.Context) error { return nil })
				events, err := g.EventsFeed(stripeadapter.EventsOptions{Logger: logger})
				if err != nil {
					t.Fatal(err)
				}
				reverse, err := g.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.PaymentIntent]{Logger: logger})
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
					keyecho.AssertNone(t, "a gateway or feed error", fmt.Sprintf("%v %+v %#v", err, err, err))
				}
				keyecho.AssertNone(t, "the log", logged.String())
			})
		}
	}
}

func TestTheGatewayConfigPrintsAndMarshalsWithoutItsKey(t *testing.T) {
	hc := &http.Client{Timeout: time.Second}
	for _, cfg := range []stripeadapter.GatewayConfig{
		{Key: keyecho.Key, BaseURL: "http://127.0.0.1:1", Timeout: time.Second, StripeAccount: "acct_1"},
		{Key: keyecho.Key, HTTPClient: hc},
		{Client: stripe.NewClient(keyecho.Key, stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{MaxNetworkRetries: stripe.Int64(0)})))},
	} {
		keyecho.AssertNone(t, "the printed config", fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg), fmt.Sprintf("%v %+v %#v", &cfg, &cfg, &cfg))
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("json.Marshal(config): %v", err)
		}
		keyecho.AssertNone(t, "the config as JSON", string(b))
		b, err = json.Marshal(&cfg)
		if err != nil {
			t.Fatalf("json.Marshal(&config): %v", err)
		}
		keyecho.AssertNone(t, "the config as JSON", string(b))
		var logged bytes.Buffer
		slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "cfg", cfg)
		slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "cfg", cfg)
		keyecho.AssertNone(t, "the logged config", logged.String())
	}
}

func TestAStatusEchoingAKeyIsStoredRedacted(t *testing.T) {
	pi := &stripe.PaymentIntent{ID: "pi_1", Status: stripe.PaymentIntentStatus("echo " + keyecho.Key + " " + keyecho.OtherKey)}
	keyecho.AssertNone(t, "the external state", stripepolicy.PaymentIntentState(pi))
	d := stripepolicy.PaymentIntentPolicy().Classify(stripepolicy.LocalPending, pi)
	keyecho.AssertNone(t, "the decision", fmt.Sprintf("%+v", d))
}
