package stripetest

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// refundOf reads a refund over HTTP.
func (f *fixture) refundOf(t testing.TB, id, account string) *stripe.Refund {
	t.Helper()
	r := &stripe.Refund{}
	if err := f.call("/v1/refunds/"+id, nil, account, r); err != nil {
		t.Fatalf("retrieving refund %s: %v", id, err)
	}
	return r
}

func TestRefund(t *testing.T) {
	t.Run("a full refund refunds the charge and records refund.created then charge.refunded", func(t *testing.T) {
		f := newFixture(t)
		id := f.charged(t, "", 1000, "jpy")
		rid, err := f.srv.Refund(id, 0)
		if err != nil {
			t.Fatal(err)
		}
		chID := f.latestCharge(t, id, "")
		r := f.refundOf(t, rid, "")
		if !strings.HasPrefix(rid, "re_") || len(rid) != 27 || r.ID != rid || r.Object != "refund" || r.Amount != 1000 ||
			r.Currency != "jpy" || r.Status != stripe.RefundStatusSucceeded || r.Charge.ID != chID ||
			r.PaymentIntent.ID != id || r.Created != t0.Unix() || r.FailureReason != "" {
			t.Errorf("refund %+v", r)
		}
		if ch := f.retrieveCharge(t, chID, ""); ch.AmountRefunded != 1000 || !ch.Refunded {
			t.Errorf("charge refunded %d, %v", ch.AmountRefunded, ch.Refunded)
		}
		events := f.listEvents(t, &stripe.EventListParams{Types: []*string{stripe.String("refund.created"), stripe.String("charge.refunded")}})
		if got := eventTypesOf(events); !slices.Equal(got, []string{"charge.refunded", "refund.created"}) {
			t.Fatalf("events %v", got)
		}
		var ch stripe.Charge
		var re stripe.Refund
		if err := json.Unmarshal(events[0].Data.Raw, &ch); err != nil || ch.ID != chID || ch.AmountRefunded != 1000 || !ch.Refunded {
			t.Errorf("charge.refunded object %+v, %v", ch, err)
		}
		if err := json.Unmarshal(events[1].Data.Raw, &re); err != nil || re.ID != rid || re.Status != stripe.RefundStatusSucceeded {
			t.Errorf("refund.created object %+v, %v", re, err)
		}
	})
	t.Run("partial refunds add up; the charge is refunded only when all is", func(t *testing.T) {
		f := newFixture(t)
		id := f.charged(t, "", 1000, "usd")
		chID := f.latestCharge(t, id, "")
		for i, step := range []struct {
			amount   int64
			refunded int64
			whole    bool
		}{{300, 300, false}, {600, 900, false}, {0, 1000, true}} {
			if _, err := f.srv.Refund(id, step.amount); err != nil {
				t.Fatalf("refund %d: %v", i, err)
			}
			if ch := f.retrieveCharge(t, chID, ""); ch.AmountRefunded != step.refunded || ch.Refunded != step.whole {
				t.Errorf("after refund %d: refunded %d, %v", i, ch.AmountRefunded, ch.Refunded)
			}
		}
		if _, err := f.srv.Refund(id, 1); err == nil || !strings.Contains(err.Error(), "0 is left") {
			t.Errorf("refunding a refunded charge: %v", err)
		}
	})
	t.Run("a partial capture is refunded up to what was captured", func(t *testing.T) {
		f := newFixture(t)
		id := f.srv.AddPaymentIntent(PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000, AmountReceived: 400})
		if _, err := f.srv.Refund(id, 401); err == nil {
			t.Error("refunded more than was captured")
		}
		if _, err := f.srv.Refund(id, 300); err != nil {
			t.Fatal(err)
		}
		if _, err := f.srv.Refund(id, 101); err == nil {
			t.Error("refunded more than was captured, the released amount counted as a refund")
		}
		// amount_refunded counts the released 600 as well as the refunds, as Stripe's does.
		if ch := f.retrieveCharge(t, f.latestCharge(t, id, ""), ""); ch.AmountRefunded != 900 || ch.Refunded {
			t.Errorf("after refunding 300: amount_refunded %d, refunded %v; want 900, false", ch.AmountRefunded, ch.Refunded)
		}
		if _, err := f.srv.Refund(id, 0); err != nil {
			t.Fatal(err)
		}
		if ch := f.retrieveCharge(t, f.latestCharge(t, id, ""), ""); ch.AmountRefunded != 1000 || !ch.Refunded {
			t.Errorf("after refunding the rest: amount_refunded %d, refunded %v; want 1000, true", ch.AmountRefunded, ch.Refunded)
		}
	})
	t.Run("it fails without a captured charge or with a bad amount", func(t *testing.T) {
		f := newFixture(t)
		paid := f.charged(t, "", 100, "usd")
		for _, tc := range []struct {
			name   string
			id     string
			amount int64
		}{
			{"an unknown intent", "pi_nope", 1},
			{"an intent without a charge", f.srv.AddPaymentIntent(PaymentIntent{Amount: 100}), 1},
			{"an uncaptured charge", f.srv.AddPaymentIntent(PaymentIntent{Amount: 100, Status: stripe.PaymentIntentStatusRequiresCapture}), 1},
			{"more than the charge", paid, 101},
			{"a negative amount", paid, -1},
		} {
			if _, err := f.srv.Refund(tc.id, tc.amount); err == nil || !strings.HasPrefix(err.Error(), "stripetest: ") {
				t.Errorf("%s: err = %v", tc.name, err)
			}
		}
	})
}

func TestSetRefundStatus(t *testing.T) {
	for _, tc := range []struct {
		status   stripe.RefundStatus
		reason   string
		counts   bool     // still counts in the charge's amount_refunded
		events   []string // newest first
		wantWhy  stripe.RefundFailureReason
		wantFail bool
	}{
		{stripe.RefundStatusPending, "", true, []string{"charge.refund.updated", "refund.updated"}, "", false},
		{stripe.RefundStatusRequiresAction, "", true, []string{"charge.refund.updated", "refund.updated"}, "", false},
		{stripe.RefundStatusSucceeded, "", true, []string{"charge.refund.updated", "refund.updated"}, "", false},
		{stripe.RefundStatusFailed, "expired_or_canceled_card", false, []string{"charge.refund.updated", "refund.failed", "refund.updated"}, stripe.RefundFailureReasonExpiredOrCanceledCard, true},
		{stripe.RefundStatusFailed, "", false, []string{"charge.refund.updated", "refund.failed", "refund.updated"}, stripe.RefundFailureReasonUnknown, true},
		{stripe.RefundStatusCanceled, "", false, []string{"charge.refund.updated", "refund.updated"}, "", false},
	} {
		name := "a succeeded refund that becomes " + string(tc.status)
		if tc.reason != "" {
			name += " for " + tc.reason
		}
		t.Run(name, func(t *testing.T) {
			f, now := newClockFixture(t)
			id := f.charged(t, "", 1000, "usd")
			rid, err := f.srv.Refund(id, 1000)
			if err != nil {
				t.Fatal(err)
			}
			*now = t0.Add(time.Minute)
			if err := f.srv.SetRefundStatus(rid, tc.status, tc.reason); err != nil {
				t.Fatal(err)
			}
			r := f.refundOf(t, rid, "")
			if r.Status != tc.status || r.FailureReason != tc.wantWhy || r.Created != t0.Unix() {
				t.Errorf("refund %+v", r)
			}
			want := int64(0)
			if tc.counts {
				want = 1000
			}
			if ch := f.retrieveCharge(t, r.Charge.ID, ""); ch.AmountRefunded != want || ch.Refunded != tc.counts {
				t.Errorf("charge refunded %d, %v; want %d", ch.AmountRefunded, ch.Refunded, want)
			}
			events := f.listEvents(t, &stripe.EventListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: now.Unix()}})
			if got := eventTypesOf(events); !slices.Equal(got, tc.events) {
				t.Fatalf("events %v, want %v", got, tc.events)
			}
			for _, e := range events {
				var snap stripe.Refund
				if err := json.Unmarshal(e.Data.Raw, &snap); err != nil || snap.Object != "refund" || snap.ID != rid || snap.Status != tc.status {
					t.Errorf("%s object %+v, %v", e.Type, snap, err)
				}
			}
		})
	}
	t.Run("a failed refund that succeeds again counts again, unless the charge has no room", func(t *testing.T) {
		f := newFixture(t)
		id := f.charged(t, "", 1000, "usd")
		first, _ := f.srv.Refund(id, 600)
		if err := f.srv.SetRefundStatus(first, stripe.RefundStatusFailed, ""); err != nil {
			t.Fatal(err)
		}
		second, err := f.srv.Refund(id, 500)
		if err != nil {
			t.Fatalf("the failed refund's amount is not refundable again: %v", err)
		}
		if err := f.srv.SetRefundStatus(first, stripe.RefundStatusSucceeded, ""); err == nil {
			t.Error("a refund beyond the charge succeeded again")
		}
		_ = f.srv.SetRefundStatus(second, stripe.RefundStatusCanceled, "")
		if err := f.srv.SetRefundStatus(first, stripe.RefundStatusSucceeded, ""); err != nil {
			t.Fatal(err)
		}
		if ch := f.retrieveCharge(t, f.latestCharge(t, id, ""), ""); ch.AmountRefunded != 600 {
			t.Errorf("refunded %d", ch.AmountRefunded)
		}
	})
	t.Run("it fails for an unknown refund or status, or a reason without failure", func(t *testing.T) {
		f := newFixture(t)
		rid, _ := f.srv.Refund(f.charged(t, "", 10, "usd"), 0)
		for _, err := range []error{
			f.srv.SetRefundStatus("re_nope", stripe.RefundStatusFailed, ""),
			f.srv.SetRefundStatus(rid, "refunded", ""),
			f.srv.SetRefundStatus(rid, stripe.RefundStatusCanceled, "unknown"),
		} {
			if err == nil || !strings.HasPrefix(err.Error(), "stripetest: ") {
				t.Errorf("err = %v", err)
			}
		}
	})
}

func TestListRefunds(t *testing.T) {
	ctx := context.Background()
	f, now := newClockFixture(t)
	a := f.charged(t, "", 1000, "usd")
	b := f.charged(t, "", 1000, "usd")
	var ra, rb []string // newest first
	for i := range 3 {
		*now = t0.Add(time.Duration(i) * time.Minute)
		r, _ := f.srv.Refund(a, 100)
		ra = append([]string{r}, ra...)
		r, _ = f.srv.Refund(b, 100)
		rb = append([]string{r}, rb...)
	}
	connected := f.charged(t, "acct_1", 500, "usd")
	rc, _ := f.srv.Refund(connected, 0)
	all := []string{rb[0], ra[0], rb[1], ra[1], rb[2], ra[2]}
	chA := f.latestCharge(t, a, "")

	list := func(t *testing.T, p *stripe.RefundListParams) []string {
		t.Helper()
		var ids []string
		for r, err := range f.sc.V1Refunds.List(ctx, p) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.ID)
		}
		return ids
	}
	for _, tc := range []struct {
		name   string
		params stripe.RefundListParams
		want   []string
	}{
		{"refunds are listed newest first", stripe.RefundListParams{}, all},
		{"payment_intent selects an intent's refunds", stripe.RefundListParams{PaymentIntent: stripe.String(a)}, ra},
		{"charge selects a charge's refunds", stripe.RefundListParams{Charge: stripe.String(chA)}, ra},
		{"a charge and its intent select its refunds", stripe.RefundListParams{Charge: stripe.String(chA), PaymentIntent: stripe.String(a)}, ra},
		{"a charge and another intent select nothing", stripe.RefundListParams{Charge: stripe.String(chA), PaymentIntent: stripe.String(b)}, nil},
		{"an unknown intent selects nothing", stripe.RefundListParams{PaymentIntent: stripe.String("pi_nope")}, nil},
		{"an intent without a charge selects nothing", stripe.RefundListParams{PaymentIntent: stripe.String(f.srv.AddPaymentIntent(PaymentIntent{}))}, nil},
		{"another account's intent selects nothing", stripe.RefundListParams{PaymentIntent: stripe.String(connected)}, nil},
		{"created filters", stripe.RefundListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThan: t0.Unix()}}, all[:4]},
		{"created filters a filtered list", stripe.RefundListParams{PaymentIntent: stripe.String(a), CreatedRange: &stripe.RangeQueryParams{LesserThanOrEqual: t0.Add(time.Minute).Unix()}}, ra[1:]},
		{"a small limit pages through", stripe.RefundListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(1)}}, all},
		{"a small limit pages through a filtered list", stripe.RefundListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(2)}, PaymentIntent: stripe.String(b)}, rb},
		{"a connected account sees its own refunds", stripe.RefundListParams{ListParams: stripe.ListParams{StripeAccount: stripe.String("acct_1")}}, []string{rc}},
		{"a connected account filters by its intent", stripe.RefundListParams{ListParams: stripe.ListParams{StripeAccount: stripe.String("acct_1")}, PaymentIntent: stripe.String(connected)}, []string{rc}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := list(t, &tc.params); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("has_more and cursors work in both directions", func(t *testing.T) {
		p := &stripe.RefundListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(2)}, PaymentIntent: stripe.String(a)}
		first := &stripe.RefundList{}
		if err := f.call("/v1/refunds", p, "", first); err != nil || len(first.Data) != 2 || !first.HasMore || first.URL != "/v1/refunds" {
			t.Fatalf("first page %+v, %v", first, err)
		}
		p.StartingAfter = stripe.String(first.Data[1].ID)
		second := &stripe.RefundList{}
		if err := f.call("/v1/refunds", p, "", second); err != nil || len(second.Data) != 1 || second.HasMore || second.Data[0].ID != ra[2] {
			t.Fatalf("second page %+v, %v", second, err)
		}
		p.StartingAfter, p.EndingBefore = nil, stripe.String(ra[2])
		back := &stripe.RefundList{}
		if err := f.call("/v1/refunds", p, "", back); err != nil || len(back.Data) != 2 || back.HasMore || back.Data[0].ID != ra[0] {
			t.Fatalf("backward page %+v, %v", back, err)
		}
	})
	t.Run("a cursor from outside a filtered list positions it by time", func(t *testing.T) {
		// rb[1] is newer than ra[1] and older than ra[0].
		for _, tc := range []struct {
			name string
			p    stripe.RefundListParams
			want []string
		}{
			{"after", stripe.RefundListParams{ListParams: stripe.ListParams{StartingAfter: stripe.String(rb[1])}, PaymentIntent: stripe.String(a)}, ra[1:]},
			{"before", stripe.RefundListParams{ListParams: stripe.ListParams{EndingBefore: stripe.String(rb[1])}, PaymentIntent: stripe.String(a)}, ra[:1]},
		} {
			if got := list(t, &tc.p); !slices.Equal(got, tc.want) {
				t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
			}
		}
	})
	t.Run("an unknown or other account's cursor is a 400", func(t *testing.T) {
		for _, cursor := range []string{"re_nope", rc} {
			p := &stripe.RefundListParams{ListParams: stripe.ListParams{StartingAfter: stripe.String(cursor)}}
			se := stripeError(t, f.call("/v1/refunds", p, "", &stripe.RefundList{}), http.StatusBadRequest)
			if se.Param != "starting_after" || se.Msg != "No such refund: '"+cursor+"'" {
				t.Errorf("got %+v", se)
			}
		}
	})
	t.Run("an unknown parameter is refused", func(t *testing.T) {
		res, body := rawGet(t, f.srv, "/v1/refunds?status=failed", f.srv.Key())
		if res.StatusCode != 400 || !strings.Contains(body, "Received unknown parameter: status") {
			t.Errorf("got %d %s", res.StatusCode, body)
		}
	})
	t.Run("a refund is retrieved only by its account", func(t *testing.T) {
		if r := f.refundOf(t, rc, "acct_1"); r.Amount != 500 {
			t.Errorf("got %+v", r)
		}
		se := stripeError(t, f.call("/v1/refunds/"+rc, nil, "", &stripe.Refund{}), http.StatusNotFound)
		if se.Code != stripe.ErrorCodeResourceMissing || se.Msg != "No such refund: '"+rc+"'" || se.Param != "refund" {
			t.Errorf("got %+v", se)
		}
		stripeError(t, f.call("/v1/refunds/"+ra[0], nil, "acct_1", &stripe.Refund{}), http.StatusNotFound)
	})
	t.Run("a connected account's refund events name the account", func(t *testing.T) {
		p := &stripe.EventListParams{ListParams: stripe.ListParams{StripeAccount: stripe.String("acct_1")}, Type: stripe.String("*refund*")}
		events := f.listEvents(t, p)
		if got := eventTypesOf(events); !slices.Equal(got, []string{"charge.refunded", "refund.created"}) || events[0].Account != "acct_1" {
			t.Errorf("events %v", got)
		}
	})
}
