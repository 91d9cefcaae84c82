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

func TestIntentsGetCharges(t *testing.T) {
	const (
		pm      = stripe.PaymentIntentStatusRequiresPaymentMethod
		capture = stripe.PaymentIntentStatusRequiresCapture
		done    = stripe.PaymentIntentStatusSucceeded
		cancel  = stripe.PaymentIntentStatusCanceled
	)
	at := t0.Add(-time.Minute)
	for _, tc := range []struct {
		name     string
		added    stripe.PaymentIntentStatus
		received int64 // PaymentIntent.AmountReceived
		changes  []stripe.PaymentIntentStatus
		// The intent and its charge as read back; charge "" for none.
		intentReceived, capturable int64
		captured                   bool
		amountCaptured             int64
		amountRefunded             int64 // what a partial capture released
		chargeCreated              time.Time
		events                     []string // charge events, newest first
	}{
		{name: "an intent added as succeeded has a captured charge and no charge event",
			added: done, intentReceived: 1000, captured: true, amountCaptured: 1000, chargeCreated: t0.Add(-time.Hour)},
		{name: "an intent added as requiring capture has an uncaptured charge",
			added: capture, capturable: 1000, chargeCreated: t0.Add(-time.Hour)},
		{name: "an intent added with a partial amount received has captured that much",
			added: done, received: 600, intentReceived: 600, captured: true, amountCaptured: 600, amountRefunded: 400,
			chargeCreated: t0.Add(-time.Hour)},
		{name: "succeeding records charge.succeeded for a new captured charge",
			added: pm, changes: []stripe.PaymentIntentStatus{done}, intentReceived: 1000, captured: true, amountCaptured: 1000,
			chargeCreated: at, events: []string{"charge.succeeded"}},
		{name: "requiring capture records charge.succeeded for an authorized charge",
			added: pm, changes: []stripe.PaymentIntentStatus{capture}, capturable: 1000, chargeCreated: at,
			events: []string{"charge.succeeded"}},
		{name: "capturing records charge.captured on the same charge",
			added: pm, changes: []stripe.PaymentIntentStatus{capture, done}, intentReceived: 1000, captured: true, amountCaptured: 1000,
			chargeCreated: at, events: []string{"charge.captured", "charge.succeeded"}},
		{name: "a partial capture captures the amount received",
			added: capture, received: 250, changes: []stripe.PaymentIntentStatus{done}, intentReceived: 250, captured: true,
			amountCaptured: 250, amountRefunded: 750, chargeCreated: t0.Add(-time.Hour), events: []string{"charge.captured"}},
		{name: "a canceled intent keeps the charge it had",
			added: capture, changes: []stripe.PaymentIntentStatus{cancel}, chargeCreated: t0.Add(-time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			id := f.srv.AddPaymentIntent(PaymentIntent{Status: tc.added, Created: t0.Add(-time.Hour), Amount: 1000, AmountReceived: tc.received, Currency: "eur"})
			for _, st := range tc.changes {
				if err := f.srv.SetStatusAt(id, st, at); err != nil {
					t.Fatal(err)
				}
			}
			pi, err := f.sc.V1PaymentIntents.Retrieve(context.Background(), id, nil)
			if err != nil {
				t.Fatal(err)
			}
			if pi.AmountReceived != tc.intentReceived || pi.AmountCapturable != tc.capturable {
				t.Errorf("intent received %d, capturable %d", pi.AmountReceived, pi.AmountCapturable)
			}
			if pi.LatestCharge == nil {
				t.Fatal("no latest_charge")
			}
			ch := f.retrieveCharge(t, pi.LatestCharge.ID, "")
			if !strings.HasPrefix(ch.ID, "ch_") || len(ch.ID) != 27 || ch.Object != "charge" || ch.Amount != 1000 ||
				ch.Currency != "eur" || ch.Captured != tc.captured || ch.AmountCaptured != tc.amountCaptured ||
				ch.AmountRefunded != tc.amountRefunded || ch.Refunded || ch.Disputed || ch.Status != stripe.ChargeStatusSucceeded ||
				!ch.Paid || ch.Created != tc.chargeCreated.Unix() || ch.PaymentIntent == nil || ch.PaymentIntent.ID != id {
				t.Errorf("charge %+v", ch)
			}
			events := f.eventsOf(t, "charge.*")
			if got := eventTypesOf(events); !slices.Equal(got, tc.events) {
				t.Errorf("charge events %v, want %v", got, tc.events)
			}
			if len(events) > 0 {
				var snap stripe.Charge
				if err := json.Unmarshal(events[0].Data.Raw, &snap); err != nil || snap.ID != ch.ID || snap.Captured != tc.captured {
					t.Errorf("latest charge event's object %+v, %v", snap, err)
				}
			}
		})
	}
	t.Run("an intent that never required capture or succeeded has no charge", func(t *testing.T) {
		f := newFixture(t)
		id := f.srv.AddPaymentIntent(PaymentIntent{Status: stripe.PaymentIntentStatusProcessing})
		_ = f.srv.SetStatus(id, cancel)
		res, body := rawGet(t, f.srv, "/v1/payment_intents/"+id, f.srv.Key())
		if res.StatusCode != 200 || !strings.Contains(body, `"latest_charge":null`) {
			t.Errorf("got %d %s", res.StatusCode, body)
		}
	})
	t.Run("the charge stays the intent's one charge when it succeeds again", func(t *testing.T) {
		f := newFixture(t)
		id := f.charged(t, "", 500, "usd")
		first := f.latestCharge(t, id, "")
		_ = f.srv.SetStatus(id, pm)
		_ = f.srv.SetStatus(id, done)
		if again := f.latestCharge(t, id, ""); again != first {
			t.Errorf("latest_charge %s, was %s", again, first)
		}
	})
}

func TestSetAmountReceived(t *testing.T) {
	f := newFixture(t)
	succeeded := f.charged(t, "", 1000, "usd")
	waiting := f.srv.AddPaymentIntent(PaymentIntent{Status: stripe.PaymentIntentStatusRequiresCapture, Amount: 1000})

	t.Run("on an intent awaiting capture it takes effect when the intent succeeds", func(t *testing.T) {
		if err := f.srv.SetAmountReceived(waiting, 400); err != nil {
			t.Fatal(err)
		}
		if ch := f.retrieveCharge(t, f.latestCharge(t, waiting, ""), ""); ch.AmountCaptured != 0 || ch.Captured {
			t.Fatalf("captured before succeeding: %+v", ch)
		}
		_ = f.srv.SetStatus(waiting, stripe.PaymentIntentStatusSucceeded)
		pi, _ := f.sc.V1PaymentIntents.Retrieve(context.Background(), waiting, nil)
		ch := f.retrieveCharge(t, pi.LatestCharge.ID, "")
		if pi.AmountReceived != 400 || pi.Amount != 1000 || ch.AmountCaptured != 400 || ch.Amount != 1000 || ch.AmountRefunded != 600 {
			t.Errorf("intent received %d of %d, charge captured %d of %d, refunded %d (the released 600)",
				pi.AmountReceived, pi.Amount, ch.AmountCaptured, ch.Amount, ch.AmountRefunded)
		}
		if got, _ := f.srv.PaymentIntent(waiting); got.AmountReceived != 400 {
			t.Errorf("PaymentIntent().AmountReceived = %d", got.AmountReceived)
		}
	})
	t.Run("on a succeeded intent it takes effect at once, without an event", func(t *testing.T) {
		before := len(f.listEvents(t, nil))
		if err := f.srv.SetAmountReceived(succeeded, 700); err != nil {
			t.Fatal(err)
		}
		if ch := f.retrieveCharge(t, f.latestCharge(t, succeeded, ""), ""); ch.AmountCaptured != 700 || ch.AmountRefunded != 300 {
			t.Errorf("captured %d, refunded %d (the released 300)", ch.AmountCaptured, ch.AmountRefunded)
		}
		if after := len(f.listEvents(t, nil)); after != before {
			t.Errorf("%d events recorded", after-before)
		}
	})
	t.Run("zero means the whole amount", func(t *testing.T) {
		_ = f.srv.SetAmountReceived(succeeded, 0)
		pi, _ := f.sc.V1PaymentIntents.Retrieve(context.Background(), succeeded, nil)
		if pi.AmountReceived != 1000 || pi.LatestCharge.AmountRefunded != 0 {
			t.Errorf("received %d, refunded %d", pi.AmountReceived, pi.LatestCharge.AmountRefunded)
		}
	})
	t.Run("it fails for an unknown intent, an amount out of range, or one below what was refunded", func(t *testing.T) {
		if _, err := f.srv.Refund(succeeded, 800); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			id     string
			amount int64
		}{{"pi_nope", 1}, {succeeded, -1}, {succeeded, 1001}, {succeeded, 799}} {
			if err := f.srv.SetAmountReceived(tc.id, tc.amount); err == nil || !strings.HasPrefix(err.Error(), "stripetest: ") {
				t.Errorf("SetAmountReceived(%s, %d): err = %v", tc.id, tc.amount, err)
			}
		}
	})
	t.Run("adding an intent that received more than its amount panics", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("no panic")
			}
		}()
		f.srv.AddPaymentIntent(PaymentIntent{Amount: 10, AmountReceived: 11})
	})
}

func TestRetrieveCharge(t *testing.T) {
	f := newFixture(t)
	id := f.charged(t, "", 1000, "usd")
	chID := f.latestCharge(t, id, "")
	connected := f.charged(t, "acct_1", 300, "usd")
	connectedCharge := f.latestCharge(t, connected, "acct_1")

	t.Run("a charge names its intent by id unless it is expanded", func(t *testing.T) {
		ch := f.retrieveCharge(t, chID, "")
		if ch.PaymentIntent.ID != id || ch.PaymentIntent.Amount != 0 {
			t.Errorf("payment_intent %+v", ch.PaymentIntent)
		}
		ch = f.retrieveCharge(t, chID, "", "payment_intent")
		if ch.PaymentIntent.ID != id || ch.PaymentIntent.Amount != 1000 || ch.PaymentIntent.LatestCharge.ID != chID {
			t.Errorf("expanded payment_intent %+v", ch.PaymentIntent)
		}
	})
	t.Run("an unknown charge is a 404", func(t *testing.T) {
		err := f.call("/v1/charges/ch_nope", nil, "", &stripe.Charge{})
		se := stripeError(t, err, http.StatusNotFound)
		if se.Code != stripe.ErrorCodeResourceMissing || se.Msg != "No such charge: 'ch_nope'" || se.Param != "charge" {
			t.Errorf("got %+v", se)
		}
	})
	t.Run("a charge is seen only by its account", func(t *testing.T) {
		stripeError(t, f.call("/v1/charges/"+connectedCharge, nil, "", &stripe.Charge{}), http.StatusNotFound)
		stripeError(t, f.call("/v1/charges/"+chID, nil, "acct_1", &stripe.Charge{}), http.StatusNotFound)
		if ch := f.retrieveCharge(t, connectedCharge, "acct_1"); ch.Amount != 300 {
			t.Errorf("got %+v", ch)
		}
	})
	t.Run("an unknown parameter is refused", func(t *testing.T) {
		res, body := rawGet(t, f.srv, "/v1/charges/"+chID+"?payment_intent=x", f.srv.Key())
		if res.StatusCode != 400 || !strings.Contains(body, "Received unknown parameter: payment_intent") {
			t.Errorf("got %d %s", res.StatusCode, body)
		}
	})
}

func TestListCharges(t *testing.T) {
	f := newFixture(t)
	var pis []string
	for i := range 5 {
		pis = append(pis, f.srv.AddPaymentIntent(PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: int64(100 * (i + 1)),
			Created: t0.Add(time.Duration(i-5) * time.Hour)}))
	}
	f.srv.AddPaymentIntent(PaymentIntent{Amount: 1}) // no charge yet
	connected := f.srv.AddPaymentIntent(PaymentIntent{Account: "acct_1", Status: stripe.PaymentIntentStatusSucceeded, Amount: 9})
	charges := make([]string, len(pis))
	for i, pi := range pis {
		charges[i] = f.latestCharge(t, pi, "")
	}
	list := func(p *stripe.ChargeListParams) []string {
		var ids []string
		for ch, err := range f.sc.V1Charges.List(context.Background(), p) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ch.ID)
		}
		return ids
	}
	connectedList := &stripe.ChargeListParams{}
	connectedList.StripeAccount = stripe.String("acct_1")
	for name, tc := range map[string]struct {
		p    *stripe.ChargeListParams
		want []string
	}{
		"every charge of the platform, newest first": {&stripe.ChargeListParams{}, reversed(charges)},
		"in pages of two":          {&stripe.ChargeListParams{ListParams: stripe.ListParams{Limit: stripe.Int64(2)}}, reversed(charges)},
		"an intent's":              {&stripe.ChargeListParams{PaymentIntent: stripe.String(pis[2])}, []string{charges[2]}},
		"another account's intent": {&stripe.ChargeListParams{PaymentIntent: stripe.String(connected)}, nil},
		"a customer's, which the fake's charges lack": {&stripe.ChargeListParams{Customer: stripe.String("cus_1")}, nil},
		"created in a window": {&stripe.ChargeListParams{CreatedRange: &stripe.RangeQueryParams{
			GreaterThanOrEqual: t0.Add(-2 * time.Hour).Unix()}}, []string{charges[4], charges[3]}},
		"a connected account's": {connectedList, []string{f.latestCharge(t, connected, "acct_1")}},
	} {
		if got := list(tc.p); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", name, got, tc.want)
		}
	}
	p := &stripe.ChargeListParams{}
	p.AddExpand("data.payment_intent")
	p.AddExpand("data.balance_transaction")
	p.Limit = stripe.Int64(1)
	page := &stripe.ChargeList{}
	if err := f.call("/v1/charges", p, "", page); err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || !page.HasMore || page.Data[0].PaymentIntent.ID != pis[4] || page.Data[0].PaymentIntent.Amount != 500 ||
		page.Data[0].BalanceTransaction.Amount != 500 || page.URL != "/v1/charges" {
		t.Errorf("got %+v", page)
	}
	if n := f.srv.Requests(ListCharges); n < 8 {
		t.Errorf("%d charge lists counted", n)
	}
}
