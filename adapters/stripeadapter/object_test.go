package stripeadapter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// The shipped descriptors against stripetest over HTTP.

// fakeStripe is a stripetest server on a clock the test moves.
type fakeStripe struct {
	*stripetest.Server
	base  time.Time
	clock *refundWorld // only for its clock
}

func newFakeStripe(t *testing.T) *fakeStripe {
	t.Helper()
	w := &refundWorld{base: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	w.clock = w.base
	srv := stripetest.NewServer(stripetest.Options{Now: w.now})
	t.Cleanup(srv.Close)
	return &fakeStripe{Server: srv, base: w.base, clock: w}
}

func (f *fakeStripe) at(i int) time.Time { return f.base.Add(time.Duration(i) * time.Second) }

// objectGateway is a kit gateway over srv.
func objectGateway[T any](t *testing.T, srv *stripetest.Server, obj stripeadapter.Object[T]) *stripeadapter.ObjectGateway[T] {
	t.Helper()
	g, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL(), Timeout: 5 * time.Second}, obj)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// lookupsAt asks about ids, the i-th created at f.at(i) (its row a second earlier).
func lookupsAt(f *fakeStripe, ids []string) []reconcile.Lookup {
	out := make([]reconcile.Lookup, len(ids))
	for i, id := range ids {
		out[i] = reconcile.Lookup{ExternalID: id, CreatedAt: f.at(i).Add(-time.Second)}
	}
	return out
}

// Stripe's subscription list leaves canceled subscriptions out unless status=all is sent: the
// shipped descriptor sends it, so a batch finds canceled subscriptions in its list instead of
// retrieving each one by one (or, in a host's hand-written list, taking it for missing).
func TestSubscriptionsListCanceledOnesBecauseOfStatusAll(t *testing.T) {
	f := newFakeStripe(t)
	var subs []stripetest.Subscription
	for i := range 150 {
		st := stripe.SubscriptionStatusActive
		if i%3 == 0 {
			st = stripe.SubscriptionStatusCanceled
		}
		subs = append(subs, stripetest.Subscription{Status: st, Created: f.at(i)})
	}
	ids := f.AddSubscriptions(subs)
	f.ResetLog()
	ctx := context.Background()

	g := objectGateway(t, f.Server, stripeadapter.Subscriptions())
	got, err := g.FetchBatch(ctx, lookupsAt(f, ids), noWait)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if s := got[id]; s == nil || s.Status != subs[i].Status {
			t.Fatalf("subscription %d (%s) not listed as %s: %v", i, id, subs[i].Status, s)
		}
	}
	if n := f.Requests(stripetest.RetrieveSubscription); n != 0 {
		t.Fatalf("%d retrieves, want none", n)
	}
	for _, r := range f.Log() {
		if r.Query.Get("status") != "all" {
			t.Fatalf("list without status=all: %v", r.Query)
		}
	}

	// The same list without status=all (Stripe's default) misses every canceled one.
	bare := stripeadapter.Subscriptions()
	bare.ListParams = nil
	got, err = objectGateway(t, f.Server, bare).FetchBatch(ctx, lookupsAt(f, ids), noWait)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 100 {
		t.Fatalf("the default list showed %d subscriptions, want the 100 not canceled", len(got))
	}

	// A reverse scan sees them too.
	rf, err := g.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.Subscription]{Now: func() time.Time { return f.at(150).Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	canceled := 0
	for pos := ""; ; {
		page, err := rf.Next(ctx, pos, noWait)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Objects {
			if o.Object.Status == stripe.SubscriptionStatusCanceled {
				canceled++
			}
		}
		if page.End {
			break
		}
		pos = page.Next
	}
	if canceled != 50 {
		t.Fatalf("the reverse scan saw %d canceled subscriptions, want 50", canceled)
	}

	// One by one, and the events feed of customer.subscription.*.
	if s, err := g.Fetch(ctx, ids[0]); err != nil || s.Status != stripe.SubscriptionStatusCanceled {
		t.Fatalf("Fetch of a canceled subscription = %v, %v", s, err)
	}
	f.clock.set(f.at(200)) // every object's creation settled: the feed anchors after them
	ef, err := g.EventsFeed(stripeadapter.EventsOptions{Now: func() time.Time { return f.clock.now().Add(2 * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	page, err := ef.Next(ctx, "", noWait)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.set(f.at(400))
	if err := f.SetSubscriptionStatus(ids[1], stripe.SubscriptionStatusPastDue); err != nil {
		t.Fatal(err)
	}
	page, err = ef.Next(ctx, page.Next, noWait)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 1 || page.Objects[0].ExternalID != ids[1] || page.Objects[0].Object.Status != stripe.SubscriptionStatusPastDue {
		t.Fatalf("events feed objects %+v, want %s past_due", page.Objects, ids[1])
	}
}

func TestInvoicesThroughTheKit(t *testing.T) {
	f := newFakeStripe(t)
	statuses := []stripe.InvoiceStatus{stripe.InvoiceStatusDraft, stripe.InvoiceStatusOpen, stripe.InvoiceStatusPaid,
		stripe.InvoiceStatusUncollectible, stripe.InvoiceStatusVoid}
	var invs []stripetest.Invoice
	for i := range 120 {
		invs = append(invs, stripetest.Invoice{Status: statuses[i%len(statuses)], Created: f.at(i), AmountDue: 1000})
	}
	ids := f.AddInvoices(invs)
	f.ResetLog()
	ctx := context.Background()
	g := objectGateway(t, f.Server, stripeadapter.Invoices())
	got, err := g.FetchBatch(ctx, lookupsAt(f, ids), noWait)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if in := got[id]; in == nil || in.Status != invs[i].Status {
			t.Fatalf("invoice %d not listed as %s: %v", i, invs[i].Status, in)
		}
	}
	if f.Requests(stripetest.ListInvoices) > 3 || f.Requests(stripetest.RetrieveInvoice) != 0 {
		t.Fatalf("%d lists and %d retrieves for 120 invoices", f.Requests(stripetest.ListInvoices), f.Requests(stripetest.RetrieveInvoice))
	}
	in, err := g.Fetch(ctx, ids[2])
	if err != nil || in.Status != stripe.InvoiceStatusPaid || in.AmountPaid != 1000 || in.AmountRemaining != 0 {
		t.Fatalf("Fetch = %+v, %v; want a paid invoice", in, err)
	}

	f.clock.set(f.at(200)) // every object's creation settled: the feed anchors after them
	ef, err := g.EventsFeed(stripeadapter.EventsOptions{Now: func() time.Time { return f.clock.now().Add(2 * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	page, err := ef.Next(ctx, "", noWait)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.set(f.at(400))
	if err := f.SetInvoiceStatus(ids[1], stripe.InvoiceStatusPaid); err != nil {
		t.Fatal(err)
	}
	page, err = ef.Next(ctx, page.Next, noWait)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 1 || page.Objects[0].ExternalID != ids[1] || page.Objects[0].Object.Status != stripe.InvoiceStatusPaid {
		t.Fatalf("events feed objects %+v, want %s paid", page.Objects, ids[1])
	}
}

func TestCheckoutSessionsThroughTheKit(t *testing.T) {
	f := newFakeStripe(t)
	var css []stripetest.CheckoutSession
	for i := range 30 {
		css = append(css, stripetest.CheckoutSession{Created: f.at(i), AmountTotal: 500})
	}
	ids := f.AddCheckoutSessions(css)
	f.ResetLog()
	ctx := context.Background()
	g := objectGateway(t, f.Server, stripeadapter.CheckoutSessions())
	if err := g.CheckID(ids[0]); err != nil {
		t.Fatalf("CheckID(%s) = %v", ids[0], err)
	}
	got, err := g.FetchBatch(ctx, lookupsAt(f, ids), noWait)
	if err != nil || len(got) != len(ids) || f.Requests(stripetest.ListCheckoutSessions) != 1 {
		t.Fatalf("FetchBatch = %d sessions, %v, %d lists", len(got), err, f.Requests(stripetest.ListCheckoutSessions))
	}
	if err := f.CompleteCheckoutSession(ids[3], stripe.CheckoutSessionPaymentStatusPaid); err != nil {
		t.Fatal(err)
	}
	cs, err := g.Fetch(ctx, ids[3])
	if err != nil || cs.Status != stripe.CheckoutSessionStatusComplete || cs.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid {
		t.Fatalf("Fetch = %+v, %v; want a complete, paid session", cs, err)
	}
	for _, bad := range []string{"cs_test_", "cs_test_a/b", "cs_x_y"} {
		if g.CheckID(bad) == nil {
			t.Errorf("CheckID(%q) accepted", bad)
		}
	}
}

func TestAccountsAreReadOnThePlatform(t *testing.T) {
	f := newFakeStripe(t)
	enabled := f.AddAccount(stripetest.Account{Created: f.at(0), ChargesEnabled: true, PayoutsEnabled: true, DetailsSubmitted: true})
	onboarding := f.AddAccount(stripetest.Account{Created: f.at(1)})
	rejected := f.AddAccount(stripetest.Account{Created: f.at(2), DetailsSubmitted: true, DisabledReason: "rejected.fraud"})
	pending := f.AddAccount(stripetest.Account{Created: f.at(3), DetailsSubmitted: true, DisabledReason: "requirements.pending_verification"})
	restricted := f.AddAccount(stripetest.Account{Created: f.at(4), DetailsSubmitted: true, DisabledReason: "requirements.past_due"})
	ids := []string{enabled, onboarding, rejected, pending, restricted}
	want := []string{"enabled", "onboarding", "rejected", "pending", "restricted"}
	f.ResetLog()
	ctx := context.Background()
	g := objectGateway(t, f.Server, stripeadapter.Accounts())
	got, err := g.FetchBatch(ctx, lookupsAt(f, ids), noWait)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if a := got[id]; a == nil || stripeadapter.AccountState(a) != want[i] {
			t.Errorf("account %s listed as %v, want %s", id, a, want[i])
		}
		a, err := g.Fetch(ctx, id)
		if err != nil || stripeadapter.AccountState(a) != want[i] {
			t.Errorf("Fetch(%s) = %v, %v; want %s", id, a, err, want[i])
		}
	}
	for _, r := range f.Log() {
		if r.StripeAccount != "" {
			t.Fatalf("an accounts call carried Stripe-Account %q", r.StripeAccount)
		}
	}
	// Stripe answers a retrieve of an account that is not (or no longer) connected with 403
	// account_invalid: the account is missing, not the key at fault.
	if err := f.DisconnectAccount(restricted); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{restricted, "acct_1NeverConnected"} {
		if _, err := g.Fetch(ctx, id); !errors.Is(err, reconcile.ErrNotFound) {
			t.Errorf("Fetch(%s) = %v, want ErrNotFound", id, err)
		}
	}
	// On an account's own objects the same answer means the key cannot act for it: the batch
	// stops.
	subs, err := objectGateway(t, f.Server, stripeadapter.Subscriptions()).ForAccount(restricted)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := subs.Fetch(ctx, "sub_1"); !errors.Is(err, reconcile.ErrAbortBatch) {
		t.Errorf("Fetch for a disconnected account = %v, want ErrAbortBatch", err)
	}
	if stripeadapter.AccountState(&stripe.Account{ID: "acct_1", ChargesEnabled: true, PayoutsEnabled: true}) != "" {
		t.Error("a body that is not an account has a state")
	}
}

// Payouts through the kit: bulk list, retrieve, and the events feed, where a paid payout that
// fails in the same second wins over paid (paid is not final).
func TestPayoutsThroughTheKit(t *testing.T) {
	f := newFakeStripe(t)
	var pis []stripetest.PaymentIntent
	for i := range 3 {
		pis = append(pis, stripetest.PaymentIntent{Created: f.at(i), Status: stripe.PaymentIntentStatusSucceeded, Amount: 1000})
	}
	f.AddPaymentIntents(pis)
	var pos []stripetest.Payout
	for i := range 3 {
		pos = append(pos, stripetest.Payout{Manual: true, Amount: 100, Created: f.at(10 + i)})
	}
	ids := f.AddPayouts(pos)
	ctx := context.Background()
	g := objectGateway(t, f.Server, stripeadapter.Payouts())
	f.ResetLog()
	got, err := g.FetchBatch(ctx, lookupsAt(f, ids), noWait)
	if err != nil || len(got) != len(ids) || f.Requests(stripetest.ListPayouts) != 1 {
		t.Fatalf("FetchBatch = %d payouts, %v, %d lists", len(got), err, f.Requests(stripetest.ListPayouts))
	}
	f.clock.set(f.at(200)) // every payout's creation settled: the feed anchors after them
	feed, err := g.EventsFeed(stripeadapter.EventsOptions{Now: func() time.Time { return f.clock.now().Add(2 * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	page, err := feed.Next(ctx, "", noWait) // the anchor
	if err != nil {
		t.Fatal(err)
	}
	f.clock.set(f.at(400)) // paid and failed in one second
	if err := f.SetPayoutStatus(ids[1], stripe.PayoutStatusPaid); err != nil {
		t.Fatal(err)
	}
	if err := f.FailPayout(ids[1], stripe.PayoutFailureCodeAccountClosed, ""); err != nil {
		t.Fatal(err)
	}
	page, err = feed.Next(ctx, page.Next, noWait)
	if err != nil || len(page.Objects) != 1 || page.Objects[0].ExternalID != ids[1] || page.Objects[0].Object.Status != stripe.PayoutStatusFailed {
		t.Fatalf("events feed = %+v, %v; want %s failed", page.Objects, err, ids[1])
	}
	p, err := g.Fetch(ctx, ids[1])
	if err != nil || p.Status != stripe.PayoutStatusFailed || p.FailureCode != stripe.PayoutFailureCodeAccountClosed {
		t.Fatalf("Fetch = %+v, %v; want failed, account_closed", p, err)
	}
	for _, bad := range []string{"po_", "po_1/../x", "tr_1"} {
		if g.CheckID(bad) == nil || stripeadapter.ValidPayoutID(bad) {
			t.Errorf("payout id %q accepted", bad)
		}
	}
}
