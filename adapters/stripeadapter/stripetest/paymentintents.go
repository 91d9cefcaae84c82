package stripetest

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// PaymentIntent is a PaymentIntent held by the fake, in the fields the project reads.
type PaymentIntent struct {
	// ID is the object's id; empty means a generated one, "pi_" and 24 alphanumeric
	// characters.
	ID string
	// Account is the Connect account ("acct_...") that owns the intent; "" is the platform.
	// A request with the header Stripe-Account: X sees only X's objects, a request without it
	// only the platform's.
	Account string
	// Status is the intent's status; empty means requires_payment_method, as for a new
	// intent.
	Status stripe.PaymentIntentStatus
	// Created is when the intent was created; zero means Options.Now. It is kept with second
	// precision, like Stripe.
	Created time.Time
	// Amount is in the currency's smallest unit.
	Amount int64
	// AmountReceived is what the intent collects when it succeeds, less than Amount after a
	// partial capture; zero means Amount. It must not exceed Amount.
	AmountReceived int64
	// Currency is a lowercase ISO code; empty means "usd".
	Currency string
	// Metadata is copied when the intent is added, so the caller may reuse its map.
	Metadata map[string]string
}

// piState is an intent as stored: the exported fields plus what status changes record. Values
// are copied into events as snapshots; Metadata is never modified after the intent is added,
// so snapshots can share it.
type piState struct {
	id, account    string
	status         stripe.PaymentIntentStatus
	created        int64
	amount         int64
	amountReceived int64 // 0: amount
	currency       string
	metadata       map[string]string
	canceledAt     int64
	latestCharge   string // the charge's id, "" before the intent first succeeds or requires capture
}

// received is what the intent collects once it succeeds.
func (st *piState) received() int64 {
	if st.amountReceived > 0 {
		return st.amountReceived
	}
	return st.amount
}

// intent is a stored PaymentIntent.
type intent struct {
	piState
	seq uint64
}

func (in *intent) sortKey() sortKey { return sortKey{in.created, in.seq} }

// knownStatuses are the PaymentIntent statuses Stripe documents.
var knownStatuses = map[stripe.PaymentIntentStatus]bool{
	stripe.PaymentIntentStatusCanceled:              true,
	stripe.PaymentIntentStatusProcessing:            true,
	stripe.PaymentIntentStatusRequiresAction:        true,
	stripe.PaymentIntentStatusRequiresCapture:       true,
	stripe.PaymentIntentStatusRequiresConfirmation:  true,
	stripe.PaymentIntentStatusRequiresPaymentMethod: true,
	stripe.PaymentIntentStatusSucceeded:             true,
}

// AddPaymentIntent stores pi and records a payment_intent.created event at pi.Created. It
// returns the intent's id. It panics, as a broken fixture should, if the id is already used
// or the status is not one Stripe knows.
func (s *Server) AddPaymentIntent(pi PaymentIntent) string {
	return s.AddPaymentIntents([]PaymentIntent{pi})[0]
}

// AddPaymentIntents stores many intents at once, like AddPaymentIntent, and returns their ids
// in order. Loading n intents costs O(n log n) in all, so fixtures of 200k intents load fast.
func (s *Server) AddPaymentIntents(pis []PaymentIntent) []string {
	now := s.now().Unix()
	ids := make([]string, len(pis))
	s.mu.Lock()
	defer s.mu.Unlock()
	// Maps are sized once for a big load instead of rehashing as they grow.
	if len(pis) > len(s.intents) {
		s.intents = grown(s.intents, len(pis))
	}
	if len(pis) > len(s.events) {
		s.events = grown(s.events, len(pis))
	}
	for i, pi := range pis {
		st := piState{
			id:       pi.ID,
			account:  pi.Account,
			status:   pi.Status,
			created:  now,
			amount:   pi.Amount,
			currency: pi.Currency,
		}
		if pi.AmountReceived < 0 || pi.AmountReceived > pi.Amount {
			panic(fmt.Sprintf("stripetest: amount received %d is not within the amount %d", pi.AmountReceived, pi.Amount))
		}
		st.amountReceived = pi.AmountReceived
		if !pi.Created.IsZero() {
			st.created = pi.Created.Unix()
		}
		if st.status == "" {
			st.status = stripe.PaymentIntentStatusRequiresPaymentMethod
		}
		if !knownStatuses[st.status] {
			panic(fmt.Sprintf("stripetest: unknown payment intent status %q", st.status))
		}
		if st.currency == "" {
			st.currency = "usd"
		}
		if len(pi.Metadata) > 0 {
			st.metadata = maps.Clone(pi.Metadata)
		}
		if st.id == "" {
			st.id = s.newID("pi_", func(id string) bool { return s.intents[id] != nil })
		} else if _, dup := s.intents[st.id]; dup {
			panic("stripetest: duplicate payment intent id " + st.id)
		}
		s.seq++
		in := &intent{piState: st, seq: s.seq}
		s.intents[in.id] = in
		indexOf(s.intentsBy, in.account).add(in)
		s.knowAccount(in.account)
		// An intent added as charged gets its charge without charge events: the fixture
		// stands for its history, as it does for the intent's own status.
		s.chargeFor(in, in.created)
		s.addEvent("payment_intent.created", in.created, in.account, in.piState)
		ids[i] = in.id
	}
	return ids
}

// grown returns a copy of m with room for n more entries.
func grown[V any](m map[string]V, n int) map[string]V {
	out := make(map[string]V, len(m)+n)
	maps.Copy(out, m)
	return out
}

// indexOf returns the account's index, creating it on first use.
func indexOf[T keyed](by map[string]*index[T], account string) *index[T] {
	x := by[account]
	if x == nil {
		x = &index[T]{}
		by[account] = x
	}
	return x
}

// SetStatus changes an intent's status at Options.Now; see SetStatusAt.
func (s *Server) SetStatus(id string, status stripe.PaymentIntentStatus) error {
	return s.SetStatusAt(id, status, s.now())
}

// SetStatusAt changes an intent's status and records the event Stripe sends for it, created at
// at: payment_intent.succeeded, .canceled, .processing, .requires_action,
// .amount_capturable_updated (requires_capture) or .payment_failed (back to
// requires_payment_method). requires_confirmation records no event, as in Stripe. A status
// change to the current status records the event again, so tests control events exactly. A
// zero at means Options.Now. It fails for an unknown id or status.
//
// The first change to succeeded or requires_capture creates the intent's charge, its
// latest_charge, and records charge.succeeded before the intent's event; a later change from
// requires_capture to succeeded captures that charge (charge.captured). An intent keeps its
// one charge whatever its status later becomes.
func (s *Server) SetStatusAt(id string, status stripe.PaymentIntentStatus, at time.Time) error {
	if !knownStatuses[status] {
		return fmt.Errorf("stripetest: unknown payment intent status %q", status)
	}
	if at.IsZero() {
		at = s.now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.intents[id]
	if !ok {
		return errors.New("stripetest: no such payment intent: " + id)
	}
	in.status = status
	if status == stripe.PaymentIntentStatusCanceled {
		in.canceledAt = at.Unix()
	}
	if ch, event := s.chargeFor(in, at.Unix()); event != "" {
		s.addEvent(event, at.Unix(), ch.account, ch.chState)
	}
	if typ, ok := eventTypes[status]; ok {
		s.addEvent(typ, at.Unix(), in.account, in.piState)
	}
	return nil
}

// SetAmountReceived sets what an intent collects, as a partial capture does: amount_received
// once it succeeds and its charge's amount_captured once captured, the released remainder
// (amount − amount_captured) counted in the charge's amount_refunded as Stripe does. Zero means
// the whole amount. On an intent that requires capture it takes effect when the intent succeeds; on one
// that already succeeded it takes effect at once, without an event (a fixture's shortcut:
// Stripe cannot change a captured amount). It fails for an unknown id, an amount outside
// [0, amount], or one below what the charge's refunds have refunded.
func (s *Server) SetAmountReceived(piID string, amount int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.intents[piID]
	if !ok {
		return errors.New("stripetest: no such payment intent: " + piID)
	}
	if amount < 0 || amount > in.amount {
		return fmt.Errorf("stripetest: amount received %d is not within the amount %d of %s", amount, in.amount, piID)
	}
	ch := s.charges[in.latestCharge]
	received := amount
	if received == 0 {
		received = in.amount
	}
	if ch != nil && ch.captured && received < ch.refundedByRefunds() {
		return fmt.Errorf("stripetest: amount received %d is below the %d refunded on %s", received, ch.refundedByRefunds(), ch.id)
	}
	in.amountReceived = amount
	if ch != nil && ch.captured {
		ch.amountCaptured = received
		ch.settleRefunds()
	}
	return nil
}

// PaymentIntent returns the intent with the id, whatever its account.
func (s *Server) PaymentIntent(id string) (PaymentIntent, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.intents[id]
	if !ok {
		return PaymentIntent{}, false
	}
	return PaymentIntent{
		ID:             in.id,
		Account:        in.account,
		Status:         in.status,
		Created:        time.Unix(in.created, 0).UTC(),
		Amount:         in.amount,
		AmountReceived: in.amountReceived,
		Currency:       in.currency,
		Metadata:       maps.Clone(in.metadata),
	}, true
}

// retrievePaymentIntent serves GET /v1/payment_intents/{id}, appending the answer to b.
func (s *Server) retrievePaymentIntent(b []byte, account, id string, q url.Values) ([]byte, *failure) {
	for param := range q {
		if param != "client_secret" && !isArrayParam(param, "expand") {
			return b, unknownParameter(param)
		}
	}
	x, f := parseExpand(q, kindPaymentIntent, false)
	if f != nil {
		return b, f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.intents[id]
	if !ok || in.account != account {
		return b, noSuch(http.StatusNotFound, "payment_intent", id, "intent")
	}
	return appendPaymentIntent(b, &in.piState, expander{s, x}), nil
}

// listPaymentIntents serves GET /v1/payment_intents, appending the answer to b.
func (s *Server) listPaymentIntents(b []byte, account string, q url.Values) ([]byte, *failure) {
	lq, f := parseList(q, func(param string) bool { return param == "customer" })
	if f != nil {
		return b, f
	}
	x, f := parseExpand(q, kindPaymentIntent, true)
	if f != nil {
		return b, f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	page, hasMore, f := pageOf(s.intentsBy[account], lq, "payment_intent", func(id string) (*intent, bool) {
		in, ok := s.intents[id]
		return in, ok && in.account == account
	}, nil)
	if f != nil {
		return b, f
	}
	// Rendered under the lock, as intents change; a page renders in microseconds.
	return appendList(b, "/v1/payment_intents", page, hasMore, func(b []byte, in *intent) []byte {
		return appendPaymentIntent(b, &in.piState, expander{s, x})
	}), nil
}
