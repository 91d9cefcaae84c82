package stripetest

import (
	"net/http"
	"net/url"

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
}

// charge is a stored Charge with its refunds and disputes, indexed for the lists filtered by
// charge or payment intent.
type charge struct {
	chState
	refunds  index[*refund]
	disputes index[*dispute]
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
	if capture {
		ch.amountCaptured = in.received()
		ch.settleRefunds()
	}
	s.charges[ch.id] = ch
	in.latestCharge = ch.id
	return ch, "charge.succeeded"
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
