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

// listSubscriptionIDs lists through stripe-go's auto-paginating iterator.
func (f *fixture) listSubscriptionIDs(t testing.TB, params *stripe.SubscriptionListParams) []string {
	t.Helper()
	var ids []string
	for sub, err := range f.sc.V1Subscriptions.List(context.Background(), params) {
		if err != nil {
			t.Fatalf("listing subscriptions: %v", err)
		}
		ids = append(ids, sub.ID)
	}
	return ids
}

// subscriptionEvent returns the newest event of the type and its subscription snapshot.
func (f *fixture) subscriptionEvent(t testing.TB, typ, account string) (*stripe.Event, *stripe.Subscription) {
	t.Helper()
	p := &stripe.EventListParams{Type: stripe.String(typ)}
	if account != "" {
		p.SetStripeAccount(account)
	}
	events := f.listEvents(t, p)
	if len(events) == 0 {
		t.Fatalf("no %s event", typ)
	}
	sub := &stripe.Subscription{}
	if err := json.Unmarshal(events[0].Data.Raw, sub); err != nil {
		t.Fatal(err)
	}
	return events[0], sub
}

func TestRetrieveSubscription(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	created := t0.Add(-48 * time.Hour)
	f.srv.AddSubscription(Subscription{
		ID: "sub_full", Customer: "cus_1", Status: stripe.SubscriptionStatusPastDue, Created: created,
		Currency: "eur", CurrentPeriodStart: t0.Add(-time.Hour), CurrentPeriodEnd: t0.Add(time.Hour),
		CancelAtPeriodEnd: true, Metadata: map[string]string{"plan": "pro"},
	})
	defaults := f.srv.AddSubscription(Subscription{})
	f.srv.AddSubscription(Subscription{ID: "sub_connected", Account: "acct_1"})

	t.Run("a known subscription is returned with all its fields, the period on its item", func(t *testing.T) {
		sub, err := f.sc.V1Subscriptions.Retrieve(ctx, "sub_full", nil)
		if err != nil {
			t.Fatal(err)
		}
		if sub.ID != "sub_full" || sub.Object != "subscription" || sub.Customer == nil || sub.Customer.ID != "cus_1" ||
			sub.Status != stripe.SubscriptionStatusPastDue || sub.Created != created.Unix() || sub.Currency != "eur" ||
			!sub.CancelAtPeriodEnd || sub.CancelAt != t0.Add(time.Hour).Unix() || sub.CanceledAt != created.Unix() ||
			sub.EndedAt != 0 || sub.Metadata["plan"] != "pro" || sub.Livemode || sub.LatestInvoice != nil {
			t.Errorf("got %+v", sub)
		}
		if sub.Items == nil || len(sub.Items.Data) != 1 {
			t.Fatalf("items %+v", sub.Items)
		}
		if it := sub.Items.Data[0]; it.CurrentPeriodStart != t0.Add(-time.Hour).Unix() || it.CurrentPeriodEnd != t0.Add(time.Hour).Unix() ||
			it.Subscription != "sub_full" || !strings.HasPrefix(it.ID, "si_") {
			t.Errorf("item %+v", it)
		}
	})
	t.Run("a subscription added with zero values gets defaults and a generated id", func(t *testing.T) {
		sub, err := f.sc.V1Subscriptions.Retrieve(ctx, defaults, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(sub.ID, "sub_") || len(sub.ID) != 28 || sub.Status != stripe.SubscriptionStatusActive ||
			sub.Currency != "usd" || sub.Created != t0.Unix() || !strings.HasPrefix(sub.Customer.ID, "cus_") ||
			sub.CancelAt != 0 || sub.CanceledAt != 0 || sub.CancelAtPeriodEnd {
			t.Errorf("got %+v", sub)
		}
		if it := sub.Items.Data[0]; it.CurrentPeriodStart != t0.Unix() || it.CurrentPeriodEnd != t0.AddDate(0, 1, 0).Unix() {
			t.Errorf("period %d–%d, want a month from t0", it.CurrentPeriodStart, it.CurrentPeriodEnd)
		}
	})
	t.Run("a subscription added as ended has ended_at, and canceled_at when canceled", func(t *testing.T) {
		canceled := f.srv.AddSubscription(Subscription{Status: stripe.SubscriptionStatusCanceled, Created: created, CanceledAt: t0})
		expired := f.srv.AddSubscription(Subscription{Status: stripe.SubscriptionStatusIncompleteExpired, Created: created})
		c, err := f.sc.V1Subscriptions.Retrieve(ctx, canceled, nil)
		if err != nil || c.CanceledAt != t0.Unix() || c.EndedAt != t0.Unix() {
			t.Errorf("canceled: %+v, %v", c, err)
		}
		e, err := f.sc.V1Subscriptions.Retrieve(ctx, expired, nil)
		if err != nil || e.CanceledAt != 0 || e.EndedAt != created.Unix() {
			t.Errorf("expired: %+v, %v", e, err)
		}
	})
	t.Run("an unknown id and another account's subscription are 404s", func(t *testing.T) {
		_, err := f.sc.V1Subscriptions.Retrieve(ctx, "sub_x", nil)
		if se := stripeError(t, err, http.StatusNotFound); se.Code != stripe.ErrorCodeResourceMissing || se.Msg != "No such subscription: 'sub_x'" {
			t.Errorf("got %+v", se)
		}
		_, err = f.sc.V1Subscriptions.Retrieve(ctx, "sub_connected", nil)
		stripeError(t, err, http.StatusNotFound)
		p := &stripe.SubscriptionRetrieveParams{}
		p.SetStripeAccount("acct_1")
		if sub, err := f.sc.V1Subscriptions.Retrieve(ctx, "sub_connected", p); err != nil || sub.ID != "sub_connected" {
			t.Fatalf("the owning account: %+v, %v", sub, err)
		}
	})
	t.Run("a path that cannot be expanded is Stripe's 400", func(t *testing.T) {
		p := &stripe.SubscriptionRetrieveParams{}
		p.AddExpand("bogus")
		_, err := f.sc.V1Subscriptions.Retrieve(ctx, "sub_full", p)
		if se := stripeError(t, err, http.StatusBadRequest); se.Msg != "This property cannot be expanded (bogus)." {
			t.Errorf("got %+v", se)
		}
	})
}

func TestListSubscriptionsByStatus(t *testing.T) {
	f := newFixture(t)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	active := f.srv.AddSubscription(Subscription{Created: at(1), Customer: "cus_a"})
	trialing := f.srv.AddSubscription(Subscription{Created: at(2), Status: stripe.SubscriptionStatusTrialing, Customer: "cus_b"})
	canceled := f.srv.AddSubscription(Subscription{Created: at(3), Status: stripe.SubscriptionStatusCanceled, Customer: "cus_a"})
	expired := f.srv.AddSubscription(Subscription{Created: at(4), Status: stripe.SubscriptionStatusIncompleteExpired, Customer: "cus_a"})
	pastDue := f.srv.AddSubscription(Subscription{Created: at(5), Status: stripe.SubscriptionStatusPastDue, Customer: "cus_b"})
	f.srv.AddSubscription(Subscription{Created: at(6), Account: "acct_1"})

	for _, tc := range []struct {
		name   string
		params stripe.SubscriptionListParams
		want   []string
	}{
		{"the default list hides canceled subscriptions, as Stripe's does", stripe.SubscriptionListParams{}, []string{pastDue, expired, trialing, active}},
		{"status=all returns every subscription", stripe.SubscriptionListParams{Status: stripe.String("all")}, []string{pastDue, expired, canceled, trialing, active}},
		{"status=canceled returns only canceled ones", stripe.SubscriptionListParams{Status: stripe.String("canceled")}, []string{canceled}},
		{"status=ended returns canceled and incomplete_expired", stripe.SubscriptionListParams{Status: stripe.String("ended")}, []string{expired, canceled}},
		{"a status returns its subscriptions", stripe.SubscriptionListParams{Status: stripe.String("trialing")}, []string{trialing}},
		{"customer filters, still hiding canceled ones", stripe.SubscriptionListParams{Customer: stripe.String("cus_a")}, []string{expired, active}},
		{"customer and status=all", stripe.SubscriptionListParams{Customer: stripe.String("cus_a"), Status: stripe.String("all")}, []string{expired, canceled, active}},
		{"created filters", stripe.SubscriptionListParams{Status: stripe.String("all"), CreatedRange: &stripe.RangeQueryParams{GreaterThan: at(2).Unix(), LesserThanOrEqual: at(4).Unix()}}, []string{expired, canceled}},
		{"small pages page through the filtered list", stripe.SubscriptionListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(1)}}, []string{pastDue, expired, trialing, active}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := f.listSubscriptionIDs(t, &tc.params); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("a connected account sees only its own", func(t *testing.T) {
		p := &stripe.SubscriptionListParams{}
		p.SetStripeAccount("acct_1")
		if got := f.listSubscriptionIDs(t, p); len(got) != 1 {
			t.Errorf("got %v", got)
		}
	})
	t.Run("a cursor the filter hides still positions the page", func(t *testing.T) {
		list := &stripe.SubscriptionList{}
		p := &stripe.SubscriptionListParams{ListParams: stripe.ListParams{StartingAfter: stripe.String(canceled)}}
		if err := f.call("/v1/subscriptions", p, "", list); err != nil {
			t.Fatal(err)
		}
		if got := idsOf(list.Data, func(s *stripe.Subscription) string { return s.ID }); !slices.Equal(got, []string{trialing, active}) {
			t.Errorf("got %v", got)
		}
	})
	t.Run("an unknown status and unmodeled filters are Stripe's 400s", func(t *testing.T) {
		err := f.call("/v1/subscriptions", &stripe.SubscriptionListParams{Status: stripe.String("bogus")}, "", &stripe.SubscriptionList{})
		if se := stripeError(t, err, http.StatusBadRequest); se.Param != "status" || !strings.HasPrefix(se.Msg, "Invalid status: must be one of active, all, canceled, ended") {
			t.Errorf("got %+v", se)
		}
		err = f.call("/v1/subscriptions", &stripe.SubscriptionListParams{Price: stripe.String("price_1")}, "", &stripe.SubscriptionList{})
		if se := stripeError(t, err, http.StatusBadRequest); se.Code != "parameter_unknown" || se.Param != "price" {
			t.Errorf("got %+v", se)
		}
	})
}

func TestSubscriptionChangesRecordEvents(t *testing.T) {
	f, now := newClockFixture(t)
	id := f.srv.AddSubscription(Subscription{Account: "acct_1", Created: t0.Add(-time.Hour)})
	e, snap := f.subscriptionEvent(t, "customer.subscription.created", "acct_1")
	if e.Created != t0.Add(-time.Hour).Unix() || snap.ID != id || e.Account != "acct_1" {
		t.Fatalf("created event %+v", e)
	}

	t.Run("cancel at period end sets cancel_at and canceled_at and records updated", func(t *testing.T) {
		*now = t0.Add(time.Minute)
		if err := f.srv.SetCancelAtPeriodEnd(id, true); err != nil {
			t.Fatal(err)
		}
		_, snap := f.subscriptionEvent(t, "customer.subscription.updated", "acct_1")
		sub, _ := f.srv.Subscription(id)
		if !snap.CancelAtPeriodEnd || snap.CancelAt != sub.CurrentPeriodEnd.Unix() || snap.CanceledAt != now.Unix() ||
			snap.Status != stripe.SubscriptionStatusActive {
			t.Errorf("snapshot %+v", snap)
		}
		if err := f.srv.SetCancelAtPeriodEnd(id, false); err != nil {
			t.Fatal(err)
		}
		if _, snap := f.subscriptionEvent(t, "customer.subscription.updated", "acct_1"); snap.CancelAtPeriodEnd || snap.CancelAt != 0 || snap.CanceledAt != 0 {
			t.Errorf("taken back: %+v", snap)
		}
	})
	t.Run("a new period moves the item's period", func(t *testing.T) {
		start, end := t0.Add(24*time.Hour), t0.Add(48*time.Hour)
		if err := f.srv.SetSubscriptionPeriod(id, start, end); err != nil {
			t.Fatal(err)
		}
		_, snap := f.subscriptionEvent(t, "customer.subscription.updated", "acct_1")
		if it := snap.Items.Data[0]; it.CurrentPeriodStart != start.Unix() || it.CurrentPeriodEnd != end.Unix() {
			t.Errorf("item %+v", it)
		}
		if err := f.srv.SetSubscriptionPeriod(id, end, start); err == nil {
			t.Error("a period that ends before it starts was accepted")
		}
	})
	t.Run("pausing and resuming record paused and resumed after updated", func(t *testing.T) {
		for _, status := range []stripe.SubscriptionStatus{stripe.SubscriptionStatusPaused, stripe.SubscriptionStatusActive} {
			if err := f.srv.SetSubscriptionStatus(id, status); err != nil {
				t.Fatal(err)
			}
		}
		p := &stripe.EventListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: now.Unix()}}
		p.SetStripeAccount("acct_1")
		got := eventTypesOf(f.listEvents(t, p))
		want := []string{"customer.subscription.resumed", "customer.subscription.updated", "customer.subscription.paused", "customer.subscription.updated"}
		if !slices.Equal(got[:4], want) {
			t.Errorf("events %v, want %v first", got, want)
		}
	})
	t.Run("canceling records deleted and ends the subscription for good", func(t *testing.T) {
		*now = t0.Add(time.Hour)
		if err := f.srv.SetSubscriptionStatus(id, stripe.SubscriptionStatusCanceled); err != nil {
			t.Fatal(err)
		}
		_, snap := f.subscriptionEvent(t, "customer.subscription.deleted", "acct_1")
		if snap.Status != stripe.SubscriptionStatusCanceled || snap.CanceledAt != now.Unix() || snap.EndedAt != now.Unix() {
			t.Errorf("snapshot %+v", snap)
		}
		if err := f.srv.SetSubscriptionStatus(id, stripe.SubscriptionStatusActive); err == nil {
			t.Error("a canceled subscription became active")
		}
		if err := f.srv.SetCancelAtPeriodEnd(id, true); err == nil {
			t.Error("a canceled subscription accepted cancel at period end")
		}
		p := &stripe.SubscriptionListParams{}
		p.SetStripeAccount("acct_1")
		if got := f.listSubscriptionIDs(t, p); len(got) != 0 {
			t.Errorf("the default list shows the canceled subscription: %v", got)
		}
	})
	t.Run("an event keeps the subscription as it was then", func(t *testing.T) {
		_, snap := f.subscriptionEvent(t, "customer.subscription.created", "acct_1")
		if snap.Status != stripe.SubscriptionStatusActive || snap.CanceledAt != 0 || snap.CancelAtPeriodEnd {
			t.Errorf("the created event changed with the subscription: %+v", snap)
		}
	})
	t.Run("unknown ids and statuses are errors", func(t *testing.T) {
		if err := f.srv.SetSubscriptionStatus("sub_x", stripe.SubscriptionStatusActive); err == nil {
			t.Error("unknown id accepted")
		}
		if err := f.srv.SetSubscriptionStatus(id, "bogus"); err == nil {
			t.Error("unknown status accepted")
		}
	})
}

func TestAddSubscriptionRefusesBrokenFixtures(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	srv.AddSubscription(Subscription{ID: "sub_1"})
	for name, sub := range map[string]Subscription{
		"a duplicate id":                      {ID: "sub_1"},
		"an unknown status":                   {Status: "bogus"},
		"a period that ends before it starts": {CurrentPeriodStart: t0, CurrentPeriodEnd: t0.Add(-time.Second)},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			srv.AddSubscription(sub)
		})
	}
}
