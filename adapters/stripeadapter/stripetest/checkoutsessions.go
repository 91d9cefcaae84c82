package stripetest

import (
	"fmt"
	"maps"
	"net/url"
	"strconv"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// CheckoutSession is a Checkout Session held by the fake, in the fields the project reads.
type CheckoutSession struct {
	// ID is the object's id; empty means a generated one, "cs_test_" and 58 alphanumeric
	// characters, the shape of Stripe's test-mode ids.
	ID string
	// Account is the Connect account that owns the session; "" is the platform.
	Account string
	// Mode is payment, subscription or setup; empty means payment.
	Mode stripe.CheckoutSessionMode
	// Status is open, complete or expired; empty means open.
	Status stripe.CheckoutSessionStatus
	// PaymentStatus is paid, unpaid or no_payment_required; empty means paid for a complete
	// session and unpaid otherwise.
	PaymentStatus stripe.CheckoutSessionPaymentStatus
	// AmountTotal is the total, in the currency's smallest unit; it is also amount_subtotal.
	AmountTotal int64
	// Currency is a lowercase ISO code; empty means "usd".
	Currency string
	// PaymentIntent and Subscription are the ids of the session's intent or subscription;
	// empty means null. They must exist in the session's account.
	PaymentIntent, Subscription string
	// Customer is the customer's id; empty means null (a guest).
	Customer string
	// ClientReferenceID is the host's reference, such as its order id; empty means null.
	ClientReferenceID string
	// Created is when the session was created; zero means Options.Now.
	Created time.Time
	// ExpiresAt is when an open session expires; zero means 24 hours after Created, Stripe's
	// default. The fake does not expire sessions by itself: see ExpireCheckoutSession.
	ExpiresAt time.Time
	// Metadata is copied when the session is added.
	Metadata map[string]string
}

// csState is a Checkout Session as stored, copied into events as snapshots.
type csState struct {
	id, account       string
	mode              stripe.CheckoutSessionMode
	status            stripe.CheckoutSessionStatus
	paymentStatus     stripe.CheckoutSessionPaymentStatus
	amountTotal       int64
	currency          string
	paymentIntent     string
	subscription      string
	customer          string
	clientReferenceID string
	created           int64
	expiresAt         int64
	metadata          map[string]string
}

// session is a stored Checkout Session.
type session struct {
	csState
	seq uint64
}

func (cs *session) sortKey() sortKey { return sortKey{cs.created, cs.seq} }

var (
	knownSessionModes = map[stripe.CheckoutSessionMode]bool{
		stripe.CheckoutSessionModePayment:      true,
		stripe.CheckoutSessionModeSubscription: true,
		stripe.CheckoutSessionModeSetup:        true,
	}
	knownSessionStatuses = map[stripe.CheckoutSessionStatus]bool{
		stripe.CheckoutSessionStatusOpen:     true,
		stripe.CheckoutSessionStatusComplete: true,
		stripe.CheckoutSessionStatusExpired:  true,
	}
	knownSessionPaymentStatuses = map[stripe.CheckoutSessionPaymentStatus]bool{
		stripe.CheckoutSessionPaymentStatusPaid:              true,
		stripe.CheckoutSessionPaymentStatusUnpaid:            true,
		stripe.CheckoutSessionPaymentStatusNoPaymentRequired: true,
	}
)

// AddCheckoutSession stores cs and returns its id. It records no event: Stripe sends none when
// a session is created. It panics, as a broken fixture should, if the id is already used, a
// mode or status is unknown, or the intent or subscription does not exist in the session's
// account.
func (s *Server) AddCheckoutSession(cs CheckoutSession) string {
	return s.AddCheckoutSessions([]CheckoutSession{cs})[0]
}

// AddCheckoutSessions stores many sessions at once, like AddCheckoutSession, and returns their
// ids in order.
func (s *Server) AddCheckoutSessions(css []CheckoutSession) []string {
	return addObjects(s, css, adding[CheckoutSession, csState, *session]{
		kind: sessionObjects, name: "checkout session",
		objects:  func(s *Server) *map[string]*session { return &s.sessions },
		idPrefix: "cs_test_", idLen: 58,
		created: func(cs CheckoutSession) time.Time { return cs.Created },
		build:   buildSession,
		id:      func(st *csState) *string { return &st.id },
		store:   func(st csState, seq uint64) *session { return &session{csState: st, seq: seq} },
	})
}

// buildSession is an added session's state, with its defaults; it panics for a broken
// fixture, as AddCheckoutSession documents. The caller holds s.mu.
func buildSession(s *Server, cs CheckoutSession, created int64) csState {
	st := csState{
		id:                cs.ID,
		account:           cs.Account,
		mode:              cs.Mode,
		status:            cs.Status,
		paymentStatus:     cs.PaymentStatus,
		amountTotal:       cs.AmountTotal,
		currency:          cs.Currency,
		paymentIntent:     cs.PaymentIntent,
		subscription:      cs.Subscription,
		customer:          cs.Customer,
		clientReferenceID: cs.ClientReferenceID,
		created:           created,
	}
	st.expiresAt = st.created + 24*60*60
	if !cs.ExpiresAt.IsZero() {
		st.expiresAt = cs.ExpiresAt.Unix()
	}
	if st.mode == "" {
		st.mode = stripe.CheckoutSessionModePayment
	}
	if st.status == "" {
		st.status = stripe.CheckoutSessionStatusOpen
	}
	if st.paymentStatus == "" {
		st.paymentStatus = stripe.CheckoutSessionPaymentStatusUnpaid
		if st.status == stripe.CheckoutSessionStatusComplete {
			st.paymentStatus = stripe.CheckoutSessionPaymentStatusPaid
		}
	}
	if !knownSessionModes[st.mode] || !knownSessionStatuses[st.status] || !knownSessionPaymentStatuses[st.paymentStatus] {
		panic(fmt.Sprintf("stripetest: unknown checkout session mode, status or payment status: %q, %q, %q", st.mode, st.status, st.paymentStatus))
	}
	if st.currency == "" {
		st.currency = "usd"
	}
	if in := s.intents[st.paymentIntent]; st.paymentIntent != "" && (in == nil || in.account != st.account) {
		panic("stripetest: checkout session of an unknown payment intent " + st.paymentIntent + " (or one of another account)")
	}
	if sb := s.subs[st.subscription]; st.subscription != "" && (sb == nil || sb.account != st.account) {
		panic("stripetest: checkout session of an unknown subscription " + st.subscription + " (or one of another account)")
	}
	if len(cs.Metadata) > 0 {
		st.metadata = maps.Clone(cs.Metadata)
	}
	return st
}

// CheckoutSession returns the session with the id, whatever its account.
func (s *Server) CheckoutSession(id string) (CheckoutSession, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok := s.sessions[id]
	if !ok {
		return CheckoutSession{}, false
	}
	return CheckoutSession{
		ID:                cs.id,
		Account:           cs.account,
		Mode:              cs.mode,
		Status:            cs.status,
		PaymentStatus:     cs.paymentStatus,
		AmountTotal:       cs.amountTotal,
		Currency:          cs.currency,
		PaymentIntent:     cs.paymentIntent,
		Subscription:      cs.subscription,
		Customer:          cs.customer,
		ClientReferenceID: cs.clientReferenceID,
		Created:           unixTime(cs.created),
		ExpiresAt:         unixTime(cs.expiresAt),
		Metadata:          maps.Clone(cs.metadata),
	}, true
}

// CompleteCheckoutSession completes an open session at Options.Now with the payment status
// (paid, unpaid for a delayed payment method such as a bank debit, or no_payment_required) and
// records checkout.session.completed. It fails for an unknown session or payment status, or a
// session that is not open.
func (s *Server) CompleteCheckoutSession(id string, paymentStatus stripe.CheckoutSessionPaymentStatus) error {
	if !knownSessionPaymentStatuses[paymentStatus] {
		return fmt.Errorf("stripetest: unknown checkout session payment status %q", paymentStatus)
	}
	return s.changeSession(id, func(cs *session) (string, error) {
		if cs.status != stripe.CheckoutSessionStatusOpen {
			return "", fmt.Errorf("stripetest: checkout session %s is %s, not open", cs.id, cs.status)
		}
		cs.status, cs.paymentStatus = stripe.CheckoutSessionStatusComplete, paymentStatus
		return "checkout.session.completed", nil
	})
}

// SettleCheckoutSession ends the delayed payment of a session completed unpaid, at Options.Now:
// succeeded makes it paid and records checkout.session.async_payment_succeeded; otherwise it
// stays unpaid and checkout.session.async_payment_failed is recorded. It fails for an unknown
// session or one that is not complete and unpaid.
func (s *Server) SettleCheckoutSession(id string, succeeded bool) error {
	return s.changeSession(id, func(cs *session) (string, error) {
		if cs.status != stripe.CheckoutSessionStatusComplete || cs.paymentStatus != stripe.CheckoutSessionPaymentStatusUnpaid {
			return "", fmt.Errorf("stripetest: checkout session %s is %s and %s, not complete and unpaid", cs.id, cs.status, cs.paymentStatus)
		}
		if !succeeded {
			return "checkout.session.async_payment_failed", nil
		}
		cs.paymentStatus = stripe.CheckoutSessionPaymentStatusPaid
		return "checkout.session.async_payment_succeeded", nil
	})
}

// ExpireCheckoutSession expires an open session at Options.Now, as Stripe does once its
// expires_at passes or the host expires it, and records checkout.session.expired. It fails
// for an unknown session or one that is not open.
func (s *Server) ExpireCheckoutSession(id string) error {
	return s.changeSession(id, func(cs *session) (string, error) {
		if cs.status != stripe.CheckoutSessionStatusOpen {
			return "", fmt.Errorf("stripetest: checkout session %s is %s, not open", cs.id, cs.status)
		}
		cs.status = stripe.CheckoutSessionStatusExpired
		return "checkout.session.expired", nil
	})
}

// changeSession applies change to a session under the lock and records the event it names at
// Options.Now, with a snapshot after the change.
func (s *Server) changeSession(id string, change func(*session) (string, error)) error {
	return changeObject(s, sessionObjects, "checkout session", id, s.now().Unix(), func(cs *session) snapshot { return cs.csState }, func(cs *session) ([]string, error) {
		typ, err := change(cs)
		if err != nil {
			return nil, err
		}
		return []string{typ}, nil
	})
}

// sessionObjects serves the Checkout Session routes.
var sessionObjects = objectKind[*session]{object: kindSession, path: "/v1/checkout/sessions",
	param:     "session",
	byID:      func(s *Server) map[string]*session { return s.sessions },
	byAccount: func(s *Server) map[string]*index[*session] { return s.sessionsBy },
	account:   func(cs *session) string { return cs.account },
	render:    func(b []byte, cs *session, x expander) []byte { return appendSession(b, &cs.csState, x) },
	own: func(param string) bool {
		return param == "status" || param == "payment_intent" || param == "subscription" || param == "customer"
	},
	selection: func(s *Server, account string, q url.Values) (*index[*session], func(*session) bool, *failure) {
		status := stripe.CheckoutSessionStatus(q.Get("status"))
		if q.Has("status") && !knownSessionStatuses[status] {
			return nil, nil, invalidRequest("status", "Invalid status: must be one of complete, expired, or open")
		}
		if !q.Has("status") && !q.Has("payment_intent") && !q.Has("subscription") && !q.Has("customer") {
			return s.sessionsBy[account], nil, nil
		}
		pi, sub, customer := q.Get("payment_intent"), q.Get("subscription"), q.Get("customer")
		return s.sessionsBy[account], func(cs *session) bool {
			return (!q.Has("status") || cs.status == status) &&
				(!q.Has("payment_intent") || cs.paymentIntent == pi) &&
				(!q.Has("subscription") || cs.subscription == sub) &&
				(!q.Has("customer") || cs.customer == customer)
		}, nil
	},
}

// appendSession appends a Checkout Session as Stripe renders it, in the fields
// stripe.CheckoutSession decodes; fields the fake does not model are null or empty. url is
// null once the session is no longer open, as in Stripe.
func appendSession(b []byte, st *csState, e expander) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, st.id)
	b = append(b, `,"object":"checkout.session","after_expiration":null,"allow_promotion_codes":null,"amount_subtotal":`...)
	b = strconv.AppendInt(b, st.amountTotal, 10)
	b = append(b, `,"amount_total":`...)
	b = strconv.AppendInt(b, st.amountTotal, 10)
	b = append(b, `,"automatic_tax":{"enabled":false,"liability":null,"provider":null,"status":null},"billing_address_collection":null,"cancel_url":null,"client_reference_id":`...)
	b = appendNullable(b, st.clientReferenceID)
	b = append(b, `,"consent":null,"consent_collection":null,"created":`...)
	b = strconv.AppendInt(b, st.created, 10)
	b = append(b, `,"currency":`...)
	b = appendString(b, st.currency)
	b = append(b, `,"custom_fields":[],"customer":`...)
	b = appendNullable(b, st.customer)
	b = append(b, `,"customer_creation":null,"customer_details":null,"customer_email":null,"expires_at":`...)
	b = strconv.AppendInt(b, st.expiresAt, 10)
	b = append(b, `,"invoice":null,"livemode":false,"locale":null,"metadata":`...)
	b = appendMetadata(b, st.metadata)
	b = append(b, `,"mode":`...)
	b = appendString(b, string(st.mode))
	b = append(b, `,"payment_intent":`...)
	b = e.appendIntentRef(b, st.paymentIntent)
	b = append(b, `,"payment_link":null,"payment_method_types":["card"],"payment_status":`...)
	b = appendString(b, string(st.paymentStatus))
	b = append(b, `,"setup_intent":null,"shipping_address_collection":null,"status":`...)
	b = appendString(b, string(st.status))
	b = append(b, `,"submit_type":null,"subscription":`...)
	b = e.appendRef(b, "subscription", st.subscription, func(b []byte, sub expander) []byte {
		return appendSubscription(b, &e.s.subs[st.subscription].subState, sub)
	})
	b = append(b, `,"success_url":null,"ui_mode":"hosted","url":`...)
	if st.status == stripe.CheckoutSessionStatusOpen {
		b = appendStrings(b, "https://checkout.stripe.com/c/pay/", st.id)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}

// appendNullable appends s as a JSON string, or null when it is empty.
func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

func (st csState) appendJSON(b []byte) []byte { return appendSession(b, &st, expander{}) }
