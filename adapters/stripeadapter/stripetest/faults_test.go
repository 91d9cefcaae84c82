package stripetest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
)

func TestFaults(t *testing.T) {
	ctx := context.Background()
	retrieve := func(f *fixture, id string) error {
		_, err := f.sc.V1PaymentIntents.Retrieve(ctx, id, nil)
		return err
	}
	setup := func(t *testing.T) *fixture {
		f := newFixture(t)
		f.srv.AddPaymentIntent(PaymentIntent{ID: "pi_a"})
		f.srv.AddPaymentIntent(PaymentIntent{ID: "pi_b"})
		return f
	}

	t.Run("a 429 is a rate_limit invalid_request_error with a readable Retry-After", func(t *testing.T) {
		f := setup(t)
		f.srv.Inject(RetrievePaymentIntent, Fault{Status: http.StatusTooManyRequests, Header: http.Header{
			"Retry-After": {"2"}, "Stripe-Rate-Limited-Reason": {"global-rate"},
		}})
		se := stripeError(t, retrieve(f, "pi_a"), http.StatusTooManyRequests)
		if se.Type != stripe.ErrorTypeInvalidRequest || se.Code != stripe.ErrorCodeRateLimit || se.Msg == "" {
			t.Errorf("got %+v", se)
		}
		if h := se.LastResponse.Header; h.Get("Retry-After") != "2" || h.Get("Stripe-Rate-Limited-Reason") != "global-rate" {
			t.Errorf("headers %v", h)
		}
		if se.RequestID == "" || !strings.HasPrefix(se.RequestID, "req_") {
			t.Errorf("request id %q", se.RequestID)
		}
	})
	t.Run("a 5xx is an api_error", func(t *testing.T) {
		f := setup(t)
		f.srv.Inject(ListPaymentIntents, Fault{Status: http.StatusServiceUnavailable})
		var err error
		for _, e := range f.sc.V1PaymentIntents.List(ctx, nil) {
			err = e
		}
		se := stripeError(t, err, http.StatusServiceUnavailable)
		var apiErr *stripe.APIError
		if se.Type != stripe.ErrorTypeAPI || !errors.As(err, &apiErr) {
			t.Errorf("got %+v", se)
		}
	})
	t.Run("type, code and message can be set", func(t *testing.T) {
		f := setup(t)
		f.srv.Inject(RetrievePaymentIntent, Fault{Status: 429, Type: "invalid_request_error", Code: "lock_timeout", Message: "busy"})
		se := stripeError(t, retrieve(f, "pi_a"), 429)
		if se.Code != stripe.ErrorCodeLockTimeout || se.Msg != "busy" || se.DocURL != "https://stripe.com/docs/error-codes/lock-timeout" {
			t.Errorf("got %+v", se)
		}
	})
	t.Run("a raw body is sent as HTML instead of a Stripe error", func(t *testing.T) {
		f := setup(t)
		f.srv.Inject(RetrievePaymentIntent, Fault{Status: http.StatusBadGateway, Body: "<html><h1>502 Bad Gateway</h1></html>", Times: 1})
		err := retrieve(f, "pi_a")
		var se *stripe.Error
		if err == nil || errors.As(err, &se) || !strings.Contains(err.Error(), "502") {
			t.Errorf("err = %v", err)
		}
		f.srv.Inject(RetrievePaymentIntent, Fault{Status: http.StatusBadGateway, Body: "<html>bad</html>", Times: 1})
		res, body := rawGet(t, f.srv, "/v1/payment_intents/pi_a", f.srv.Key())
		if res.StatusCode != 502 || res.Header.Get("Content-Type") != "text/html" || body != "<html>bad</html>" {
			t.Errorf("got %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), body)
		}
	})
	t.Run("latency delays an answer that then succeeds", func(t *testing.T) {
		f := setup(t)
		f.srv.Inject(RetrievePaymentIntent, Fault{Latency: 50 * time.Millisecond, Header: http.Header{"X-Fault": {"1"}}})
		start := time.Now()
		pi, err := f.sc.V1PaymentIntents.Retrieve(ctx, "pi_a", nil)
		if err != nil || time.Since(start) < 50*time.Millisecond {
			t.Fatalf("err %v after %v", err, time.Since(start))
		}
		if pi.LastResponse.Header.Get("X-Fault") != "1" {
			t.Errorf("fault header not sent with a delayed answer")
		}
	})
	t.Run("a hang ends when the client gives up, without an answer", func(t *testing.T) {
		f := setup(t)
		f.srv.Inject(RetrievePaymentIntent, Fault{Hang: true})
		sc, _ := newClient(f.srv, f.srv.Key(), &http.Client{Timeout: 100 * time.Millisecond})
		_, err := sc.V1PaymentIntents.Retrieve(ctx, "pi_a", nil)
		var se *stripe.Error
		if err == nil || errors.As(err, &se) {
			t.Fatalf("err = %v, want a transport error", err)
		}
		tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if _, err := f.sc.V1PaymentIntents.Retrieve(tctx, "pi_a", nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("with a context deadline: err = %v", err)
		}
		if log := f.srv.Log(); len(log) != 2 || log[0].Status != 0 {
			t.Errorf("log %+v", log)
		}
	})
	t.Run("Times limits how many requests a fault affects", func(t *testing.T) {
		f := setup(t)
		f.srv.Inject(RetrievePaymentIntent, Fault{Status: 500, Times: 2})
		for i, want := range []bool{true, true, false, false} {
			if err := retrieve(f, "pi_a"); (err != nil) != want {
				t.Errorf("request %d: err = %v", i, err)
			}
		}
		if n := f.srv.Requests(RetrievePaymentIntent); n != 4 {
			t.Errorf("Requests = %d, want 4", n)
		}
	})
	t.Run("a fault without Times lasts until ClearFaults", func(t *testing.T) {
		f := setup(t)
		f.srv.Inject(RetrievePaymentIntent, Fault{Status: 500})
		for range 3 {
			stripeError(t, retrieve(f, "pi_a"), 500)
		}
		f.srv.ClearFaults()
		if err := retrieve(f, "pi_a"); err != nil {
			t.Error(err)
		}
	})
	t.Run("an ID-scoped fault affects only that object", func(t *testing.T) {
		f := setup(t)
		f.srv.Inject(RetrievePaymentIntent, Fault{Status: 404, Code: "resource_missing", ID: "pi_b"})
		if err := retrieve(f, "pi_a"); err != nil {
			t.Errorf("pi_a: %v", err)
		}
		stripeError(t, retrieve(f, "pi_b"), 404)
	})
	t.Run("a fault affects only its route", func(t *testing.T) {
		f := setup(t)
		f.srv.Inject(ListEvents, Fault{Status: 500})
		if err := retrieve(f, "pi_a"); err != nil {
			t.Error(err)
		}
	})
	t.Run("faults apply in injection order", func(t *testing.T) {
		f := setup(t)
		f.srv.Inject(RetrievePaymentIntent, Fault{Status: 503, Times: 1})
		f.srv.Inject(RetrievePaymentIntent, Fault{Status: 429, Times: 1})
		stripeError(t, retrieve(f, "pi_a"), 503)
		stripeError(t, retrieve(f, "pi_a"), 429)
		if err := retrieve(f, "pi_a"); err != nil {
			t.Error(err)
		}
	})
	t.Run("a wrong key is refused before faults apply and does not use them up", func(t *testing.T) {
		f := setup(t)
		f.srv.Inject(RetrievePaymentIntent, Fault{Status: 500, Times: 1})
		bad, _ := newClient(f.srv, "sk_test_wrong_key_1234", nil)
		_, err := bad.V1PaymentIntents.Retrieve(ctx, "pi_a", nil)
		stripeError(t, err, http.StatusUnauthorized)
		stripeError(t, retrieve(f, "pi_a"), 500)
	})
	t.Run("SetLatency delays every route", func(t *testing.T) {
		f := setup(t)
		f.srv.SetLatency(30 * time.Millisecond)
		start := time.Now()
		_ = retrieve(f, "pi_a")
		_ = f.listEvents(t, nil)
		if d := time.Since(start); d < 60*time.Millisecond {
			t.Errorf("two requests took %v", d)
		}
		f.srv.SetLatency(0)
	})
}

func TestFaultsOnMoneyRoutes(t *testing.T) {
	f := newFixture(t)
	id := f.charged(t, "", 1000, "usd")
	rid, _ := f.srv.Refund(id, 10)
	did, _ := f.srv.Dispute(id, 0, stripe.DisputeStatusNeedsResponse, time.Time{})
	chID := f.latestCharge(t, id, "")
	po := f.srv.AddPayout(Payout{Manual: true, Amount: 100})
	txnID := mustPayout(t, f.srv, po).BalanceTransaction
	for _, tc := range []struct {
		route Route
		path  string
		id    string // the object of a retrieve, for an ID-scoped fault
	}{
		{RetrieveCharge, "/v1/charges/" + chID, chID},
		{ListRefunds, "/v1/refunds?payment_intent=" + id, ""},
		{RetrieveRefund, "/v1/refunds/" + rid, rid},
		{ListDisputes, "/v1/disputes?payment_intent=" + id, ""},
		{RetrieveDispute, "/v1/disputes/" + did, did},
		{ListCharges, "/v1/charges?payment_intent=" + id, ""},
		{ListPayouts, "/v1/payouts?status=pending", ""},
		{RetrievePayout, "/v1/payouts/" + po, po},
		{ListBalanceTransactions, "/v1/balance_transactions?source=" + chID, ""},
		{RetrieveBalanceTransaction, "/v1/balance_transactions/" + txnID, txnID},
	} {
		t.Run("a fault on "+string(tc.route)+" fails it and only it", func(t *testing.T) {
			f.srv.Inject(tc.route, Fault{Status: http.StatusServiceUnavailable, ID: tc.id, Times: 1})
			before := f.srv.Requests(tc.route)
			if res, body := rawGet(t, f.srv, "/v1/payment_intents/"+id, f.srv.Key()); res.StatusCode != 200 {
				t.Fatalf("another route failed: %d %s", res.StatusCode, body)
			}
			if res, body := rawGet(t, f.srv, tc.path, f.srv.Key()); res.StatusCode != 503 || !strings.Contains(body, `"type":"api_error"`) {
				t.Errorf("got %d %s", res.StatusCode, body)
			}
			if res, body := rawGet(t, f.srv, tc.path, f.srv.Key()); res.StatusCode != 200 {
				t.Errorf("after the fault: %d %s", res.StatusCode, body)
			}
			if n := f.srv.Requests(tc.route) - before; n != 2 {
				t.Errorf("Requests(%s) grew by %d, want 2", tc.route, n)
			}
		})
	}
	t.Run("an ID-scoped fault spares the route's other objects", func(t *testing.T) {
		other, _ := f.srv.Refund(id, 10)
		f.srv.Inject(RetrieveRefund, Fault{Status: http.StatusTooManyRequests, ID: rid})
		defer f.srv.ClearFaults()
		stripeError(t, f.call("/v1/refunds/"+rid, nil, "", &stripe.Refund{}), http.StatusTooManyRequests)
		if err := f.call("/v1/refunds/"+other, nil, "", &stripe.Refund{}); err != nil {
			t.Error(err)
		}
	})
}
