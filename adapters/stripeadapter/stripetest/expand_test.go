package stripetest

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
)

func TestExpandLatestCharge(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	paid := f.charged(t, "", 1000, "usd")
	if _, err := f.srv.Refund(paid, 300); err != nil {
		t.Fatal(err)
	}
	if _, err := f.srv.Dispute(paid, 0, stripe.DisputeStatusNeedsResponse, t0.Add(7*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	unpaid := f.srv.AddPaymentIntent(PaymentIntent{Created: t0.Add(-time.Minute), Amount: 50})

	t.Run("without expand latest_charge is the charge's id", func(t *testing.T) {
		_, body := rawGet(t, f.srv, "/v1/payment_intents/"+paid, f.srv.Key())
		if !strings.Contains(body, `"latest_charge":"ch_`) {
			t.Errorf("body %s", body)
		}
	})
	t.Run("a retrieve with expand[]=latest_charge carries the charge's money", func(t *testing.T) {
		p := &stripe.PaymentIntentRetrieveParams{}
		p.AddExpand("latest_charge")
		pi, err := f.sc.V1PaymentIntents.Retrieve(ctx, paid, p)
		if err != nil {
			t.Fatal(err)
		}
		ch := pi.LatestCharge
		if ch == nil || ch.Amount != 1000 || ch.AmountCaptured != 1000 || ch.AmountRefunded != 300 || ch.Refunded ||
			!ch.Disputed || ch.PaymentIntent.ID != paid {
			t.Errorf("latest_charge %+v", ch)
		}
	})
	t.Run("a list with expand[]=data.latest_charge carries each intent's charge, null without one", func(t *testing.T) {
		p := &stripe.PaymentIntentListParams{}
		p.AddExpand("data.latest_charge")
		var got []*stripe.PaymentIntent
		for pi, err := range f.sc.V1PaymentIntents.List(ctx, p) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, pi)
		}
		if len(got) != 2 || got[0].ID != unpaid || got[0].LatestCharge != nil || got[1].LatestCharge == nil ||
			got[1].LatestCharge.AmountRefunded != 300 {
			t.Errorf("listed %+v", got)
		}
	})
	t.Run("expansions nest up to four levels", func(t *testing.T) {
		p := &stripe.PaymentIntentListParams{}
		p.AddExpand("data.latest_charge.payment_intent.latest_charge")
		list := &stripe.PaymentIntentList{}
		if err := f.call("/v1/payment_intents", p, "", list); err != nil {
			t.Fatal(err)
		}
		inner := list.Data[1].LatestCharge.PaymentIntent
		if inner.ID != paid || inner.Amount != 1000 || inner.LatestCharge.AmountRefunded != 300 {
			t.Errorf("nested %+v", inner)
		}
	})
	t.Run("fields the fake does not model can be expanded and stay null", func(t *testing.T) {
		p := &stripe.PaymentIntentRetrieveParams{}
		p.AddExpand("customer")
		p.AddExpand("payment_method.customer")
		p.AddExpand("latest_charge.review")
		pi, err := f.sc.V1PaymentIntents.Retrieve(ctx, paid, p)
		if err != nil || pi.Customer != nil || pi.LatestCharge.Review != nil {
			t.Errorf("got %+v, %v", pi, err)
		}
	})
	t.Run("refunds and disputes expand their charge and intent", func(t *testing.T) {
		rp := &stripe.RefundListParams{PaymentIntent: stripe.String(paid)}
		rp.AddExpand("data.charge")
		rp.AddExpand("data.payment_intent")
		refunds := &stripe.RefundList{}
		if err := f.call("/v1/refunds", rp, "", refunds); err != nil {
			t.Fatal(err)
		}
		if r := refunds.Data[0]; r.Charge.AmountRefunded != 300 || r.PaymentIntent.Amount != 1000 {
			t.Errorf("refund %+v", r)
		}
		dp := &stripe.DisputeListParams{}
		dp.AddExpand("data.charge.payment_intent")
		disputes := &stripe.DisputeList{}
		if err := f.call("/v1/disputes", dp, "", disputes); err != nil {
			t.Fatal(err)
		}
		if d := disputes.Data[0]; !d.Charge.Disputed || d.Charge.PaymentIntent.ID != paid || d.Charge.PaymentIntent.Amount != 1000 || d.PaymentIntent.Amount != 0 {
			t.Errorf("dispute %+v", d)
		}
	})
}

func TestExpandChargeRefunds(t *testing.T) {
	f, now := newClockFixture(t)
	id := f.charged(t, "", 1000, "usd")
	chID := f.latestCharge(t, id, "")
	var newestFirst []string
	for i := range 11 {
		*now = t0.Add(time.Duration(i) * time.Second)
		r, err := f.srv.Refund(id, 10)
		if err != nil {
			t.Fatal(err)
		}
		newestFirst = append([]string{r}, newestFirst...)
	}
	t.Run("unexpanded, a charge's refunds are null", func(t *testing.T) {
		if _, body := rawGet(t, f.srv, "/v1/charges/"+chID, f.srv.Key()); !strings.Contains(body, `"refunds":null`) {
			t.Errorf("body %s", body)
		}
	})
	t.Run("expanded, they are a sub-list of the ten newest", func(t *testing.T) {
		ch := f.retrieveCharge(t, chID, "", "refunds.data.payment_intent")
		got := idsOf(ch.Refunds.Data, func(r *stripe.Refund) string { return r.ID })
		if !slices.Equal(got, newestFirst[:10]) || !ch.Refunds.HasMore || ch.Refunds.URL != "/v1/charges/"+chID+"/refunds" {
			t.Errorf("refunds %v, has_more %v, url %s", got, ch.Refunds.HasMore, ch.Refunds.URL)
		}
		if r := ch.Refunds.Data[0]; r.Amount != 10 || r.PaymentIntent.Amount != 1000 || r.Charge.ID != chID {
			t.Errorf("first refund %+v", r)
		}
	})
}

func TestExpandErrors(t *testing.T) {
	f := newFixture(t)
	paid := f.charged(t, "", 1000, "usd")
	rid, _ := f.srv.Refund(paid, 1)
	const (
		cannot  = "This property cannot be expanded ("
		tooDeep = "You cannot expand more than 4 levels of a property. Property: "
	)
	for _, tc := range []struct {
		name, path string
		expand     []string
		message    string // "" for a 200
	}{
		{"an unknown field of an intent", "/v1/payment_intents/" + paid, []string{"foo"}, cannot + "foo)."},
		{"a field that is not expandable", "/v1/payment_intents/" + paid, []string{"currency"}, cannot + "currency)."},
		{"an unknown field of the expanded charge names the path to it", "/v1/payment_intents/" + paid, []string{"latest_charge.foo.bar"}, cannot + "latest_charge.foo)."},
		{"a list path without data, for a field of its items, gets Stripe's hint", "/v1/payment_intents", []string{"latest_charge"}, cannot + "latest_charge). You may want to try expanding 'data.latest_charge' instead."},
		{"a list path without data, for an unknown field", "/v1/payment_intents", []string{"foo"}, cannot + "foo)."},
		{"a list path of data alone", "/v1/refunds", []string{"data"}, cannot + "data)."},
		{"an unknown field of a list's items", "/v1/payment_intents", []string{"data.foo"}, cannot + "data.foo)."},
		{"a data path on a retrieve", "/v1/payment_intents/" + paid, []string{"data.latest_charge"}, cannot + "data)."},
		{"five levels on a list, data included", "/v1/payment_intents", []string{"data.latest_charge.payment_intent.latest_charge.payment_intent"}, tooDeep + "data.latest_charge.payment_intent.latest_charge.payment_intent"},
		{"five levels on a retrieve", "/v1/charges/" + f.latestCharge(t, paid, ""), []string{"payment_intent.latest_charge.payment_intent.latest_charge.payment_intent"}, tooDeep + "payment_intent.latest_charge.payment_intent.latest_charge.payment_intent"},
		{"five levels below a field the fake does not model", "/v1/payment_intents/" + paid, []string{"customer.a.b.c.d"}, tooDeep + "customer.a.b.c.d"},
		{"the first bad path of several is named", "/v1/refunds/" + rid, []string{"charge", "payment_intent.nope", "bad"}, cannot + "payment_intent.nope)."},
		{"a charge's refunds list, through its data", "/v1/charges/" + f.latestCharge(t, paid, ""), []string{"refunds.data.payment_intent"}, ""},
		{"an unknown field of a charge's refunds", "/v1/charges/" + f.latestCharge(t, paid, ""), []string{"refunds.data.foo"}, cannot + "refunds.data.foo)."},
		{"an event's data can be expanded on a retrieve", "/v1/events/" + f.listEvents(t, nil)[0].ID, []string{"data"}, ""},
		{"an unknown field of events' items", "/v1/events", []string{"data.object"}, cannot + "data.object)."},
		{"an unknown field of a dispute", "/v1/disputes", []string{"data.latest_charge"}, cannot + "data.latest_charge)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := url.Values{}
			for i, e := range tc.expand {
				q.Set("expand["+string(rune('0'+i))+"]", e)
			}
			res, body := rawGet(t, f.srv, tc.path+"?"+q.Encode(), f.srv.Key())
			if tc.message == "" {
				if res.StatusCode != 200 {
					t.Errorf("got %d %s", res.StatusCode, body)
				}
				return
			}
			want := `{"error":{"message":` + string(appendString(nil, tc.message)) + `,"type":"invalid_request_error"}}`
			if strings.HasPrefix(tc.message, tooDeep) {
				want = `{"error":{"code":"property_expansion_max_depth","doc_url":"https://stripe.com/docs/error-codes/property-expansion-max-depth","message":` +
					string(appendString(nil, tc.message)) + `,"type":"invalid_request_error"}}`
			}
			if res.StatusCode != 400 || body != want {
				t.Errorf("got %d %s\nwant 400 %s", res.StatusCode, body, want)
			}
		})
	}
	t.Run("stripe-go sees a bad path as a 400 invalid_request_error", func(t *testing.T) {
		p := &stripe.PaymentIntentRetrieveParams{}
		p.AddExpand("latest_charge.refunds.data.foo.bar")
		_, err := f.sc.V1PaymentIntents.Retrieve(context.Background(), paid, p)
		if se := stripeError(t, err, http.StatusBadRequest); se.Type != stripe.ErrorTypeInvalidRequest || se.Code != "property_expansion_max_depth" {
			t.Errorf("got %+v", se)
		}
	})
}

func TestExpandPathsOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		query string
		want  []string
	}{
		{"numbered elements in their order", "expand[1]=b&expand[0]=a&expand[10]=c", []string{"a", "b", "c"}},
		{"unnumbered elements as sent, after numbered ones", "expand[]=x&expand[]=y&expand[0]=a", []string{"a", "x", "y"}},
		{"other parameters are not paths", "limit=3&expandx=1&expand=z", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			if got := expandPaths(q); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
