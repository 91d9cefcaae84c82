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

// listEvents lists through stripe-go's auto-paginating iterator.
func (f *fixture) listEvents(t testing.TB, params *stripe.EventListParams) []*stripe.Event {
	t.Helper()
	var out []*stripe.Event
	for e, err := range f.sc.V1Events.List(context.Background(), params) {
		if err != nil {
			t.Fatalf("listing events: %v", err)
		}
		out = append(out, e)
	}
	return out
}

func eventTypesOf(events []*stripe.Event) []string {
	return idsOf(events, func(e *stripe.Event) string { return string(e.Type) })
}

func TestStatusChangesRecordEvents(t *testing.T) {
	for _, tc := range []struct {
		status stripe.PaymentIntentStatus
		want   string // "" for no event
		charge bool   // the change creates the charge, recording charge.succeeded first
	}{
		{stripe.PaymentIntentStatusSucceeded, "payment_intent.succeeded", true},
		{stripe.PaymentIntentStatusCanceled, "payment_intent.canceled", false},
		{stripe.PaymentIntentStatusProcessing, "payment_intent.processing", false},
		{stripe.PaymentIntentStatusRequiresAction, "payment_intent.requires_action", false},
		{stripe.PaymentIntentStatusRequiresCapture, "payment_intent.amount_capturable_updated", true},
		{stripe.PaymentIntentStatusRequiresPaymentMethod, "payment_intent.payment_failed", false},
		{stripe.PaymentIntentStatusRequiresConfirmation, "", false},
	} {
		name := "a change to " + string(tc.status) + " records " + tc.want
		if tc.want == "" {
			name = "a change to " + string(tc.status) + " records no event"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			created := t0.Add(-time.Hour)
			id := f.srv.AddPaymentIntent(PaymentIntent{Created: created, Amount: 300, Status: stripe.PaymentIntentStatusRequiresConfirmation})
			at := t0.Add(-time.Minute)
			if err := f.srv.SetStatusAt(id, tc.status, at); err != nil {
				t.Fatal(err)
			}
			events := f.listEvents(t, &stripe.EventListParams{Type: stripe.String("payment_intent.*")})
			want := []string{"payment_intent.created"}
			if tc.want != "" {
				want = []string{tc.want, "payment_intent.created"}
			}
			charges := eventTypesOf(f.listEvents(t, &stripe.EventListParams{Type: stripe.String("charge.*")}))
			if wantCharges := tc.charge; (len(charges) == 1 && charges[0] == "charge.succeeded") != wantCharges || len(charges) > 1 {
				t.Errorf("charge events %v, want charge.succeeded: %v", charges, wantCharges)
			}
			if got := eventTypesOf(events); !slices.Equal(got, want) {
				t.Fatalf("events %v, want %v", got, want)
			}
			created0 := events[len(events)-1]
			if created0.Created != created.Unix() || created0.Data.Object["status"] != "requires_confirmation" {
				t.Errorf("created event: %d %v", created0.Created, created0.Data.Object["status"])
			}
			if tc.want == "" {
				return
			}
			e := events[0]
			var pi stripe.PaymentIntent
			if err := json.Unmarshal(e.Data.Raw, &pi); err != nil {
				t.Fatal(err)
			}
			if e.Created != at.Unix() || e.Object != "event" || e.APIVersion != stripe.APIVersion || e.Livemode ||
				e.PendingWebhooks != 0 || e.Request == nil || e.Account != "" || pi.ID != id || pi.Status != tc.status {
				t.Errorf("event %+v, object %+v", e, pi)
			}
		})
	}
	t.Run("SetStatus records its event at Options.Now", func(t *testing.T) {
		f := newFixture(t)
		id := f.srv.AddPaymentIntent(PaymentIntent{Created: t0.Add(-time.Hour)})
		if err := f.srv.SetStatus(id, stripe.PaymentIntentStatusSucceeded); err != nil {
			t.Fatal(err)
		}
		if e := f.listEvents(t, nil)[0]; e.Created != t0.Unix() || e.Type != "payment_intent.succeeded" {
			t.Errorf("got %s at %d", e.Type, e.Created)
		}
	})
	t.Run("an event keeps the intent as it was", func(t *testing.T) {
		f := newFixture(t)
		id := f.srv.AddPaymentIntent(PaymentIntent{Created: t0.Add(-time.Hour)})
		_ = f.srv.SetStatusAt(id, stripe.PaymentIntentStatusProcessing, t0.Add(-2*time.Minute))
		_ = f.srv.SetStatusAt(id, stripe.PaymentIntentStatusSucceeded, t0.Add(-time.Minute))
		var got []any
		for _, e := range f.listEvents(t, &stripe.EventListParams{Type: stripe.String("payment_intent.*")}) {
			got = append(got, e.Data.Object["status"])
		}
		if want := []any{"succeeded", "processing", "requires_payment_method"}; !slices.Equal(got, want) {
			t.Errorf("snapshots %v, want %v", got, want)
		}
	})
}

func TestListEvents(t *testing.T) {
	f := newFixture(t)
	// Three intents created at t0-3m, t0-2m, t0-1m; then status changes at t0-50s, t0-40s, ...
	ids := f.srv.AddPaymentIntents([]PaymentIntent{
		{Created: t0.Add(-3 * time.Minute)}, {Created: t0.Add(-2 * time.Minute)}, {Created: t0.Add(-time.Minute)},
	})
	changes := []stripe.PaymentIntentStatus{
		stripe.PaymentIntentStatusProcessing, stripe.PaymentIntentStatusSucceeded, stripe.PaymentIntentStatusCanceled,
	}
	for i, st := range changes {
		if err := f.srv.SetStatusAt(ids[i], st, t0.Add(time.Duration(i*10-50)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	connected := f.srv.AddPaymentIntent(PaymentIntent{Account: "acct_1", Created: t0})
	_ = f.srv.SetStatus(connected, stripe.PaymentIntentStatusSucceeded)
	// Succeeding charges an intent: charge.succeeded is recorded just before
	// payment_intent.succeeded.
	all := []string{
		"payment_intent.canceled", "payment_intent.succeeded", "charge.succeeded", "payment_intent.processing",
		"payment_intent.created", "payment_intent.created", "payment_intent.created",
	}
	intentEvents := slices.DeleteFunc(slices.Clone(all), func(typ string) bool { return typ == "charge.succeeded" })
	wildcard := stripe.EventListParams{Type: stripe.String("payment_intent.*")}

	for _, tc := range []struct {
		name   string
		params stripe.EventListParams
		want   []string
	}{
		{"events are listed newest first", stripe.EventListParams{}, all},
		{"an exact type filters", stripe.EventListParams{Type: stripe.String("payment_intent.created")}, all[4:]},
		{"a trailing wildcard matches a group", wildcard, intentEvents},
		{"a wildcard inside a type matches", stripe.EventListParams{Type: stripe.String("payment_intent.*ed")}, []string{"payment_intent.canceled", "payment_intent.succeeded", "payment_intent.created", "payment_intent.created", "payment_intent.created"}},
		{"a wildcard of another object matches only its events", stripe.EventListParams{Type: stripe.String("charge.*")}, []string{"charge.succeeded"}},
		{"a wildcard of an object without events matches nothing", stripe.EventListParams{Type: stripe.String("customer.*")}, nil},
		{"types lists any of several exact types", stripe.EventListParams{Types: []*string{stripe.String("payment_intent.succeeded"), stripe.String("payment_intent.canceled")}}, all[:2]},
		{"a created range selects by event time", stripe.EventListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThan: t0.Add(-2 * time.Minute).Unix(), LesserThanOrEqual: t0.Add(-40 * time.Second).Unix()}}, []string{"payment_intent.succeeded", "charge.succeeded", "payment_intent.processing", "payment_intent.created"}},
		{"delivery_success is accepted", stripe.EventListParams{DeliverySuccess: stripe.Bool(true)}, all},
		{"a connected account sees its own events", stripe.EventListParams{ListParams: stripe.ListParams{StripeAccount: stripe.String("acct_1")}}, []string{"payment_intent.succeeded", "charge.succeeded", "payment_intent.created"}},
		{"a small limit pages through a filtered list", stripe.EventListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(1)}, Type: stripe.String("payment_intent.created")}, all[4:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := eventTypesOf(f.listEvents(t, &tc.params)); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("has_more is exact for a filtered page in both directions", func(t *testing.T) {
		p := stripe.EventListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(2)}, Type: stripe.String("payment_intent.created")}
		first, err := f.eventPage(t, &p)
		if err != nil || len(first.Data) != 2 || !first.HasMore {
			t.Fatalf("first page: %d items, has_more %v, %v", len(first.Data), first.HasMore, err)
		}
		p.StartingAfter = stripe.String(first.Data[1].ID)
		second, err := f.eventPage(t, &p)
		if err != nil || len(second.Data) != 1 || second.HasMore {
			t.Fatalf("second page: %d items, has_more %v, %v", len(second.Data), second.HasMore, err)
		}
		p.StartingAfter, p.EndingBefore = nil, stripe.String(second.Data[0].ID)
		back, err := f.eventPage(t, &p)
		if err != nil || !slices.Equal(idsOf(back.Data, func(e *stripe.Event) string { return e.ID }), idsOf(first.Data, func(e *stripe.Event) string { return e.ID })) || back.HasMore {
			t.Fatalf("backward page: %v, has_more %v, %v", back.Data, back.HasMore, err)
		}
	})
	t.Run("an event is retrieved by id", func(t *testing.T) {
		want := f.listEvents(t, nil)[0]
		got, err := f.sc.V1Events.Retrieve(context.Background(), want.ID, nil)
		if err != nil || got.ID != want.ID || got.Type != want.Type || got.Data.Object["id"] != want.Data.Object["id"] {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("a connected account's event names the account and is hidden from the platform", func(t *testing.T) {
		p := &stripe.EventListParams{ListParams: stripe.ListParams{StripeAccount: stripe.String("acct_1")}}
		e := f.listEvents(t, p)[0]
		if e.Account != "acct_1" {
			t.Errorf("account = %q", e.Account)
		}
		_, err := f.sc.V1Events.Retrieve(context.Background(), e.ID, nil)
		stripeError(t, err, http.StatusNotFound)
	})
	t.Run("an unknown event is a 404 resource_missing", func(t *testing.T) {
		_, err := f.sc.V1Events.Retrieve(context.Background(), "evt_nope", nil)
		se := stripeError(t, err, http.StatusNotFound)
		if se.Code != stripe.ErrorCodeResourceMissing || se.Msg != "No such event: 'evt_nope'" {
			t.Errorf("got %+v", se)
		}
	})
	t.Run("type and types together are refused", func(t *testing.T) {
		p := stripe.EventListParams{Type: stripe.String("a"), Types: []*string{stripe.String("b")}}
		_, err := f.eventPage(t, &p)
		stripeError(t, err, http.StatusBadRequest)
	})
	t.Run("an unknown parameter is refused", func(t *testing.T) {
		p := stripe.EventListParams{}
		p.Filters.AddFilter("object", "", "payment_intent")
		_, err := f.eventPage(t, &p)
		if se := stripeError(t, err, http.StatusBadRequest); se.Param != "object" {
			t.Errorf("param = %q", se.Param)
		}
	})
	t.Run("a payment intent id is not an event cursor", func(t *testing.T) {
		p := stripe.EventListParams{ListParams: stripe.ListParams{StartingAfter: stripe.String(ids[0])}}
		_, err := f.eventPage(t, &p)
		if se := stripeError(t, err, http.StatusBadRequest); se.Param != "starting_after" || se.Code != stripe.ErrorCodeResourceMissing {
			t.Errorf("got %+v", se)
		}
	})
}

func TestWildcardMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"payment_intent.*", "payment_intent.succeeded", true},
		{"payment_intent.*", "payment_intent.", true},
		{"payment_intent.*", "charge.succeeded", false},
		{"*", "anything", true},
		{"*.succeeded", "charge.succeeded", true},
		{"a*b*b", "abb", true},
		{"a*b*b", "ab", false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
	} {
		t.Run(tc.pattern+" against "+tc.s, func(t *testing.T) {
			if got := wildcardMatch(strings.Split(tc.pattern, "*"), tc.s); got != tc.want {
				t.Errorf("got %v", got)
			}
		})
	}
}

// moneyEventTypes are the event types a money reconciler reads besides payment_intent.*: 18
// exact types, within the 20 that one request may name.
var moneyEventTypes = []string{
	"payment_intent.succeeded", "payment_intent.canceled", "payment_intent.processing",
	"payment_intent.payment_failed", "payment_intent.amount_capturable_updated", "payment_intent.requires_action",
	"charge.succeeded", "charge.captured", "charge.refunded", "charge.refund.updated",
	"refund.created", "refund.updated", "refund.failed",
	"charge.dispute.created", "charge.dispute.updated", "charge.dispute.closed",
	"charge.dispute.funds_withdrawn", "charge.dispute.funds_reinstated",
}

func TestMoneyEventTypes(t *testing.T) {
	f, now := newClockFixture(t)
	id := f.srv.AddPaymentIntent(PaymentIntent{Amount: 1000, Status: stripe.PaymentIntentStatusRequiresCapture})
	step := func() { *now = now.Add(time.Second) }
	step()
	_ = f.srv.SetStatus(id, stripe.PaymentIntentStatusSucceeded)
	step()
	rid, _ := f.srv.Refund(id, 100)
	step()
	_ = f.srv.SetRefundStatus(rid, stripe.RefundStatusFailed, "")
	step()
	did, _ := f.srv.Dispute(id, 0, stripe.DisputeStatusNeedsResponse, time.Time{})
	step()
	_ = f.srv.SetDisputeStatus(did, stripe.DisputeStatusUnderReview)
	step()
	_ = f.srv.SetDisputeStatus(did, stripe.DisputeStatusWon)

	want := []string{
		"charge.dispute.funds_reinstated", "charge.dispute.closed", "charge.dispute.updated",
		"charge.dispute.funds_withdrawn", "charge.dispute.created",
		"charge.refund.updated", "refund.failed", "refund.updated",
		"charge.refunded", "refund.created",
		"payment_intent.succeeded", "charge.captured",
	}
	types := make([]*string, len(moneyEventTypes))
	for i, typ := range moneyEventTypes {
		types[i] = stripe.String(typ)
	}
	t.Run("types names every money event and lists them newest first", func(t *testing.T) {
		if got := eventTypesOf(f.listEvents(t, &stripe.EventListParams{Types: types})); !slices.Equal(got, want) {
			t.Errorf("got %v\nwant %v", got, want)
		}
	})
	t.Run("more than 20 types are refused", func(t *testing.T) {
		p := &stripe.EventListParams{Types: append(slices.Clone(types), stripe.String("a"), stripe.String("b"), stripe.String("c"))}
		if se := stripeError(t, f.call("/v1/events", p, "", &stripe.EventList{}), http.StatusBadRequest); se.Param != "types" {
			t.Errorf("got %+v", se)
		}
	})
}
