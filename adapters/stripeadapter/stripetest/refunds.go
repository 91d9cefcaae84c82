package stripetest

import (
	"errors"
	"fmt"

	"github.com/stripe/stripe-go/v82"
)

// reState is a refund as stored, copied into events as snapshots.
type reState struct {
	id, account   string
	charge        string
	paymentIntent string
	currency      string
	created       int64
	amount        int64
	status        stripe.RefundStatus
	failureReason string // set while failed
	balanceTxn    string // the refund's balance transaction, type refund
	failureTxn    string // the refund_failure transaction that gave the amount back, if any
}

// refund is a stored Refund.
type refund struct {
	reState
	seq uint64
}

func (r *refund) sortKey() sortKey { return sortKey{r.created, r.seq} }

// knownRefundStatuses are the Refund statuses Stripe documents.
var knownRefundStatuses = map[stripe.RefundStatus]bool{
	stripe.RefundStatusPending:        true,
	stripe.RefundStatusRequiresAction: true,
	stripe.RefundStatusSucceeded:      true,
	stripe.RefundStatusFailed:         true,
	stripe.RefundStatusCanceled:       true,
}

// countsAsRefunded reports whether a refund in the status counts in its charge's
// amount_refunded: one that is under way or done does, one that failed or was canceled does
// not.
func countsAsRefunded(status stripe.RefundStatus) bool {
	return status != stripe.RefundStatusFailed && status != stripe.RefundStatusCanceled
}

// Refund refunds amount of an intent's charge at Options.Now, as a refund made in the
// Dashboard would: a succeeded refund "re_..." whose amount counts in the charge's
// amount_refunded (the charge is refunded once the whole captured amount is). Zero means all
// that is left. It records refund.created and then charge.refunded, and returns the refund's
// id. It fails for an unknown intent, one without a captured charge, or an amount above what
// is left to refund: what the charge captured less what its refunds returned; and, as Stripe
// does, for a charge under a chargeback (a dispute that is not an inquiry and not closed).
func (s *Server) Refund(piID string, amount int64) (refundID string, err error) {
	at := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.intents[piID]
	if !ok {
		return "", errors.New("stripetest: no such payment intent: " + piID)
	}
	ch := s.charges[in.latestCharge]
	if ch == nil || !ch.captured {
		return "", errors.New("stripetest: payment intent " + piID + " has no captured charge to refund")
	}
	if ch.chargedBack() {
		// Stripe refuses it (charge_disputed): the money is the dispute's now. An inquiry
		// does not stop a refund.
		return "", errors.New("stripetest: charge " + ch.id + " has been charged back; cannot issue a refund")
	}
	left := ch.refundable()
	if amount == 0 {
		amount = left
	}
	if amount <= 0 || amount > left {
		return "", fmt.Errorf("stripetest: cannot refund %d of %s: %d is left to refund", amount, ch.id, left)
	}
	s.seq++
	r := &refund{reState: reState{
		id:            s.newID("re_", func(id string) bool { return s.refunds[id] != nil }),
		account:       ch.account,
		charge:        ch.id,
		paymentIntent: in.id,
		currency:      ch.currency,
		created:       at,
		amount:        amount,
		status:        stripe.RefundStatusSucceeded,
	}, seq: s.seq}
	r.balanceTxn = s.refundMoves(r, "refund", at)
	s.refunds[r.id] = r
	indexOf(s.refundsBy, r.account).add(r)
	ch.refunds.add(r)
	ch.settleRefunds()
	s.addEvent("refund.created", at, r.account, r.reState)
	s.addEvent("charge.refunded", at, ch.account, ch.chState)
	return r.id, nil
}

// SetRefundStatus moves a refund to a status at Options.Now: pending, requires_action,
// succeeded, failed (with failureReason, such as "expired_or_canceled_card"; empty means
// "unknown") or canceled. The charge's amount_refunded and refunded follow, since only
// pending, requires_action and succeeded refunds count (see Refund). It records refund.updated,
// refund.failed when the refund failed, and charge.refund.updated, whose object is the refund.
// It fails for an unknown refund or status, a failure reason without failed, or a change that
// would refund more than the charge captured.
func (s *Server) SetRefundStatus(refundID string, status stripe.RefundStatus, failureReason string) error {
	if !knownRefundStatuses[status] {
		return fmt.Errorf("stripetest: unknown refund status %q", status)
	}
	if failureReason != "" && status != stripe.RefundStatusFailed {
		return fmt.Errorf("stripetest: a failure reason for a refund that is %s, not failed", status)
	}
	if status == stripe.RefundStatusFailed && failureReason == "" {
		failureReason = string(stripe.RefundFailureReasonUnknown)
	}
	at := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.refunds[refundID]
	if !ok {
		return errors.New("stripetest: no such refund: " + refundID)
	}
	ch := s.charges[r.charge]
	if countsAsRefunded(status) && !countsAsRefunded(r.status) && r.amount > ch.refundable() {
		return fmt.Errorf("stripetest: refund %s of %d would exceed what is left to refund on %s (%d)", r.id, r.amount, ch.id, ch.refundable())
	}
	switch was, counts := countsAsRefunded(r.status), countsAsRefunded(status); {
	case was && !counts:
		r.failureTxn = s.refundMoves(r, "refund_failure", at)
	case !was && counts:
		r.balanceTxn = s.refundMoves(r, "refund", at)
	}
	r.status, r.failureReason = status, failureReason
	ch.settleRefunds()
	s.addEvent("refund.updated", at, r.account, r.reState)
	if status == stripe.RefundStatusFailed {
		s.addEvent("refund.failed", at, r.account, r.reState)
	}
	s.addEvent("charge.refund.updated", at, r.account, r.reState)
	return nil
}

// refundMoves records the balance transaction of a refund's money at the time at: refund, the
// amount leaving the balance, or refund_failure, the amount coming back when a refund fails or
// is canceled after it counted. Both are available at once and carry no fee. The caller holds
// s.mu.
func (s *Server) refundMoves(r *refund, typ string, at int64) string {
	amount := r.amount
	if typ == "refund" {
		amount = -amount
	}
	return s.moveMoney(r.account, typ, reportingCategories[typ], r.id, r.currency, amount, nil, "", at, at)
}
