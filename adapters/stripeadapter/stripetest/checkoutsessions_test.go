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

// listSessionIDs lists through stripe-go's auto-paginating iterator.
func (f *fixture) listSessionIDs(t testing.TB, params *stripe.CheckoutSessionListParams) []string {
	t.Helper()
	var ids []string
	for cs, err := range f.sc.V1CheckoutSessions.List(context.Background(), params) {
		if err != nil {
			t.Fatalf("listing checkout sessions: %v", err)
		}
		ids = append(ids, cs.ID)
	}
	return ids
}

func TestRetrieveCheckoutSession(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	pi := f.srv.AddPaymentIntent(PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 2500, Currency: "eur"})
	created := t0.Add(-time.Hour)
	f.srv.AddCheckoutSession(CheckoutSession{
		ID: "cs_test_full", Status: stripe.CheckoutSessionStatusComplete, AmountTotal: 2500, Currency: "eur",
		PaymentIntent: pi, Customer: "cus_1", ClientReferenceID: "order-7", Created: created, Metadata: map[string]string{"k": "v"},
	})
	open := f.srv.AddCheckoutSession(CheckoutSession{AmountTotal: 100})

	t.Run("a known session is returned with its fields", func(t *testing.T) {
		cs, err := f.sc.V1CheckoutSessions.Retrieve(ctx, "cs_test_full", nil)
		if err != nil {
			t.Fatal(err)
		}
		if cs.ID != "cs_test_full" || cs.Object != "checkout.session" || cs.Status != stripe.CheckoutSessionStatusComplete ||
			cs.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid || cs.AmountTotal != 2500 || cs.Currency != "eur" ||
			cs.PaymentIntent == nil || cs.PaymentIntent.ID != pi || cs.Customer.ID != "cus_1" || cs.ClientReferenceID != "order-7" ||
			cs.Created != created.Unix() || cs.ExpiresAt != created.Add(24*time.Hour).Unix() || cs.Mode != stripe.CheckoutSessionModePayment ||
			cs.Metadata["k"] != "v" || cs.URL != "" {
			t.Errorf("got %+v", cs)
		}
	})
	t.Run("a session added with zero values is open and unpaid, with a test-mode id", func(t *testing.T) {
		cs, err := f.sc.V1CheckoutSessions.Retrieve(ctx, open, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(cs.ID, "cs_test_") || len(cs.ID) != 66 || cs.Status != stripe.CheckoutSessionStatusOpen ||
			cs.PaymentStatus != stripe.CheckoutSessionPaymentStatusUnpaid || cs.PaymentIntent != nil || cs.Customer != nil || cs.URL == "" {
			t.Errorf("got %+v", cs)
		}
	})
	t.Run("payment_intent expands to the intent", func(t *testing.T) {
		p := &stripe.CheckoutSessionRetrieveParams{}
		p.AddExpand("payment_intent.latest_charge")
		cs, err := f.sc.V1CheckoutSessions.Retrieve(ctx, "cs_test_full", p)
		if err != nil {
			t.Fatal(err)
		}
		if cs.PaymentIntent.Amount != 2500 || cs.PaymentIntent.LatestCharge == nil || cs.PaymentIntent.LatestCharge.Amount != 2500 {
			t.Errorf("intent %+v", cs.PaymentIntent)
		}
	})
	t.Run("an unknown id is a 404", func(t *testing.T) {
		_, err := f.sc.V1CheckoutSessions.Retrieve(ctx, "cs_test_x", nil)
		if se := stripeError(t, err, http.StatusNotFound); se.Msg != "No such checkout.session: 'cs_test_x'" {
			t.Errorf("got %+v", se)
		}
	})
}

func TestListCheckoutSessionsFilters(t *testing.T) {
	f := newFixture(t)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	pi := f.srv.AddPaymentIntent(PaymentIntent{Amount: 1})
	a := f.srv.AddCheckoutSession(CheckoutSession{Created: at(1), PaymentIntent: pi, Status: stripe.CheckoutSessionStatusComplete})
	b := f.srv.AddCheckoutSession(CheckoutSession{Created: at(2)})
	c := f.srv.AddCheckoutSession(CheckoutSession{Created: at(3), Status: stripe.CheckoutSessionStatusExpired})
	d := f.srv.AddCheckoutSession(CheckoutSession{Created: at(4)})
	for _, tc := range []struct {
		name   string
		params stripe.CheckoutSessionListParams
		want   []string
	}{
		{"every session, newest first", stripe.CheckoutSessionListParams{}, []string{d, c, b, a}},
		{"by status", stripe.CheckoutSessionListParams{Status: stripe.String("open")}, []string{d, b}},
		{"by payment intent", stripe.CheckoutSessionListParams{PaymentIntent: stripe.String(pi)}, []string{a}},
		{"by created, in pages of one", stripe.CheckoutSessionListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(1)}, CreatedRange: &stripe.RangeQueryParams{LesserThanOrEqual: at(3).Unix()}}, []string{c, b, a}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := f.listSessionIDs(t, &tc.params); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("an unknown status is Stripe's 400", func(t *testing.T) {
		err := f.call("/v1/checkout/sessions", &stripe.CheckoutSessionListParams{Status: stripe.String("paid")}, "", &stripe.CheckoutSessionList{})
		if se := stripeError(t, err, http.StatusBadRequest); se.Param != "status" {
			t.Errorf("got %+v", se)
		}
	})
}

func TestCheckoutSessionChangesRecordEvents(t *testing.T) {
	f, now := newClockFixture(t)
	last := func(t *testing.T) (string, *stripe.CheckoutSession) {
		t.Helper()
		events := f.listEvents(t, &stripe.EventListParams{Type: stripe.String("checkout.session.*")})
		if len(events) == 0 {
			t.Fatal("no checkout.session events")
		}
		cs := &stripe.CheckoutSession{}
		if err := json.Unmarshal(events[0].Data.Raw, cs); err != nil {
			t.Fatal(err)
		}
		if events[0].Created != now.Unix() {
			t.Errorf("event at %d, want %d", events[0].Created, now.Unix())
		}
		return string(events[0].Type), cs
	}
	id := f.srv.AddCheckoutSession(CheckoutSession{AmountTotal: 100})
	if events := f.listEvents(t, &stripe.EventListParams{Type: stripe.String("checkout.session.*")}); len(events) != 0 {
		t.Fatalf("creating a session recorded %v, Stripe sends no event", eventTypesOf(events))
	}

	t.Run("completing unpaid, then the async payment succeeding", func(t *testing.T) {
		*now = t0.Add(time.Minute)
		if err := f.srv.CompleteCheckoutSession(id, stripe.CheckoutSessionPaymentStatusUnpaid); err != nil {
			t.Fatal(err)
		}
		if typ, cs := last(t); typ != "checkout.session.completed" || cs.Status != stripe.CheckoutSessionStatusComplete || cs.PaymentStatus != stripe.CheckoutSessionPaymentStatusUnpaid {
			t.Errorf("%s %+v", typ, cs)
		}
		*now = t0.Add(time.Hour)
		if err := f.srv.SettleCheckoutSession(id, true); err != nil {
			t.Fatal(err)
		}
		if typ, cs := last(t); typ != "checkout.session.async_payment_succeeded" || cs.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid {
			t.Errorf("%s %+v", typ, cs)
		}
		if err := f.srv.SettleCheckoutSession(id, true); err == nil {
			t.Error("a paid session settled again")
		}
		if err := f.srv.ExpireCheckoutSession(id); err == nil {
			t.Error("a complete session expired")
		}
	})
	t.Run("an async payment that fails stays unpaid", func(t *testing.T) {
		other := f.srv.AddCheckoutSession(CheckoutSession{})
		if err := f.srv.CompleteCheckoutSession(other, stripe.CheckoutSessionPaymentStatusUnpaid); err != nil {
			t.Fatal(err)
		}
		if err := f.srv.SettleCheckoutSession(other, false); err != nil {
			t.Fatal(err)
		}
		if typ, cs := last(t); typ != "checkout.session.async_payment_failed" || cs.PaymentStatus != stripe.CheckoutSessionPaymentStatusUnpaid || cs.ID != other {
			t.Errorf("%s %+v", typ, cs)
		}
	})
	t.Run("expiring an open session records checkout.session.expired", func(t *testing.T) {
		other := f.srv.AddCheckoutSession(CheckoutSession{})
		if err := f.srv.ExpireCheckoutSession(other); err != nil {
			t.Fatal(err)
		}
		if typ, cs := last(t); typ != "checkout.session.expired" || cs.Status != stripe.CheckoutSessionStatusExpired || cs.URL != "" {
			t.Errorf("%s %+v", typ, cs)
		}
		if err := f.srv.CompleteCheckoutSession(other, stripe.CheckoutSessionPaymentStatusPaid); err == nil {
			t.Error("an expired session completed")
		}
	})
	t.Run("a broken fixture panics", func(t *testing.T) {
		for name, cs := range map[string]CheckoutSession{
			"an unknown intent":        {PaymentIntent: "pi_nope"},
			"another account's intent": {Account: "acct_1", PaymentIntent: f.srv.AddPaymentIntent(PaymentIntent{})},
			"an unknown status":        {Status: "paid"},
			"a duplicate id":           {ID: id},
		} {
			t.Run(name, func(t *testing.T) {
				defer func() {
					if recover() == nil {
						t.Error("no panic")
					}
				}()
				f.srv.AddCheckoutSession(cs)
			})
		}
	})
}
