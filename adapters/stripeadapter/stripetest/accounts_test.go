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

// listAccountIDs lists the platform's accounts through stripe-go's iterator.
func (f *fixture) listAccountIDs(t testing.TB, params *stripe.AccountListParams) []string {
	t.Helper()
	var ids []string
	for a, err := range f.sc.V1Accounts.List(context.Background(), params) {
		if err != nil {
			t.Fatalf("listing accounts: %v", err)
		}
		ids = append(ids, a.ID)
	}
	return ids
}

// accountInvalid asserts that err is Stripe's 403 for an account the platform cannot access.
func accountInvalid(t testing.TB, err error, id string) {
	t.Helper()
	se := stripeError(t, err, http.StatusForbidden)
	if se.Code != "account_invalid" || se.Type != stripe.ErrorTypeInvalidRequest ||
		!strings.Contains(se.Msg, "does not have access to account '"+id+"' (or that account does not exist)") ||
		strings.Contains(se.Msg, DefaultKey) {
		t.Errorf("got %+v", se)
	}
}

func TestAccounts(t *testing.T) {
	ctx := context.Background()
	f, now := newClockFixture(t)
	fresh := f.srv.AddAccount(Account{Created: t0.Add(-3 * time.Hour)})
	full := f.srv.AddAccount(Account{
		ID: "acct_1Full", Type: stripe.AccountTypeExpress, Created: t0.Add(-2 * time.Hour), Country: "DE",
		ChargesEnabled: true, PayoutsEnabled: true, DetailsSubmitted: true, Metadata: map[string]string{"shop": "7"},
	})
	f.srv.AddPaymentIntent(PaymentIntent{Account: "acct_1Implicit", Created: t0})

	t.Run("the platform retrieves an account with its fields", func(t *testing.T) {
		a, err := f.sc.V1Accounts.GetByID(ctx, full, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a.ID != full || a.Object != "account" || a.Type != stripe.AccountTypeExpress || a.Country != "DE" ||
			!a.ChargesEnabled || !a.PayoutsEnabled || !a.DetailsSubmitted || a.Created != t0.Add(-2*time.Hour).Unix() ||
			a.Metadata["shop"] != "7" || a.Requirements == nil || a.Requirements.DisabledReason != "" {
			t.Errorf("got %+v", a)
		}
	})
	t.Run("a zero Account is a new account that has not onboarded, with a generated id", func(t *testing.T) {
		a, err := f.sc.V1Accounts.GetByID(ctx, fresh, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(a.ID, "acct_") || len(a.ID) != 21 || a.Type != stripe.AccountTypeStandard ||
			a.ChargesEnabled || a.PayoutsEnabled || a.DetailsSubmitted {
			t.Errorf("got %+v", a)
		}
	})
	t.Run("an object added for an unknown account creates it, onboarded", func(t *testing.T) {
		a, ok := f.srv.Account("acct_1Implicit")
		if !ok || !a.ChargesEnabled || !a.PayoutsEnabled || !a.DetailsSubmitted || a.Type != stripe.AccountTypeStandard {
			t.Errorf("got %+v, %t", a, ok)
		}
	})
	t.Run("the platform lists its accounts newest first, by created", func(t *testing.T) {
		if got := f.listAccountIDs(t, nil); !slices.Equal(got, []string{"acct_1Implicit", full, fresh}) {
			t.Errorf("got %v", got)
		}
		p := &stripe.AccountListParams{CreatedRange: &stripe.RangeQueryParams{LesserThan: t0.Add(-time.Hour).Unix()}}
		p.Limit = stripe.Int64(1)
		if got := f.listAccountIDs(t, p); !slices.Equal(got, []string{full, fresh}) {
			t.Errorf("got %v", got)
		}
	})
	t.Run("an account reads itself but not another; only the platform lists accounts", func(t *testing.T) {
		p := &stripe.AccountRetrieveParams{}
		p.SetStripeAccount(full)
		if a, err := f.sc.V1Accounts.GetByID(ctx, full, p); err != nil || a.ID != full {
			t.Fatalf("got %+v, %v", a, err)
		}
		_, err := f.sc.V1Accounts.GetByID(ctx, fresh, p)
		accountInvalid(t, err, fresh)
		lp := &stripe.AccountListParams{}
		lp.SetStripeAccount(full)
		err = f.call("/v1/accounts", lp, full, &stripe.AccountList{})
		if se := stripeError(t, err, http.StatusBadRequest); !strings.HasPrefix(se.Msg, "Only Stripe Connect platforms") {
			t.Errorf("got %+v", se)
		}
	})
	t.Run("UpdateAccount changes the state and records account.updated on the account", func(t *testing.T) {
		*now = t0.Add(time.Minute)
		a, _ := f.srv.Account(full)
		a.ChargesEnabled, a.PayoutsEnabled, a.DisabledReason = false, false, "requirements.past_due"
		if err := f.srv.UpdateAccount(a); err != nil {
			t.Fatal(err)
		}
		got, err := f.sc.V1Accounts.GetByID(ctx, full, nil)
		if err != nil || got.ChargesEnabled || got.PayoutsEnabled || got.Requirements.DisabledReason != "requirements.past_due" ||
			got.Created != t0.Add(-2*time.Hour).Unix() {
			t.Fatalf("got %+v, %v", got, err)
		}
		p := &stripe.EventListParams{Type: stripe.String("account.updated")}
		p.SetStripeAccount(full)
		events := f.listEvents(t, p)
		if len(events) != 1 || events[0].Account != full || events[0].Created != now.Unix() {
			t.Fatalf("events %+v", events)
		}
		var snap stripe.Account
		if err := json.Unmarshal(events[0].Data.Raw, &snap); err != nil || snap.ChargesEnabled || snap.Requirements.DisabledReason != "requirements.past_due" {
			t.Errorf("snapshot %+v, %v", snap, err)
		}
		if platform := f.listEvents(t, &stripe.EventListParams{Type: stripe.String("account.updated")}); len(platform) != 0 {
			t.Errorf("the platform's own events hold %d account.updated", len(platform))
		}
		if err := f.srv.UpdateAccount(Account{ID: "acct_nope"}); err == nil {
			t.Error("an unknown account was updated")
		}
	})
	t.Run("a Stripe-Account header of an unknown account is Stripe's 403 account_invalid", func(t *testing.T) {
		p := &stripe.PaymentIntentListParams{}
		p.SetStripeAccount("acct_1Unknown")
		_, err := f.intentPage(t, p)
		accountInvalid(t, err, "acct_1Unknown")
		_, err = f.sc.V1Accounts.GetByID(ctx, "acct_1Unknown", nil)
		accountInvalid(t, err, "acct_1Unknown")
	})
	t.Run("a disconnected account is gone for the platform, its objects kept", func(t *testing.T) {
		pi := f.srv.AddPaymentIntent(PaymentIntent{Account: full})
		if err := f.srv.DisconnectAccount(full); err != nil {
			t.Fatal(err)
		}
		_, err := f.sc.V1Accounts.GetByID(ctx, full, nil)
		accountInvalid(t, err, full)
		p := &stripe.PaymentIntentRetrieveParams{}
		p.SetStripeAccount(full)
		_, err = f.sc.V1PaymentIntents.Retrieve(ctx, pi, p)
		accountInvalid(t, err, full)
		if got := f.listAccountIDs(t, nil); slices.Contains(got, full) {
			t.Errorf("the list still has it: %v", got)
		}
		if err := f.call("/v1/accounts", &stripe.AccountListParams{ListParams: stripe.ListParams{StartingAfter: stripe.String(full)}}, "", &stripe.AccountList{}); err == nil {
			t.Error("a disconnected account is accepted as a cursor")
		}
		if _, ok := f.srv.PaymentIntent(pi); !ok {
			t.Error("its intent was dropped")
		}
		if err := f.srv.DisconnectAccount("acct_nope"); err == nil {
			t.Error("an unknown account was disconnected")
		}
	})
	t.Run("a broken fixture panics", func(t *testing.T) {
		for name, a := range map[string]Account{
			"a duplicate id":          {ID: fresh},
			"an id that is not acct_": {ID: "cus_1"},
			"an unknown type":         {Type: "bogus"},
		} {
			t.Run(name, func(t *testing.T) {
				defer func() {
					if recover() == nil {
						t.Error("no panic")
					}
				}()
				f.srv.AddAccount(a)
			})
		}
	})
}

func TestPerAccountData(t *testing.T) {
	f := newFixture(t)
	subs := map[string]string{}
	for _, account := range []string{"", "acct_1", "acct_2"} {
		subs[account] = f.srv.AddSubscription(Subscription{Account: account})
		sub := subs[account]
		f.srv.AddInvoice(Invoice{Account: account, Subscription: sub, AmountDue: 100})
		f.srv.AddCheckoutSession(CheckoutSession{Account: account, Subscription: sub, Mode: stripe.CheckoutSessionModeSubscription})
	}
	for _, account := range []string{"", "acct_1", "acct_2"} {
		t.Run("account "+account+" sees only its own objects and events", func(t *testing.T) {
			var sl stripe.SubscriptionList
			var il stripe.InvoiceList
			var cl stripe.CheckoutSessionList
			var el stripe.EventList
			for path, out := range map[string]stripe.LastResponseSetter{
				"/v1/subscriptions": &sl, "/v1/invoices": &il, "/v1/checkout/sessions": &cl, "/v1/events": &el,
			} {
				if err := f.call(path, nil, account, out); err != nil {
					t.Fatalf("%s: %v", path, err)
				}
			}
			if len(sl.Data) != 1 || sl.Data[0].ID != subs[account] || len(il.Data) != 1 || len(cl.Data) != 1 ||
				il.Data[0].Parent.SubscriptionDetails.Subscription.ID != subs[account] || cl.Data[0].Subscription.ID != subs[account] {
				t.Errorf("subscriptions %v, invoices %v, sessions %v", sl.Data, il.Data, cl.Data)
			}
			for _, e := range el.Data {
				if e.Account != account {
					t.Errorf("event %s of account %q", e.Type, e.Account)
				}
			}
			if len(el.Data) != 2 { // customer.subscription.created, invoice.created
				t.Errorf("%d events", len(el.Data))
			}
			for other, sub := range subs {
				if other == account {
					continue
				}
				err := f.call("/v1/subscriptions/"+sub, nil, account, &stripe.Subscription{})
				stripeError(t, err, http.StatusNotFound)
			}
		})
	}
}

func TestPerAccountFaultsAndCounts(t *testing.T) {
	f := newFixture(t)
	for _, account := range []string{"acct_1", "acct_2"} {
		f.srv.AddSubscription(Subscription{Account: account})
	}
	f.srv.AddSubscription(Subscription{})
	f.srv.Inject(ListSubscriptions, Fault{Status: http.StatusTooManyRequests, Account: "acct_1", Header: http.Header{"Retry-After": {"2"}}})
	f.srv.Inject(ListSubscriptions, Fault{Status: http.StatusServiceUnavailable, Account: Platform, Times: 1})

	list := func(account string) error {
		return f.call("/v1/subscriptions", nil, account, &stripe.SubscriptionList{})
	}
	t.Run("the fault of one account leaves the others alone", func(t *testing.T) {
		for range 3 {
			if se := stripeError(t, list("acct_1"), http.StatusTooManyRequests); se.Code != stripe.ErrorCodeRateLimit {
				t.Errorf("got %+v", se)
			}
			if err := list("acct_2"); err != nil {
				t.Errorf("acct_2: %v", err)
			}
		}
	})
	t.Run("Platform targets only requests without the header", func(t *testing.T) {
		stripeError(t, list(""), http.StatusServiceUnavailable)
		if err := list(""); err != nil {
			t.Errorf("the fault was for one request: %v", err)
		}
	})
	t.Run("AccountRequests counts each account's requests, faulted ones included", func(t *testing.T) {
		for account, want := range map[string]int{"acct_1": 3, "acct_2": 3, "": 2, "acct_3": 0} {
			if got := f.srv.AccountRequests(ListSubscriptions, account); got != want {
				t.Errorf("AccountRequests(%q) = %d, want %d", account, got, want)
			}
		}
		if got := f.srv.Requests(ListSubscriptions); got != 8 {
			t.Errorf("Requests = %d", got)
		}
		log := f.srv.Log()
		if log[0].StripeAccount != "acct_1" || log[1].StripeAccount != "acct_2" {
			t.Errorf("log accounts %q %q", log[0].StripeAccount, log[1].StripeAccount)
		}
		f.srv.ResetLog()
		if f.srv.AccountRequests(ListSubscriptions, "acct_1") != 0 {
			t.Error("not reset")
		}
	})
}
