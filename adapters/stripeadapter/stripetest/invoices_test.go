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

// listInvoiceIDs lists through stripe-go's auto-paginating iterator.
func (f *fixture) listInvoiceIDs(t testing.TB, params *stripe.InvoiceListParams) []string {
	t.Helper()
	var ids []string
	for in, err := range f.sc.V1Invoices.List(context.Background(), params) {
		if err != nil {
			t.Fatalf("listing invoices: %v", err)
		}
		ids = append(ids, in.ID)
	}
	return ids
}

func TestRetrieveInvoice(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	sub := f.srv.AddSubscription(Subscription{ID: "sub_1", Customer: "cus_1", Currency: "eur"})
	created := t0.Add(-time.Hour)
	f.srv.AddInvoice(Invoice{ID: "in_paid", Subscription: sub, Status: stripe.InvoiceStatusPaid, Created: created, AmountDue: 1200, Metadata: map[string]string{"k": "v"}})
	draft := f.srv.AddInvoice(Invoice{AmountDue: 500, AmountPaid: 200})

	t.Run("a subscription's invoice names it under parent, as API version basil does", func(t *testing.T) {
		in, err := f.sc.V1Invoices.Retrieve(ctx, "in_paid", nil)
		if err != nil {
			t.Fatal(err)
		}
		if in.ID != "in_paid" || in.Object != "invoice" || in.Status != stripe.InvoiceStatusPaid || in.AmountDue != 1200 ||
			in.AmountPaid != 1200 || in.AmountRemaining != 0 || in.Currency != "eur" || in.Customer.ID != "cus_1" ||
			in.Created != created.Unix() || in.Metadata["k"] != "v" || in.StatusTransitions.PaidAt != created.Unix() ||
			in.StatusTransitions.FinalizedAt != created.Unix() || in.StatusTransitions.VoidedAt != 0 {
			t.Errorf("got %+v", in)
		}
		if in.Parent == nil || in.Parent.Type != "subscription_details" || in.Parent.SubscriptionDetails.Subscription.ID != sub {
			t.Errorf("parent %+v", in.Parent)
		}
	})
	t.Run("an invoice without a subscription has no parent; defaults apply", func(t *testing.T) {
		in, err := f.sc.V1Invoices.Retrieve(ctx, draft, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(in.ID, "in_") || in.Status != stripe.InvoiceStatusDraft || in.Parent != nil || in.Currency != "usd" ||
			in.AmountDue != 500 || in.AmountPaid != 200 || in.AmountRemaining != 300 || in.StatusTransitions.FinalizedAt != 0 {
			t.Errorf("got %+v", in)
		}
	})
	t.Run("the subscription's latest_invoice is its newest invoice, expandable both ways", func(t *testing.T) {
		f.srv.AddInvoice(Invoice{ID: "in_older", Subscription: sub, Created: created.Add(-time.Hour)})
		p := &stripe.SubscriptionRetrieveParams{}
		p.AddExpand("latest_invoice")
		s, err := f.sc.V1Subscriptions.Retrieve(ctx, sub, p)
		if err != nil {
			t.Fatal(err)
		}
		if s.LatestInvoice == nil || s.LatestInvoice.ID != "in_paid" || s.LatestInvoice.AmountPaid != 1200 {
			t.Errorf("latest invoice %+v", s.LatestInvoice)
		}
		ip := &stripe.InvoiceRetrieveParams{}
		ip.AddExpand("parent.subscription_details.subscription")
		in, err := f.sc.V1Invoices.Retrieve(ctx, "in_paid", ip)
		if err != nil {
			t.Fatal(err)
		}
		if s := in.Parent.SubscriptionDetails.Subscription; s.Object != "subscription" || s.Status != stripe.SubscriptionStatusActive {
			t.Errorf("expanded subscription %+v", s)
		}
	})
	t.Run("an unknown id is a 404", func(t *testing.T) {
		_, err := f.sc.V1Invoices.Retrieve(ctx, "in_x", nil)
		if se := stripeError(t, err, http.StatusNotFound); se.Msg != "No such invoice: 'in_x'" {
			t.Errorf("got %+v", se)
		}
	})
}

func TestListInvoicesFilters(t *testing.T) {
	f := newFixture(t)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	s1 := f.srv.AddSubscription(Subscription{Customer: "cus_1"})
	s2 := f.srv.AddSubscription(Subscription{Customer: "cus_2"})
	a := f.srv.AddInvoice(Invoice{Subscription: s1, Status: stripe.InvoiceStatusPaid, Created: at(1)})
	b := f.srv.AddInvoice(Invoice{Subscription: s2, Status: stripe.InvoiceStatusOpen, Created: at(2)})
	c := f.srv.AddInvoice(Invoice{Subscription: s1, Status: stripe.InvoiceStatusOpen, Created: at(3)})
	d := f.srv.AddInvoice(Invoice{Customer: "cus_2", Status: stripe.InvoiceStatusVoid, Created: at(4)})
	for _, tc := range []struct {
		name   string
		params stripe.InvoiceListParams
		want   []string
	}{
		{"every invoice, newest first", stripe.InvoiceListParams{}, []string{d, c, b, a}},
		{"by status", stripe.InvoiceListParams{Status: stripe.String("open")}, []string{c, b}},
		{"by subscription", stripe.InvoiceListParams{Subscription: stripe.String(s1)}, []string{c, a}},
		{"by customer, the subscription's included", stripe.InvoiceListParams{Customer: stripe.String("cus_2")}, []string{d, b}},
		{"by created", stripe.InvoiceListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: at(2).Unix(), LesserThan: at(4).Unix()}}, []string{c, b}},
		{"filters combine, in pages of one", stripe.InvoiceListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(1)}, Subscription: stripe.String(s1), Status: stripe.String("paid")}, []string{a}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := f.listInvoiceIDs(t, &tc.params); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("an unknown status is Stripe's 400", func(t *testing.T) {
		err := f.call("/v1/invoices", &stripe.InvoiceListParams{Status: stripe.String("deleted")}, "", &stripe.InvoiceList{})
		if se := stripeError(t, err, http.StatusBadRequest); se.Param != "status" {
			t.Errorf("got %+v", se)
		}
	})
}

func TestInvoiceChangesRecordEvents(t *testing.T) {
	f, now := newClockFixture(t)
	id := f.srv.AddInvoice(Invoice{AmountDue: 1000, Created: t0.Add(-time.Hour)})
	last := func(t *testing.T) (string, *stripe.Invoice) {
		t.Helper()
		events := f.listEvents(t, &stripe.EventListParams{Type: stripe.String("invoice.*")})
		in := &stripe.Invoice{}
		if err := json.Unmarshal(events[0].Data.Raw, in); err != nil {
			t.Fatal(err)
		}
		return string(events[0].Type), in
	}
	if typ, in := last(t); typ != "invoice.created" || in.ID != id {
		t.Fatalf("first event %s %+v", typ, in)
	}
	t.Run("a draft must be finalized first", func(t *testing.T) {
		if err := f.srv.SetInvoiceStatus(id, stripe.InvoiceStatusPaid); err == nil {
			t.Error("a draft was paid")
		}
		if err := f.srv.FailInvoicePayment(id); err == nil {
			t.Error("a draft's payment failed")
		}
	})
	t.Run("finalizing records invoice.finalized with finalized_at", func(t *testing.T) {
		*now = t0.Add(time.Minute)
		if err := f.srv.SetInvoiceStatus(id, stripe.InvoiceStatusOpen); err != nil {
			t.Fatal(err)
		}
		if typ, in := last(t); typ != "invoice.finalized" || in.Status != stripe.InvoiceStatusOpen || in.StatusTransitions.FinalizedAt != now.Unix() {
			t.Errorf("%s %+v", typ, in)
		}
	})
	t.Run("a failed payment records invoice.payment_failed and counts the attempt", func(t *testing.T) {
		if err := f.srv.FailInvoicePayment(id); err != nil {
			t.Fatal(err)
		}
		if typ, in := last(t); typ != "invoice.payment_failed" || in.AttemptCount != 1 || !in.Attempted || in.Status != stripe.InvoiceStatusOpen {
			t.Errorf("%s %+v", typ, in)
		}
	})
	t.Run("a partial payment records invoice.updated", func(t *testing.T) {
		if err := f.srv.SetInvoiceAmountPaid(id, 400); err != nil {
			t.Fatal(err)
		}
		if typ, in := last(t); typ != "invoice.updated" || in.AmountPaid != 400 || in.AmountRemaining != 600 {
			t.Errorf("%s %+v", typ, in)
		}
		if err := f.srv.SetInvoiceAmountPaid(id, 1001); err == nil {
			t.Error("more than the amount due was paid")
		}
	})
	t.Run("uncollectible, then paid: invoice.marked_uncollectible, invoice.paid and payment_succeeded", func(t *testing.T) {
		*now = t0.Add(2 * time.Minute)
		if err := f.srv.SetInvoiceStatus(id, stripe.InvoiceStatusUncollectible); err != nil {
			t.Fatal(err)
		}
		if typ, in := last(t); typ != "invoice.marked_uncollectible" || in.StatusTransitions.MarkedUncollectibleAt != now.Unix() {
			t.Errorf("%s %+v", typ, in)
		}
		if err := f.srv.SetInvoiceStatus(id, stripe.InvoiceStatusPaid); err != nil {
			t.Fatal(err)
		}
		p := &stripe.EventListParams{Type: stripe.String("invoice.*"), CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: now.Unix()}}
		if got := eventTypesOf(f.listEvents(t, p)); !slices.Equal(got, []string{"invoice.payment_succeeded", "invoice.paid", "invoice.marked_uncollectible"}) {
			t.Errorf("events %v", got)
		}
		if _, in := last(t); in.AmountPaid != 1000 || in.AmountRemaining != 0 || in.StatusTransitions.PaidAt != now.Unix() {
			t.Errorf("paid %+v", in)
		}
	})
	t.Run("paid is final", func(t *testing.T) {
		for _, status := range []stripe.InvoiceStatus{stripe.InvoiceStatusVoid, stripe.InvoiceStatusOpen} {
			if err := f.srv.SetInvoiceStatus(id, status); err == nil {
				t.Errorf("a paid invoice became %s", status)
			}
		}
	})
	t.Run("voiding records invoice.voided", func(t *testing.T) {
		v := f.srv.AddInvoice(Invoice{Status: stripe.InvoiceStatusOpen, AmountDue: 5})
		if err := f.srv.SetInvoiceStatus(v, stripe.InvoiceStatusVoid); err != nil {
			t.Fatal(err)
		}
		if typ, in := last(t); typ != "invoice.voided" || in.ID != v || in.StatusTransitions.VoidedAt != now.Unix() {
			t.Errorf("%s %+v", typ, in)
		}
	})
	t.Run("a broken fixture panics", func(t *testing.T) {
		for name, inv := range map[string]Invoice{
			"an unknown subscription":        {Subscription: "sub_nope"},
			"another account's subscription": {Account: "acct_1", Subscription: f.srv.AddSubscription(Subscription{})},
			"paid more than due":             {AmountDue: 1, AmountPaid: 2},
			"an unknown status":              {Status: "deleted"},
		} {
			t.Run(name, func(t *testing.T) {
				defer func() {
					if recover() == nil {
						t.Error("no panic")
					}
				}()
				f.srv.AddInvoice(inv)
			})
		}
	})
}
