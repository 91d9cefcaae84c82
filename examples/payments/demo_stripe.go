package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripemoney"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// newStripe starts stripetest, the fake Stripe API over HTTP, in-process, holding the
// PaymentIntent of every planted payment Stripe knows: with the id in the row, the story's
// status, amount and currency, and created intentAfter the row's created_at as the database
// stored it (createdAt, by PaymentIntent id), and the refunds and disputes the stories have
// before the run. It holds the Stripe-only PaymentIntents too, but the young one, which
// addCheckoutUnderWay adds just before the reverse scan. Every retrieve of an unavailable
// row's intent is answered 503. It gives p's payments (whose array it shares with the caller)
// the ids of the refunds it makes. The caller closes the server.
func newStripe(p plan, createdAt map[string]time.Time) (*stripetest.Server, error) {
	// The refunds and disputes of before the run were made moneyAgo, by stripetest's clock:
	// their events are older than the events lane's anchor, so the sweep alone must find them.
	var lag atomic.Int64
	srv := stripetest.NewServer(stripetest.Options{Now: func() time.Time { return time.Now().Add(-time.Duration(lag.Load())) }})
	intents := make([]stripetest.PaymentIntent, 0, len(p.payments)+len(p.stripeOnly))
	for _, pay := range p.payments {
		if pay.story.notFound {
			continue
		}
		intents = append(intents, stripetest.PaymentIntent{
			ID:       pay.externalID,
			Status:   pay.story.external,
			Created:  createdAt[pay.externalID].Add(pay.intentAfter),
			Amount:   pay.intentAmount(),
			Currency: string(stripe.CurrencyUSD),
			Metadata: map[string]string{"order_id": pay.orderID},
		})
	}
	// By this process's clock, which the reverse scan's window is measured by too.
	now := time.Now()
	for _, pay := range p.stripeOnly {
		if !pay.story.young {
			intents = append(intents, stripeOnlyIntent(pay, now))
		}
	}
	srv.AddPaymentIntents(intents)
	for _, pay := range p.where(func(s *story) bool { return s.unavailable }) {
		srv.Inject(stripetest.RetrievePaymentIntent, stripetest.Fault{Status: http.StatusServiceUnavailable, ID: pay.externalID})
	}
	lag.Store(int64(moneyAgo))
	defer lag.Store(0)
	for i := range p.payments {
		if err := moneyBefore(srv, &p.payments[i], now.Add(-moneyAgo)); err != nil {
			srv.Close()
			return nil, err
		}
	}
	return srv, nil
}

// moneyBefore makes at srv the refund or dispute pay's story has before the run: a refund not
// made after the sweep, or made and recorded before it fails; a dispute not opened after the
// sweep, past its response's due date.
func moneyBefore(srv *stripetest.Server, pay *payment, now time.Time) error {
	m := pay.story.money
	if m.refunded > 0 && (!m.afterSweep || m.refundFails) {
		id, err := srv.Refund(pay.externalID, pay.refund())
		if err != nil {
			return fmt.Errorf("payments: refund %s: %w", pay.externalID, err)
		}
		pay.refundID = id
	}
	if m.dispute != "" && !m.afterSweep {
		id, err := srv.Dispute(pay.externalID, pay.intentAmount(), m.dispute, now.Add(-disputeDue))
		if err != nil {
			return fmt.Errorf("payments: dispute %s: %w", pay.externalID, err)
		}
		pay.disputeID = id
	}
	return nil
}

// moneyAfter makes at srv what happens to pay's money after the sweep: a refund in the
// Dashboard, a refund that fails, a dispute opened, whose response is due in disputeDue.
func moneyAfter(srv *stripetest.Server, pay payment, now time.Time) error {
	m := pay.story.money
	var err error
	switch {
	case !m.afterSweep:
	case m.refundFails:
		err = srv.SetRefundStatus(pay.refundID, stripe.RefundStatusFailed, string(stripe.RefundFailureReasonExpiredOrCanceledCard))
	case m.refunded > 0:
		_, err = srv.Refund(pay.externalID, pay.refund())
	case m.dispute != "":
		_, err = srv.Dispute(pay.externalID, pay.intentAmount(), m.dispute, now.Add(disputeDue))
	}
	if err != nil {
		return fmt.Errorf("payments: %s: %w", pay.externalID, err)
	}
	return nil
}

// moneyAgo is how long before the run the refunds and disputes of before it were made.
const moneyAgo = time.Hour

// disputeDue is how long a customer's bank gives the merchant to answer a dispute, about a week.
const disputeDue = 7 * 24 * time.Hour

// stripeOnlyIntent is the PaymentIntent of a Stripe-only payment, created createdAgo before now.
func stripeOnlyIntent(pay payment, now time.Time) stripetest.PaymentIntent {
	return stripetest.PaymentIntent{ID: pay.externalID, Status: pay.story.external, Created: now.Add(-pay.createdAgo), Amount: pay.amount}
}

// addCheckoutUnderWay adds the young Stripe-only PaymentIntents, created youngAge ago: a
// checkout under way, whose row is not committed yet. They are added when the reverse scan
// starts rather than with the others, so that they are youngAge old then however long the
// run took to get there.
func addCheckoutUnderWay(srv *stripetest.Server, p plan) {
	now := time.Now()
	for _, pay := range p.stripeOnly {
		if pay.story.young {
			srv.AddPaymentIntent(stripeOnlyIntent(pay, now))
		}
	}
}

// loseWebhooks changes the PaymentIntents of the stories with a later status to it at
// stripetest, and makes the refunds and disputes that happen after the sweep. stripetest
// records the events Stripe would send, and sends no webhook: the rows stay as they are, as
// when a webhook is lost. It returns when the last change was made.
func loseWebhooks(srv *stripetest.Server, p plan) (time.Time, error) {
	now := time.Now()
	for _, pay := range p.where(func(s *story) bool { return s.finder() == laneEvents }) {
		if pay.story.later != "" {
			if err := srv.SetStatus(pay.externalID, pay.story.later); err != nil {
				return time.Time{}, fmt.Errorf("payments: %w", err)
			}
		}
		if err := moneyAfter(srv, pay, now); err != nil {
			return time.Time{}, err
		}
	}
	return time.Now(), nil
}

// retrievePrefix is the path of a PaymentIntent retrieve, before the id.
const retrievePrefix = "/v1/payment_intents/"

// traffic is what stripetest's request log says about the calls of a cycle.
type traffic struct {
	list, retrieve int // requests received
	// disputes counts the lists of a disputed charge's disputes, whose status the charge
	// does not carry.
	disputes int
	// aboutGrace counts the requests that named a row inside the grace period: a retrieve of
	// its PaymentIntent, or its id in a list parameter. A list's paging cursor (starting_after)
	// is not counted: it is the last intent of the previous page, whichever row that is, and
	// asks nothing about it.
	aboutGrace int
	// retrievedAgain counts the retrieves of an id already retrieved in the cycle.
	retrievedAgain int
	// notFound counts the retrieves answered 404 for rows Stripe never saw; unavailable those
	// answered 503 for rows planted unavailable.
	notFound, unavailable int
	// unplanned counts the other requests not answered 200, and any request for a path
	// stripetest does not serve.
	unplanned int
}

// readLog sums up stripetest's request log against the plan.
func readLog(log []stripetest.Request, p plan) traffic {
	grace, notFound, unavailable := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, pay := range p.payments {
		switch s := pay.story; {
		case s.recent:
			grace[pay.externalID] = true
		case s.notFound:
			notFound[pay.externalID] = true
		case s.unavailable:
			unavailable[pay.externalID] = true
		}
	}
	var t traffic
	retrieved := map[string]bool{}
	for _, req := range log {
		switch req.Route {
		case stripetest.ListPaymentIntents:
			t.list++
			for param, values := range req.Query {
				if param == "starting_after" || param == "ending_before" {
					continue
				}
				for _, v := range values {
					if grace[v] {
						t.aboutGrace++
					}
				}
			}
			if req.Status != http.StatusOK {
				t.unplanned++
			}
		case stripetest.RetrievePaymentIntent:
			t.retrieve++
			id := strings.TrimPrefix(req.Path, retrievePrefix)
			if grace[id] {
				t.aboutGrace++
			}
			if retrieved[id] {
				t.retrievedAgain++
			}
			retrieved[id] = true
			switch {
			case notFound[id] && req.Status == http.StatusNotFound:
				t.notFound++
			case unavailable[id] && req.Status == http.StatusServiceUnavailable:
				t.unavailable++
			case req.Status != http.StatusOK:
				t.unplanned++
			}
		case stripetest.ListDisputes:
			t.disputes++
			if req.Status != http.StatusOK {
				t.unplanned++
			}
		default:
			t.unplanned++
		}
	}
	return t
}

// demoWebhookSecret signs the example's webhooks. A host reads its endpoint's signing secret
// from its configuration, and never logs it.
const demoWebhookSecret = "whsec_reconcile_demo"

// webhookPath is where the example's webhook handler would be mounted.
const webhookPath = "/webhooks/stripe"

// signedEvent returns the body and Stripe-Signature header of an event of type t about the
// PaymentIntent intentID of amount cents, as Stripe sends it to an endpoint whose signing
// secret is secret: signed now, with stripe-go's API version. Its object is the PaymentIntent,
// or the charge, refund or dispute of the event's type, naming the PaymentIntent.
func signedEvent(secret string, t stripe.EventType, intentID string, amount int64) (body []byte, header string) {
	suffix := strings.TrimPrefix(intentID, "pi_")
	obj := map[string]any{"amount": amount, "currency": "usd", "payment_intent": intentID, "charge": "ch_" + suffix}
	switch typ := string(t); {
	case strings.HasPrefix(typ, "payment_intent."):
		status := stripe.PaymentIntentStatusSucceeded
		if t == stripe.EventTypePaymentIntentCanceled {
			status = stripe.PaymentIntentStatusCanceled
		}
		obj = map[string]any{"id": intentID, "object": "payment_intent", "status": status, "amount": amount, "currency": "usd"}
		if status == stripe.PaymentIntentStatusSucceeded {
			obj["amount_received"] = amount
		}
	case strings.HasPrefix(typ, "charge.dispute."):
		obj["id"], obj["object"] = "dp_"+suffix, "dispute"
	case strings.HasPrefix(typ, "refund."), t == stripe.EventTypeChargeRefundUpdated:
		obj["id"], obj["object"] = "re_"+suffix, "refund"
	default:
		obj["id"], obj["object"] = "ch_"+suffix, "charge"
		delete(obj, "charge")
	}
	return signedObject(secret, t, "evt_"+suffix, obj)
}

// signedObject returns the body and Stripe-Signature header of event id of type t about obj,
// signed with secret.
func signedObject(secret string, t stripe.EventType, id string, obj map[string]any) (body []byte, header string) {
	raw, err := json.Marshal(obj)
	if err != nil {
		panic(err) // a map of strings and numbers always encodes
	}
	body, err = json.Marshal(stripe.Event{
		ID:         id,
		Object:     "event",
		APIVersion: stripe.APIVersion,
		Created:    time.Now().Unix(),
		Type:       t,
		Data:       &stripe.EventData{Raw: raw},
	})
	if err != nil {
		panic(err)
	}
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret})
	return signed.Payload, signed.Header
}

// deliver POSTs a webhook to h in-process, as Stripe would over HTTP, and returns the response.
func deliver(ctx context.Context, h http.Handler, body []byte, header string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, webhookPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", header)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// newGateway returns the Stripe gateway a host uses against Stripe itself, pointed at srv.
func newGateway(srv *stripetest.Server) (*stripemoney.Gateway, error) {
	// A host gives its own key and no BaseURL.
	return newPayments(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL()})
}
