package stripemoney_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/internal/keyecho"
)

// disputedIntent is a succeeded intent whose expanded charge is disputed and partly refunded.
const disputedIntent = `{"id":"pi_1","object":"payment_intent","status":"succeeded","amount":1000,"amount_received":1000,
	"currency":"usd","created":%d,"latest_charge":{"id":"ch_1","object":"charge","amount":1000,"amount_captured":1000,
	"amount_refunded":300,"refunded":false,"disputed":true,"currency":"usd","payment_intent":"pi_1"}}`

// moneyEchoing answers the intent's reads with disputedIntent and an event touching it, and
// every follow-up (disputes, refunds) with echoing's fault.
func moneyEchoing(status int, code string, html bool) http.Handler {
	created := time.Now().Add(-time.Hour).Unix()
	intent := fmt.Sprintf(disputedIntent, created)
	fail := keyecho.Handler(status, code, html)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/payment_intents/pi_1":
			fmt.Fprint(w, intent)
		case r.URL.Path == "/v1/payment_intents":
			fmt.Fprintf(w, `{"object":"list","has_more":false,"data":[%s]}`, intent)
		case r.URL.Path == "/v1/events":
			fmt.Fprintf(w, `{"object":"list","has_more":false,"data":[{"id":"evt_2","object":"event","type":"charge.refunded","created":%d,
				"data":{"object":{"id":"ch_1","object":"charge","payment_intent":"pi_1"}}}]}`, created)
		default:
			fail.ServeHTTP(w, r)
		}
	})
}

func TestTheKeyAppearsNowhereWhenAFollowUpEchoesIt(t *testing.T) {
	for _, f := range []struct {
		name   string
		status int
		code   string
		html   bool
	}{
		{"400", http.StatusBadRequest, "", false},
		{"404 resource_missing", http.StatusNotFound, "resource_missing", false},
		{"429", http.StatusTooManyRequests, "", false},
		{"500", http.StatusInternalServerError, "", false},
		{"502 page of a proxy", http.StatusBadGateway, "", true},
	} {
		t.Run(f.name, func(t *testing.T) {
			srv := httptest.NewServer(moneyEchoing(f.status, f.code, f.html))
			defer srv.Close()
			g, err := newGateway(stripeadapter.GatewayConfig{Key: keyecho.Key, BaseURL: srv.URL, Timeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var logged bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
			wait := func(context.Context) error { return nil }
			ctx := context.Background()
			_, e1 := g.Fetch(ctx, "pi_1")
			_, e2 := g.FetchBatch(ctx, []reconcile.Lookup{{ExternalID: "pi_1", CreatedAt: time.Now().Add(-time.Hour)},
				{ExternalID: "pi_2", CreatedAt: time.Now().Add(-time.Hour)}}, wait)
			events, err := g.EventsFeed(stripeadapter.EventsOptions{Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			_, e3 := events.Next(ctx, fmt.Sprintf(`{"after":"evt_1","until":%d}`, time.Now().Add(-2*time.Hour).Unix()), wait)
			reverse, err := g.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.PaymentIntent]{Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			page, e4 := reverse.Next(ctx, "", wait)
			for _, err := range []error{e1, e2, e3} {
				if err == nil {
					t.Fatal("a failed follow-up gave no error")
				}
				keyecho.AssertNone(t, "a gateway or feed error", fmt.Sprintf("%v %+v %#v", err, err, err))
			}
			if len(page.Objects) != 0 {
				t.Errorf("the reverse feed judged a payment whose disputes it could not read: %+v", page.Objects)
			}
			keyecho.AssertNone(t, "a reverse feed error", fmt.Sprint(e4))
			keyecho.AssertNone(t, "the log", logged.String())
		})
	}
}
