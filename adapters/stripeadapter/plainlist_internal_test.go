package stripeadapter

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// pageBytes returns the body of GET path?query from srv, which must answer 200.
func pageBytes(t testing.TB, srv *stripetest.Server, pathQuery string) []byte {
	t.Helper()
	body, ok := pageBytesIf(t, srv, pathQuery)
	if !ok {
		t.Fatalf("GET %s: not a 200: %.200s", pathQuery, body)
	}
	return body
}

// stripeGoCall is a list call's decoding as stripe-go's Do does it on a 200 with body data:
// into out, whose last response is then noted whatever the outcome.
func stripeGoCall(data []byte) func(out stripe.LastResponseSetter) error {
	return func(out stripe.LastResponseSetter) error {
		err := json.Unmarshal(data, out)
		out.SetLastResponse(&stripe.APIResponse{StatusCode: http.StatusOK, RawJSON: data})
		return err
	}
}

// decodeBoth decodes data with the descriptor's listDecoder, as a list call does, and with
// encoding/json into listPageOf[T], as before it, and fails unless both give the same page and
// the same error or none. fast reports whether the listDecoder's page took data without
// falling back.
func decodeBoth[T any](t *testing.T, obj Object[T], data []byte) (page listPageOf[T], fast bool) {
	t.Helper()
	fast = json.Unmarshal(data, obj.decodeList(obj.Expand)) == nil && !decodedTwice(data)
	plain, plainErr := listInto(context.Background(), obj.decodeList, obj.Expand, stripeGoCall(data))
	var before listPageOf[T]
	beforeErr := json.Unmarshal(data, &before)
	if (plainErr == nil) != (beforeErr == nil) {
		t.Fatalf("one pass: error %v; stripe-go's methods: error %v", plainErr, beforeErr)
	}
	if beforeErr != nil {
		before = listPageOf[T]{}
	}
	if !reflect.DeepEqual(plain, before) {
		got, _ := json.Marshal(plain)
		want, _ := json.Marshal(before)
		t.Fatalf("one pass decodes another page:\n got %s\nwant %s", got, want)
	}
	return plain, fast
}

func TestAListPageDecodedInOnePassIsThePageStripeGoDecodes(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	srv := stripetest.NewServer(stripetest.Options{Now: func() time.Time { return now }})
	defer srv.Close()
	var pis []stripetest.PaymentIntent
	for i, st := range []stripe.PaymentIntentStatus{"", stripe.PaymentIntentStatusSucceeded, stripe.PaymentIntentStatusSucceeded,
		stripe.PaymentIntentStatusSucceeded, stripe.PaymentIntentStatusProcessing, stripe.PaymentIntentStatusCanceled, stripe.PaymentIntentStatusRequiresCapture} {
		pis = append(pis, stripetest.PaymentIntent{Status: st, Amount: int64(1000 + i), Currency: "eur", Metadata: map[string]string{"order": "o\"1"}})
	}
	ids := srv.AddPaymentIntents(pis)
	if _, err := srv.Refund(ids[2], 300); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Dispute(ids[3], 1003, stripe.DisputeStatusNeedsResponse, now.Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	srv.AddSubscriptions([]stripetest.Subscription{{}, {Status: stripe.SubscriptionStatusCanceled}})
	srv.AddInvoices([]stripetest.Invoice{{}, {}})

	t.Run("PaymentIntents, their charges expanded", func(t *testing.T) {
		page, fast := decodeBoth(t, PaymentIntents(), pageBytes(t, srv, "/v1/payment_intents?limit=100&expand[]=data.latest_charge"))
		if !fast {
			t.Error("the page was decoded by stripe-go's methods")
		}
		charged := slices.IndexFunc(page.Data, func(pi *stripe.PaymentIntent) bool {
			return pi.LatestCharge != nil && pi.LatestCharge.AmountRefunded > 0
		})
		if len(page.Data) != len(ids) || charged < 0 {
			t.Fatalf("the fixture's page is not what the test needs: %d intents, none with a refunded charge", len(page.Data))
		}
	})
	t.Run("PaymentIntents, their charges not expanded", func(t *testing.T) {
		obj := PaymentIntents()
		obj.Expand = nil
		page, fast := decodeBoth(t, obj, pageBytes(t, srv, "/v1/payment_intents?limit=100"))
		if !fast {
			t.Error("the page was decoded by stripe-go's methods")
		}
		if page.Data[0].LatestCharge == nil || page.Data[0].LatestCharge.ID == "" || page.Data[0].LatestCharge.Amount != 0 {
			t.Fatalf("the fixture's page is not what the test needs: %+v", page.Data[0].LatestCharge)
		}
	})
	t.Run("PaymentIntents with charge ids although expanded decode as before", func(t *testing.T) {
		decodeBoth(t, PaymentIntents(), pageBytes(t, srv, "/v1/payment_intents?limit=100"))
	})
	t.Run("a page of one of them, with more", func(t *testing.T) {
		if page, _ := decodeBoth(t, PaymentIntents(), pageBytes(t, srv, "/v1/payment_intents?limit=1")); !page.HasMore {
			t.Fatal("has_more lost")
		}
	})
	t.Run("Subscriptions", func(t *testing.T) {
		if _, fast := decodeBoth(t, Subscriptions(), pageBytes(t, srv, "/v1/subscriptions?limit=100&status=all")); !fast {
			t.Error("the page was decoded by stripe-go's methods")
		}
	})
	t.Run("Invoices", func(t *testing.T) {
		if _, fast := decodeBoth(t, Invoices(), pageBytes(t, srv, "/v1/invoices?limit=100")); !fast {
			t.Error("the page was decoded by stripe-go's methods")
		}
	})
	t.Run("an id alone and a null among the objects decode as stripe-go decodes them", func(t *testing.T) {
		page, _ := decodeBoth(t, PaymentIntents(), []byte(`{"object":"list","url":"/v1/payment_intents","has_more":true,"data":[{"id":"pi_1","object":"payment_intent","status":"succeeded"},"pi_2",null]}`))
		if len(page.Data) != 3 || page.Data[1] == nil || page.Data[1].ID != "pi_2" || page.Data[2] != nil {
			t.Fatalf("page %+v", page.Data)
		}
	})
	t.Run("an id alone among the objects of an answer over HTTP is listed as before", func(t *testing.T) {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"object":"list","url":"/v1/payment_intents","has_more":false,"data":[{"id":"pi_1","object":"payment_intent","status":"succeeded"},"pi_2"]}`)
		}))
		defer hs.Close()
		g, err := NewObjectGateway(GatewayConfig{Key: "sk_test_1", BaseURL: hs.URL}, PaymentIntents())
		if err != nil {
			t.Fatal(err)
		}
		page, _, err := g.listPage(context.Background(), nil, "")
		if err != nil || len(page) != 2 || page[0].Status != stripe.PaymentIntentStatusSucceeded || page[1].ID != "pi_2" || page[1].Status != "" {
			t.Fatalf("page %+v, error %v", page, err)
		}
	})
	t.Run("a body that is not JSON fails as before", func(t *testing.T) {
		decodeBoth(t, CheckoutSessions(), []byte(`{"object":"list","data":[{"id":`))
	})
	t.Run("an empty object is no list either way", func(t *testing.T) {
		if page, _ := decodeBoth(t, Accounts(), []byte(`{}`)); page.Object != "" {
			t.Fatal(page.Object)
		}
	})
}

// BenchmarkListPage is the client's cost of one page of 100 PaymentIntents, their charges
// expanded as PaymentIntents lists them: decoding the body alone, and the whole list call
// over HTTP to stripetest (the fake's own share included). "stripe-go's methods" is how pages
// decoded before the listDecoder.
func BenchmarkListPage(b *testing.B) {
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()
	pis := make([]stripetest.PaymentIntent, 100)
	for i := range pis {
		pis[i] = stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: int64(1000 + i)}
	}
	srv.AddPaymentIntents(pis)
	body := pageBytes(b, srv, "/v1/payment_intents?limit=100&expand[]=data.latest_charge")
	plainObj, before := PaymentIntents(), PaymentIntents()
	before.decodeList = nil
	for _, c := range []struct {
		name string
		obj  Object[*stripe.PaymentIntent]
	}{{"one pass", plainObj}, {"stripe-go's methods", before}} {
		b.Run("decode/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if page, err := listInto(context.Background(), c.obj.decodeList, c.obj.Expand, stripeGoCall(body)); err != nil || len(page.Data) != 100 {
					b.Fatal(err, len(page.Data))
				}
			}
		})
		b.Run("call/"+c.name, func(b *testing.B) {
			g, err := NewObjectGateway(GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()}, c.obj)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if page, _, err := g.listPage(context.Background(), nil, ""); err != nil || len(page) != 100 {
					b.Fatal(err, len(page))
				}
			}
		})
	}
}
