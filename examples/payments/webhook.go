package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// maxWebhookBody bounds what the handler reads of a request: Stripe's events are a few KiB.
const maxWebhookBody = 64 << 10

// paymentByIntent finds the payment of a PaymentIntent.
const paymentByIntent = `SELECT id FROM reconcile_demo.payments WHERE external_id = $1`

// errUnknownIntent means no payment has the PaymentIntent an event is about.
var errUnknownIntent = errors.New("payments: no payment has this PaymentIntent")

// paymentReader reads a payment as Stripe holds it now (a stripemoney.Gateway).
type paymentReader = reconcile.Gateway[*stripepolicy.Payment]

// webhookHandler receives Stripe's webhooks and applies them through the canonical writer, as
// actor "stripe-webhook": a PaymentIntent's outcome as the event's PaymentIntent says it, and
// a refund or a dispute as Stripe holds the payment when the event is handled, read again, so
// that events delivered late or out of order record the present. It answers 2xx only once the change is
// committed (or there is nothing to change), so Stripe redelivers anything that failed;
// redelivery is harmless because the writer is idempotent, which is also why no table of
// processed event ids is needed.
type webhookHandler struct {
	db      pgstore.DB
	store   *pgstore.Store[paymentRow]
	gateway paymentReader
	secret  string // the endpoint's signing secret, whsec_...
	log     *slog.Logger
}

// newWebhookHandler returns the handler for the payments in store's table, verifying requests
// with secret and reading refunds and disputes through gateway.
func newWebhookHandler(db pgstore.DB, store *pgstore.Store[paymentRow], gateway paymentReader, secret string, log *slog.Logger) *webhookHandler {
	return &webhookHandler{db: db, store: store, gateway: gateway, secret: secret, log: log}
}

// ServeHTTP handles one delivery of one event.
func (h *webhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "only POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	case err != nil:
		http.Error(w, "cannot read body", http.StatusBadRequest)
		return
	}
	// The signature and its age (5 minutes, against replays) are checked; the event's API
	// version is not, so that an account's API upgrade does not turn every delivery into a 400
	// until Stripe gives up: only the PaymentIntent's id is read, which every version has.
	// The errors describe the header or payload, never the secret.
	ev, err := webhook.ConstructEventWithOptions(body, r.Header.Get("Stripe-Signature"), h.secret,
		webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
	if err != nil {
		h.log.LogAttrs(r.Context(), slog.LevelWarn, "stripe webhook: rejected", slog.String("error", err.Error()))
		http.Error(w, "invalid signature or payload", http.StatusBadRequest)
		return
	}

	handling, ok := handled[ev.Type]
	if !ok {
		// Acknowledged so that Stripe does not retry an event this endpoint has no use for.
		fmt.Fprintf(w, "ignored %s\n", ev.Type)
		return
	}
	intentID := eventIntent(ev)
	if intentID == "" {
		// Acknowledged: a charge, refund or dispute without a PaymentIntent (the Charges API,
		// another integration of the account) is no payment of this table, and a retry would
		// carry the same payload. A 4xx would have Stripe redeliver it for three days.
		h.log.LogAttrs(r.Context(), slog.LevelWarn, "stripe webhook: event without a PaymentIntent; ignored",
			slog.String("event", ev.ID), slog.String("type", string(ev.Type)))
		fmt.Fprintf(w, "ignored %s: no PaymentIntent\n", ev.Type)
		return
	}

	paymentID, changed, err := h.apply(r.Context(), handling, ev, intentID)
	var conflict *conflictError
	switch {
	case errors.Is(err, errUnknownIntent):
		// Acknowledged: the account's other integrations (the Dashboard, another service) make
		// PaymentIntents this table does not hold, and a retry would never find one. The
		// reconciler's reverse scan is where Stripe-only objects are looked for.
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "stripe webhook: no payment for the PaymentIntent; ignored",
			slog.String("event", ev.ID), slog.String("payment_intent", intentID))
		fmt.Fprintf(w, "no payment for %s\n", intentID)
	case errors.Is(err, reconcile.ErrNotFound):
		// Acknowledged too: a retry would not find it either. The sweep reports the payment
		// as missing_externally, for a person.
		h.log.LogAttrs(r.Context(), slog.LevelError, "stripe webhook: Stripe does not have the PaymentIntent; ignored",
			slog.String("event", ev.ID), slog.String("payment_intent", intentID))
		fmt.Fprintf(w, "payment %d: Stripe does not have %s\n", paymentID, intentID)
	case errors.As(err, &conflict):
		// Acknowledged too: redelivery would meet the same conflict. The payment is left as it
		// is; the reconciler finds the difference and sends it to a person.
		h.log.LogAttrs(r.Context(), slog.LevelError, "stripe webhook: needs review",
			slog.String("event", ev.ID), slog.String("error", err.Error()))
		fmt.Fprintf(w, "payment %d %s, not changed: needs review\n", paymentID, conflict.Reason)
	case err != nil:
		// 500: Stripe retries with backoff for three days; the reconciler catches up after that.
		h.log.LogAttrs(r.Context(), slog.LevelError, "stripe webhook: not applied; Stripe will retry",
			slog.String("event", ev.ID), slog.String("error", err.Error()))
		http.Error(w, "not applied", http.StatusInternalServerError)
	case changed:
		fmt.Fprintf(w, "payment %d: %s\n", paymentID, handling.changed)
	default:
		fmt.Fprintf(w, "payment %d: %s\n", paymentID, handling.unchanged)
	}
}

// apply finds the payment of the PaymentIntent intentID, which ev is about, and applies
// handling to it in a transaction of its own. A refund or a dispute is read from Stripe first,
// outside the transaction, so that no row stays locked during the call, and read again if
// another writer recorded more refunded than the read says (applyFresh).
func (h *webhookHandler) apply(ctx context.Context, handling handling, ev stripe.Event, intentID string) (paymentID int64, changed bool, err error) {
	err = h.db.QueryRow(ctx, inSchema(h.store.Config().Schema, paymentByIntent), intentID).Scan(&paymentID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, errUnknownIntent
	}
	if err != nil {
		return 0, false, fmt.Errorf("payments: find the payment of %s: %w", intentID, err)
	}
	if handling.status != nil {
		err = pgx.BeginFunc(ctx, h.db, func(tx pgx.Tx) error {
			changed, err = handling.status(ctx, tx, h.store, paymentID, actorWebhook)
			return err
		})
	} else {
		read := func(ctx context.Context) (*stripepolicy.Payment, error) {
			return h.read(ctx, handling, ev, intentID)
		}
		changed, err = applyFresh(ctx, h.db, read, func(ctx context.Context, tx pgx.Tx, pay *stripepolicy.Payment) (bool, error) {
			return handling.money(ctx, tx, h.store, paymentID, pay, actorWebhook)
		})
	}
	if errors.Is(err, errNoPayment) {
		err = errUnknownIntent // deleted since it was found
	}
	return paymentID, changed, err
}

// read returns the payment as Stripe holds it, for a money writer: the PaymentIntent ev
// carries, or the payment read at Stripe.
func (h *webhookHandler) read(ctx context.Context, handling handling, ev stripe.Event, intentID string) (*stripepolicy.Payment, error) {
	if handling.fromEvent {
		// A succeeded PaymentIntent's amounts are final: the event's copy is Stripe's.
		var pi stripe.PaymentIntent
		if err := json.Unmarshal(ev.Data.Raw, &pi); err != nil {
			return nil, fmt.Errorf("payments: read %s from event %s: %w", intentID, ev.ID, err)
		}
		return &stripepolicy.Payment{Intent: &pi}, nil
	}
	pay, err := h.gateway.Fetch(ctx, intentID)
	if err != nil {
		return nil, fmt.Errorf("payments: read %s at Stripe: %w", intentID, err)
	}
	return pay, nil
}

// eventIntent returns the id of the PaymentIntent ev is about: its object's, or the one its
// charge, refund or dispute belongs to; "" if it names none.
func eventIntent(ev stripe.Event) string {
	var obj struct {
		ID            string                `json:"id"`
		Object        string                `json:"object"`
		PaymentIntent *stripe.PaymentIntent `json:"payment_intent"` // an id, or the object if expanded
	}
	if ev.Data == nil || json.Unmarshal(ev.Data.Raw, &obj) != nil {
		return ""
	}
	if obj.Object == "payment_intent" {
		return obj.ID
	}
	if obj.PaymentIntent == nil {
		return ""
	}
	return obj.PaymentIntent.ID
}

// handling is how the handler applies an event: with a status writer, for an outcome the event
// states, or with a money writer, for the PaymentIntent the event carries (fromEvent) or a
// refund or dispute read from Stripe; and what it answers when the payment changed, or not.
type handling struct {
	status             writer
	money              moneyWriter
	fromEvent          bool
	changed, unchanged string
}

// handled are the events the handler applies. Both families of refund events are here: until
// API version 2024-10-28, Stripe sent refund.* only for refunds without a charge. The
// handler never reads an outcome from a refund or dispute event's type: "closed" says nothing
// of who won.
var handled = func() map[stripe.EventType]handling {
	refunds := handling{money: applyRefunds, changed: "refunds recorded as at Stripe", unchanged: "refunds already as at Stripe"}
	dispute := handling{money: applyDispute, changed: "dispute recorded as at Stripe", unchanged: "dispute already as at Stripe"}
	return map[stripe.EventType]handling{
		stripe.EventTypePaymentIntentSucceeded: {money: applyPaymentSucceeded, fromEvent: true,
			changed: "pending -> " + stripepolicy.LocalPaid, unchanged: "already " + stripepolicy.LocalPaid},
		stripe.EventTypePaymentIntentCanceled: {status: applyPaymentCanceled,
			changed: "pending -> " + stripepolicy.LocalFailed, unchanged: "already " + stripepolicy.LocalFailed},
		stripe.EventTypeChargeRefunded:               refunds,
		stripe.EventTypeChargeRefundUpdated:          refunds,
		stripe.EventTypeRefundCreated:                refunds,
		stripe.EventTypeRefundUpdated:                refunds,
		stripe.EventTypeRefundFailed:                 refunds,
		stripe.EventTypeChargeDisputeCreated:         dispute,
		stripe.EventTypeChargeDisputeUpdated:         dispute,
		stripe.EventTypeChargeDisputeClosed:          dispute,
		stripe.EventTypeChargeDisputeFundsWithdrawn:  dispute,
		stripe.EventTypeChargeDisputeFundsReinstated: dispute,
	}
}()
