package stripetest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// rawGet sends a GET without stripe-go, for answers stripe-go cannot produce or hides.
func rawGet(t testing.TB, srv *Server, path, key string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

func TestAuthentication(t *testing.T) {
	f := newFixture(t)
	id := f.srv.AddPaymentIntent(PaymentIntent{})
	const wrong = "sk_test_51SecretWrongKeyabcd"

	t.Run("a wrong key is a 401 that masks the key", func(t *testing.T) {
		bad, _ := newClient(f.srv, wrong, nil)
		_, err := bad.V1PaymentIntents.Retrieve(context.Background(), id, nil)
		se := stripeError(t, err, http.StatusUnauthorized)
		if se.Type != stripe.ErrorTypeInvalidRequest || !strings.HasPrefix(se.Msg, "Invalid API Key provided: sk_test_****") ||
			!strings.HasSuffix(se.Msg, "abcd") || strings.Contains(se.Msg, wrong) || strings.Contains(se.Msg, "Secret") {
			t.Errorf("got %+v", se)
		}
	})
	t.Run("a missing key is a 401", func(t *testing.T) {
		res, body := rawGet(t, f.srv, "/v1/payment_intents", "")
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "did not provide an API key") {
			t.Errorf("got %d %s", res.StatusCode, body)
		}
	})
	t.Run("the key is also accepted as the basic-auth user", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL()+"/v1/payment_intents/"+id, nil)
		req.SetBasicAuth(f.srv.Key(), "")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("status %d", res.StatusCode)
		}
	})
	t.Run("Options.Key replaces the default key", func(t *testing.T) {
		srv := NewServer(Options{Key: "sk_test_custom"})
		defer srv.Close()
		if srv.Key() != "sk_test_custom" {
			t.Fatalf("Key = %q", srv.Key())
		}
		if res, _ := rawGet(t, srv, "/v1/events", DefaultKey); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("default key accepted: %d", res.StatusCode)
		}
		if res, _ := rawGet(t, srv, "/v1/events", "sk_test_custom"); res.StatusCode != http.StatusOK {
			t.Errorf("custom key refused: %d", res.StatusCode)
		}
	})
}

func TestMaskKey(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"sk_test_abcdefghijkl", "sk_test_********ijkl"},
		{"rk_live_0123456789", "rk_live_******6789"},
		{"sk_test_abc", "sk_test_***"},
		{"nonsense-key-1234", "*************1234"},
		{"short", "*****"},
	} {
		t.Run(tc.key+" is shown as "+tc.want, func(t *testing.T) {
			if got := maskKey(tc.key); got != tc.want {
				t.Errorf("got %q", got)
			}
		})
	}
}

func TestResponses(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, path string
		status     int
		wantBody   string
	}{
		{"an unknown path is a Stripe-shaped 404", "/v1/customers", 404, `"message":"Unrecognized request URL (GET: /v1/customers)."`},
		{"a path below an object is unknown", "/v1/payment_intents/pi_1/charges", 404, "Unrecognized request URL"},
		{"a list is a Stripe list object", "/v1/payment_intents", 200, `{"object":"list","data":[],"has_more":false,"url":"/v1/payment_intents"}`},
		{"an unknown retrieve parameter is refused", "/v1/events/evt_1?foo=1", 400, "Received unknown parameter: foo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := rawGet(t, f.srv, tc.path, f.srv.Key())
			if res.StatusCode != tc.status || !strings.Contains(body, tc.wantBody) {
				t.Errorf("got %d %s", res.StatusCode, body)
			}
			if res.Header.Get("Content-Type") != "application/json" || !strings.HasPrefix(res.Header.Get("Request-Id"), "req_") {
				t.Errorf("headers %v", res.Header)
			}
			if tc.status != 200 {
				var e struct{ Error map[string]any }
				if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error["type"] != "invalid_request_error" {
					t.Errorf("error body %s: %v", body, err)
				}
			}
		})
	}
	t.Run("a POST is not served", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL()+"/v1/payment_intents", nil)
		req.Header.Set("Authorization", "Bearer "+f.srv.Key())
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 404 {
			t.Errorf("status %d", res.StatusCode)
		}
	})
}

func TestRequestLog(t *testing.T) {
	f := newFixture(t)
	id := f.srv.AddPaymentIntent(PaymentIntent{Account: "acct_1"})
	before := time.Now()
	p := &stripe.PaymentIntentRetrieveParams{Params: stripe.Params{StripeAccount: stripe.String("acct_1")}}
	if _, err := f.sc.V1PaymentIntents.Retrieve(context.Background(), id, p); err != nil {
		t.Fatal(err)
	}
	_ = f.listIntentIDs(t, &stripe.PaymentIntentListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(5)}})
	_, _ = rawGet(t, f.srv, "/v1/nothing", f.srv.Key())
	bad, _ := newClient(f.srv, "sk_test_nope", nil)
	_, _ = bad.V1Events.Retrieve(context.Background(), "evt_1", nil)

	t.Run("Requests counts each route, unknown and refused requests included", func(t *testing.T) {
		for route, want := range map[Route]int{RetrievePaymentIntent: 1, ListPaymentIntents: 1, ListEvents: 0, RetrieveEvent: 1, "": 1} {
			if got := f.srv.Requests(route); got != want {
				t.Errorf("Requests(%q) = %d, want %d", route, got, want)
			}
		}
	})
	t.Run("Log holds every request in arrival order with its answer", func(t *testing.T) {
		log := f.srv.Log()
		if len(log) != 4 {
			t.Fatalf("log has %d requests", len(log))
		}
		r := log[0]
		if r.Route != RetrievePaymentIntent || r.Method != "GET" || r.Path != "/v1/payment_intents/"+id ||
			r.Status != 200 || r.StripeAccount != "acct_1" || r.Time.Before(before) || r.Time.After(time.Now()) {
			t.Errorf("first %+v", r)
		}
		if l := log[1]; l.Route != ListPaymentIntents || l.Query.Get("limit") != "5" {
			t.Errorf("second %+v", l)
		}
		if log[2].Status != 404 || log[2].Route != "" || log[3].Status != 401 {
			t.Errorf("statuses %d %d", log[2].Status, log[3].Status)
		}
		log[1].Query.Set("limit", "99")
		if f.srv.Log()[1].Query.Get("limit") != "5" {
			t.Error("Log shares its query values")
		}
	})
	t.Run("ResetLog forgets requests and counts", func(t *testing.T) {
		f.srv.ResetLog()
		if len(f.srv.Log()) != 0 || f.srv.Requests(RetrievePaymentIntent) != 0 {
			t.Error("not reset")
		}
	})
}

func TestCloseEndsHangingRequests(t *testing.T) {
	srv := NewServer(Options{})
	srv.Inject(ListEvents, Fault{Hang: true})
	srv.Inject(RetrievePaymentIntent, Fault{Latency: time.Hour})
	sc, _ := newClient(srv, srv.Key(), nil)

	errs := make(chan error, 2)
	go func() {
		_, err := sc.V1PaymentIntents.Retrieve(context.Background(), "pi_1", nil)
		errs <- err
	}()
	go func() {
		var err error
		for _, e := range sc.V1Events.List(context.Background(), nil) {
			err = e
		}
		errs <- err
	}()
	for srv.Requests(ListEvents)+srv.Requests(RetrievePaymentIntent) < 2 {
		time.Sleep(time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs while requests hang")
	}
	for range 2 {
		if err := <-errs; err == nil {
			t.Error("a hanging request got an answer")
		}
	}
	srv.Close() // a second Close is harmless
}

func TestConcurrentUse(t *testing.T) {
	f := newFixture(t)
	ids := addAt(f.srv, "pi_", 1, 2, 3, 4, 5)
	f.srv.Inject(RetrievePaymentIntent, Fault{Status: 500, Times: 5})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			ctx := context.Background()
			for i := range 20 {
				switch i % 5 {
				case 0:
					f.srv.AddPaymentIntent(PaymentIntent{Created: t0.Add(time.Duration(-i) * time.Second)})
				case 1:
					_ = f.srv.SetStatus(ids[g%len(ids)], stripe.PaymentIntentStatusProcessing)
				case 2:
					_, _ = f.sc.V1PaymentIntents.Retrieve(ctx, ids[i%len(ids)], nil)
				case 3:
					for _, err := range f.sc.V1PaymentIntents.List(ctx, &stripe.PaymentIntentListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(10)}}) {
						if err != nil {
							t.Error(err)
							break
						}
					}
				case 4:
					for _, err := range f.sc.V1Events.List(ctx, &stripe.EventListParams{Type: stripe.String("payment_intent.*")}) {
						if err != nil {
							t.Error(err)
							break
						}
					}
					_ = f.srv.Log()
					_ = f.srv.Requests(ListEvents)
					f.srv.SetLatency(0)
				}
			}
		})
	}
	wg.Wait()
	if got := len(f.listIntentIDs(t, nil)); got != 5+8*4 {
		t.Errorf("%d intents listed, want %d", got, 5+8*4)
	}
}

func TestConcurrentMoney(t *testing.T) {
	f := newFixture(t)
	ids := make([]string, 4)
	for i := range ids {
		ids[i] = f.charged(t, "", 1_000_000, "usd")
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			ctx := context.Background()
			id := ids[g%len(ids)]
			for i := range 20 {
				switch i % 4 {
				case 0:
					rid, err := f.srv.Refund(id, 1)
					if err != nil {
						t.Error(err)
						continue
					}
					_ = f.srv.SetRefundStatus(rid, stripe.RefundStatusFailed, "")
				case 1:
					did, err := f.srv.Dispute(id, 1, stripe.DisputeStatusNeedsResponse, t0)
					if err != nil {
						t.Error(err)
						continue
					}
					_ = f.srv.SetDisputeStatus(did, stripe.DisputeStatusLost)
				case 2:
					p := &stripe.PaymentIntentListParams{}
					p.AddExpand("data.latest_charge.refunds.data")
					for _, err := range f.sc.V1PaymentIntents.List(ctx, p) {
						if err != nil {
							t.Error(err)
							break
						}
					}
				case 3:
					for _, err := range f.sc.V1Refunds.List(ctx, &stripe.RefundListParams{PaymentIntent: stripe.String(id)}) {
						if err != nil {
							t.Error(err)
							break
						}
					}
					for _, err := range f.sc.V1Events.List(ctx, &stripe.EventListParams{Type: stripe.String("charge.*")}) {
						if err != nil {
							t.Error(err)
							break
						}
					}
				}
			}
		})
	}
	wg.Wait()
	var refunds, disputes int
	for range f.sc.V1Refunds.List(context.Background(), nil) {
		refunds++
	}
	for range f.sc.V1Disputes.List(context.Background(), nil) {
		disputes++
	}
	if refunds != 8*5 || disputes != 8*5 {
		t.Errorf("%d refunds and %d disputes, want 40 of each", refunds, disputes)
	}
}
