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
	// Currency is a lowercase ISO code; empty means "usd".
	Currency string
	// Metadata is copied when the intent is added, so the caller may reuse its map.
	Metadata map[string]string
}

// piState is an intent as stored: the exported fields plus what status changes record. Values
// are copied into events as snapshots; Metadata is never modified after the intent is added,
// so snapshots can share it.
type piState struct {
	id, account string
	status      stripe.PaymentIntentStatus
	created     int64
	amount      int64
	currency    string
	metadata    map[string]string
	canceledAt  int64
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
			st.id = s.newIntentID()
		} else if _, dup := s.intents[st.id]; dup {
			panic("stripetest: duplicate payment intent id " + st.id)
		}
		s.seq++
		in := &intent{piState: st, seq: s.seq}
		s.intents[in.id] = in
		indexOf(s.intentsBy, in.account).add(in)
		s.addEvent("payment_intent.created", in.created, in.piState)
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

// newIntentID generates an unused id; the caller holds s.mu.
func (s *Server) newIntentID() string {
	for {
		id := randomID("pi_", 24)
		if _, used := s.intents[id]; !used {
			return id
		}
	}
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
	if typ, ok := eventTypes[status]; ok {
		s.addEvent(typ, at.Unix(), in.piState)
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
		ID:       in.id,
		Account:  in.account,
		Status:   in.status,
		Created:  time.Unix(in.created, 0).UTC(),
		Amount:   in.amount,
		Currency: in.currency,
		Metadata: maps.Clone(in.metadata),
	}, true
}

// retrievePaymentIntent serves GET /v1/payment_intents/{id}, appending the answer to b.
func (s *Server) retrievePaymentIntent(b []byte, account, id string, q url.Values) ([]byte, *failure) {
	for param := range q {
		if param != "client_secret" && !isArrayParam(param, "expand") {
			return b, unknownParameter(param)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.intents[id]
	if !ok || in.account != account {
		return b, noSuch(http.StatusNotFound, "payment_intent", id, "intent")
	}
	return appendPaymentIntent(b, &in.piState), nil
}

// listPaymentIntents serves GET /v1/payment_intents, appending the answer to b.
func (s *Server) listPaymentIntents(b []byte, account string, q url.Values) ([]byte, *failure) {
	lq, f := parseList(q, func(param string) bool { return param == "customer" })
	if f != nil {
		return b, f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.intentsBy[account]
	if x == nil {
		x = &index[*intent]{} // not stored: a query must not create accounts
	}
	cursor := -1
	if param, id := lq.cursor(); id != "" {
		in, ok := s.intents[id]
		if !ok || in.account != account {
			return b, noSuch(http.StatusBadRequest, "payment_intent", id, param)
		}
		x.sort()
		cursor = x.position(in)
	}
	page, hasMore := paginate(x, lq, cursor, nil)
	// Rendered under the lock, as intents change; a page renders in microseconds.
	return appendList(b, "/v1/payment_intents", page, hasMore, func(b []byte, in *intent) []byte {
		return appendPaymentIntent(b, &in.piState)
	}), nil
}
