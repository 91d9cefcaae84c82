package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
)

// maxWebhookBody bounds what the handler reads of a request: Stripe's events are a few KiB.
const maxWebhookBody = 64 << 10

// paymentByIntent finds the payment of a PaymentIntent.
const paymentByIntent = `SELECT id FROM reconcile_demo.payments WHERE external_id = $1`

// errUnknownIntent means no payment has the PaymentIntent an event is about.
var errUnknownIntent = errors.New("payments: no payment has this PaymentIntent")

// webhookHandler receives Stripe's webhooks and applies the PaymentIntent outcomes through the
// canonical writer, as actor "stripe-webhook". It answers 2xx only once the change is committed
// (or there is nothing to change), so Stripe redelivers anything that failed; redelivery is
// harmless because the writer is idempotent, which is also why no table of processed event ids
// is needed.
type webhookHandler struct {
	db     pgstore.DB
	store  *pgstore.Store[string]
	secret string // the endpoint's signing secret, whsec_...
	log    *slog.Logger
}

// newWebhookHandler returns the handler for the payments in store's table, verifying requests
// with secret.
func newWebhookHandler(db pgstore.DB, store *pgstore.Store[string], secret string, log *slog.Logger) *webhookHandler {
	return &webhookHandler{db: db, store: store, secret: secret, log: log}
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

	outcome, ok := outcomes[ev.Type]
	if !ok {
		// Acknowledged so that Stripe does not retry an event this endpoint has no use for.
		fmt.Fprintf(w, "ignored %s\n", ev.Type)
		return
	}
	var pi stripe.PaymentIntent
	if ev.Data == nil || json.Unmarshal(ev.Data.Raw, &pi) != nil || pi.ID == "" {
		h.log.LogAttrs(r.Context(), slog.LevelWarn, "stripe webhook: event without a PaymentIntent", slog.String("event", ev.ID))
		http.Error(w, "event without a PaymentIntent", http.StatusBadRequest)
		return
	}

	var paymentID int64
	var changed bool
	err = pgx.BeginFunc(r.Context(), h.db, func(tx pgx.Tx) error {
		err := tx.QueryRow(r.Context(), inSchema(h.store.Config().Schema, paymentByIntent), pi.ID).Scan(&paymentID)
		if errors.Is(err, pgx.ErrNoRows) {
			return errUnknownIntent
		}
		if err != nil {
			return fmt.Errorf("payments: find the payment of %s: %w", pi.ID, err)
		}
		changed, err = outcome.apply(r.Context(), tx, h.store, paymentID, actorWebhook)
		return err
	})
	var conflict *conflictError
	switch {
	case errors.Is(err, errUnknownIntent):
		// Acknowledged: the account's other integrations (the Dashboard, another service) make
		// PaymentIntents this table does not hold, and a retry would never find one. The
		// reconciler's reverse scan is where Stripe-only objects are looked for.
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "stripe webhook: no payment for the PaymentIntent; ignored",
			slog.String("event", ev.ID), slog.String("payment_intent", pi.ID))
		fmt.Fprintf(w, "no payment for %s\n", pi.ID)
	case errors.As(err, &conflict):
		// Acknowledged too: redelivery would meet the same conflict. The payment is left as it
		// is; the reconciler finds the difference and sends it to a person.
		h.log.LogAttrs(r.Context(), slog.LevelError, "stripe webhook: needs review",
			slog.String("event", ev.ID), slog.String("error", err.Error()))
		fmt.Fprintf(w, "payment %d: %s, not changed: needs review\n", paymentID, conflict.Status)
	case err != nil:
		// 500: Stripe retries with backoff for three days; the reconciler catches up after that.
		h.log.LogAttrs(r.Context(), slog.LevelError, "stripe webhook: not applied; Stripe will retry",
			slog.String("event", ev.ID), slog.String("error", err.Error()))
		http.Error(w, "not applied", http.StatusInternalServerError)
	case changed:
		fmt.Fprintf(w, "payment %d: pending -> %s\n", paymentID, outcome.to)
	default:
		fmt.Fprintf(w, "payment %d: already %s\n", paymentID, outcome.to)
	}
}

// outcomes are the events the handler applies: the writer of each, and the status it leads to.
var outcomes = map[stripe.EventType]struct {
	apply writer
	to    string
}{
	stripe.EventTypePaymentIntentSucceeded: {applyPaymentSucceeded, stripeadapter.LocalPaid},
	stripe.EventTypePaymentIntentCanceled:  {applyPaymentCanceled, stripeadapter.LocalFailed},
}
