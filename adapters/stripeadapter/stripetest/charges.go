package stripetest

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// chState is a charge as stored, copied into events as snapshots. The fake's charges are card
// payments that went through: status succeeded, authorized, captured or not.
type chState struct {
	id, account    string
	paymentIntent  string
	currency       string
	created        int64
	amount         int64
	amountCaptured int64 // 0 until captured
	amountRefunded int64 // the refunds that count, see countsAsRefunded, and released()
	captured       bool
	refunded       bool // the whole captured amount is refunded
	disputed       bool
	balanceTxn     string // the charge's balance transaction, once captured
	failureCode    string // set once the payment failed after succeeding (FailPayment)
	failureTxn     string // the payment_failure_refund transaction then
}

// charge is a stored Charge with its refunds and disputes, indexed for the lists filtered by
// charge or payment intent.
type charge struct {
	chState
	seq      uint64
	refunds  index[*refund]
	disputes index[*dispute]
}

func (ch *charge) sortKey() sortKey { return sortKey{ch.created, ch.seq} }

// chargeObjects serves GET /v1/charges: a payment intent's charge (each intent has at most
// one), or nothing for a customer, since the fake's charges have none.
var chargeObjects = objectKind[*charge]{object: kindCharge, path: "/v1/charges",
	byID:      func(s *Server) map[string]*charge { return s.charges },
	byAccount: func(s *Server) map[string]*index[*charge] { return s.chargesBy },
	account:   func(ch *charge) string { return ch.account },
	render:    func(b []byte, ch *charge, x expander) []byte { return appendCharge(b, &ch.chState, x) },
	own: func(param string) bool {
		return param == "payment_intent" || param == "customer" || param == "transfer_group"
	},
	selection: func(s *Server, account string, q url.Values) (*index[*charge], func(*charge) bool, *failure) {
		switch {
		case q.Has("customer") || q.Has("transfer_group"):
			return nil, nil, nil
		case q.Has("payment_intent"):
			in, ok := s.intents[q.Get("payment_intent")]
			if !ok || in.account != account {
				return nil, nil, nil
			}
			id := in.latestCharge
			return s.chargesBy[account], func(ch *charge) bool { return ch.id == id }, nil
		}
		return s.chargesBy[account], nil, nil
	},
}

// chargeFor gives in the charge its status calls for, at the time at: a new one, uncaptured,
// when the intent requires capture; a new or newly captured one when it succeeded. It returns
// the charge and the event the change records (charge.succeeded for a new charge,
// charge.captured for a capture), "" when nothing changed. The caller holds s.mu.
func (s *Server) chargeFor(in *intent, at int64) (*charge, string) {
	capture := in.status == stripe.PaymentIntentStatusSucceeded
	if !capture && in.status != stripe.PaymentIntentStatusRequiresCapture {
		return nil, ""
	}
	if ch := s.charges[in.latestCharge]; ch != nil {
		if !capture || ch.captured {
			return ch, ""
		}
		ch.captured, ch.amountCaptured = true, in.received()
		ch.settleRefunds()
		s.chargeSettles(ch, at)
		return ch, "charge.captured"
	}
	ch := &charge{chState: chState{
		id:            s.newID("ch_", func(id string) bool { return s.charges[id] != nil }),
		account:       in.account,
		paymentIntent: in.id,
		currency:      in.currency,
		created:       at,
		amount:        in.amount,
		captured:      capture,
	}}
	s.seq++
	ch.seq = s.seq
	s.charges[ch.id] = ch
	indexOf(s.chargesBy, ch.account).add(ch)
	if capture {
		ch.amountCaptured = in.received()
		ch.settleRefunds()
		s.chargeSettles(ch, at)
	}
	in.latestCharge = ch.id
	return ch, "charge.succeeded"
}

// chargeSettles records the balance transaction of a charge just captured at the time at: type
// charge, what it captured settled into the account's currency, Stripe's fee, available two
// days later. The caller holds s.mu.
func (s *Server) chargeSettles(ch *charge, at int64) {
	ch.balanceTxn = s.moveMoney(ch.account, "charge", "charge", ch.id, ch.currency, ch.amountCaptured,
		s.fee, "Stripe processing fees", at, at+int64(availableAfter/time.Second))
}

// newID generates an id with the prefix that used does not report as taken; the caller holds
// s.mu.
func (s *Server) newID(prefix string, used func(string) bool) string {
	for {
		if id := randomID(prefix, 24); !used(id) {
			return id
		}
	}
}

// settleRefunds recomputes what the charge has refunded: the authorised amount a partial
// capture released, then its refunds. Pending, requires_action and succeeded refunds count;
// failed and canceled ones do not, so a refund that fails after succeeding gives its amount back
// to the charge. This is the fake's model of Stripe's documented behaviour, where a failed
// refund's amount returns to the account balance. The released amount in amount_refunded is
// Stripe's observed behaviour, not its documented one (see the package doc). The charge is
// refunded once its refunds reach what it captured.
func (ch *charge) settleRefunds() {
	sum := ch.refundedByRefunds()
	ch.amountRefunded = ch.released() + sum
	ch.refunded = ch.captured && ch.amountCaptured > 0 && sum >= ch.amountCaptured
}

// refundedByRefunds is what the charge's refunds that count return to the customer.
func (ch *charge) refundedByRefunds() int64 {
	var sum int64
	for _, e := range ch.refunds.items {
		if countsAsRefunded(e.v.status) {
			sum += e.v.amount
		}
	}
	return sum
}

// released is the authorised amount a partial capture let go: amount − amount_captured once the
// charge is captured, 0 before.
func (ch *charge) released() int64 {
	if !ch.captured {
		return 0
	}
	return ch.amount - ch.amountCaptured
}

// refundable is what is left to refund on the charge: what it captured, less its refunds.
// chargedBack reports whether a chargeback is open on the charge: a dispute that is neither
// an inquiry nor closed. The caller holds s.mu.
func (ch *charge) chargedBack() bool {
	for _, e := range ch.disputes.items {
		if d := e.v; !isInquiry(d.status) && !closedDisputes[d.status] {
			return true
		}
	}
	return false
}

func (ch *charge) refundable() int64 {
	if !ch.captured {
		return 0
	}
	return ch.amountCaptured - ch.refundedByRefunds()
}

// retrieveCharge serves GET /v1/charges/{id}, appending the answer to b.
func (s *Server) retrieveCharge(b []byte, account, id string, q url.Values) ([]byte, *failure) {
	for param := range q {
		if !isArrayParam(param, "expand") {
			return b, unknownParameter(param)
		}
	}
	x, f := parseExpand(q, kindCharge, false)
	if f != nil {
		return b, f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.charges[id]
	if !ok || ch.account != account {
		return b, noSuch(http.StatusNotFound, "charge", id, "charge")
	}
	return appendCharge(b, &ch.chState, expander{s, x}), nil
}

// FailPayment fails an intent's payment after it succeeded, as a bank debit (ACH, SEPA) that
// the customer's bank returns days later does, at Options.Now: the charge's status becomes
// failed with failureCode (empty means "debit_not_authorized"), the money it brought in leaves
// the balance again in a payment_failure_refund balance transaction of −(what it captured,
// settled; reporting category charge_failure, the fee is not returned), and the intent goes
// back to requires_payment_method. It records charge.failed, then
// payment_intent.payment_failed. It fails for an unknown intent, one without a captured
// charge, or a payment that already failed.
func (s *Server) FailPayment(piID, failureCode string) error {
	if failureCode == "" {
		failureCode = "debit_not_authorized"
	}
	at := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.intents[piID]
	if !ok {
		return errors.New("stripetest: no such payment intent: " + piID)
	}
	ch := s.charges[in.latestCharge]
	switch {
	case ch == nil || !ch.captured:
		return errors.New("stripetest: payment intent " + piID + " has no captured charge to fail")
	case ch.failureCode != "":
		return errors.New("stripetest: the payment of " + piID + " has already failed")
	}
	ch.failureCode = failureCode
	ch.failureTxn = s.moveMoney(ch.account, "payment_failure_refund", "charge_failure", ch.id, ch.currency, -ch.amountCaptured, nil, "", at, at)
	in.status = stripe.PaymentIntentStatusRequiresPaymentMethod
	s.addEvent("charge.failed", at, ch.account, ch.chState)
	s.addEvent(eventTypes[in.status], at, in.account, in.piState)
	return nil
}
