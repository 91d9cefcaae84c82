package stripetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// dpState is a dispute as stored, copied into events as snapshots.
type dpState struct {
	id, account   string
	charge        string
	paymentIntent string
	currency      string
	created       int64
	amount        int64
	status        stripe.DisputeStatus
	dueBy         int64 // 0: no response possible, rendered as null
	// txns are the dispute's balance transactions, oldest first; the slice is replaced, never
	// appended to in place, so that snapshots keep theirs.
	txns []*txnState
}

// dispute is a stored Dispute.
type dispute struct {
	dpState
	seq        uint64
	withdrawn  bool // opened as a chargeback, so winning it reinstates funds
	reinstated bool // won, and its funds are back in the balance
}

func (d *dispute) sortKey() sortKey { return sortKey{d.created, d.seq} }

// closedDisputes are the dispute statuses that end a dispute; a change to one of them records
// charge.dispute.closed rather than charge.dispute.updated.
var closedDisputes = map[stripe.DisputeStatus]bool{
	stripe.DisputeStatusWon:           true,
	stripe.DisputeStatusLost:          true,
	stripe.DisputeStatusWarningClosed: true,
	stripe.DisputeStatusPrevented:     true,
}

// knownDisputeStatuses are the Dispute statuses Stripe documents.
var knownDisputeStatuses = map[stripe.DisputeStatus]bool{
	stripe.DisputeStatusWarningNeedsResponse: true,
	stripe.DisputeStatusWarningUnderReview:   true,
	stripe.DisputeStatusWarningClosed:        true,
	stripe.DisputeStatusNeedsResponse:        true,
	stripe.DisputeStatusUnderReview:          true,
	stripe.DisputeStatusWon:                  true,
	stripe.DisputeStatusLost:                 true,
	stripe.DisputeStatusPrevented:            true,
}

// isInquiry reports whether a dispute in the status is an inquiry (Stripe's warning_
// statuses), which withdraws no funds and leaves the charge refundable, rather than a
// chargeback.
func isInquiry(status stripe.DisputeStatus) bool {
	return strings.HasPrefix(string(status), "warning_")
}

// withdraws reports whether a dispute created in the status takes its funds from the
// balance: a chargeback does, an inquiry or a prevented dispute does not.
func withdraws(status stripe.DisputeStatus) bool {
	return !isInquiry(status) && status != stripe.DisputeStatusPrevented
}

// Dispute opens a dispute "dp_..." of amount on an intent's charge at Options.Now, with the
// status and the evidence due date dueBy (zero: none, rendered as null). Zero amount means
// the whole captured amount. The reason is "fraudulent". The charge becomes disputed, and
// stays so. It records charge.dispute.created and, for a chargeback (not an inquiry, not
// prevented), charge.dispute.funds_withdrawn. It returns the dispute's id and fails for an
// unknown intent or status, an intent without a captured charge, or an amount above what it
// captured.
func (s *Server) Dispute(piID string, amount int64, status stripe.DisputeStatus, dueBy time.Time) (disputeID string, err error) {
	if !knownDisputeStatuses[status] {
		return "", fmt.Errorf("stripetest: unknown dispute status %q", status)
	}
	at := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.intents[piID]
	if !ok {
		return "", errors.New("stripetest: no such payment intent: " + piID)
	}
	ch := s.charges[in.latestCharge]
	if ch == nil || !ch.captured {
		return "", errors.New("stripetest: payment intent " + piID + " has no captured charge to dispute")
	}
	if amount == 0 {
		amount = ch.amountCaptured
	}
	if amount < 0 || amount > ch.amountCaptured {
		return "", fmt.Errorf("stripetest: cannot dispute %d of %s, which captured %d", amount, ch.id, ch.amountCaptured)
	}
	s.seq++
	d := &dispute{dpState: dpState{
		id:            s.newID("dp_", func(id string) bool { return s.disputes[id] != nil }),
		account:       ch.account,
		charge:        ch.id,
		paymentIntent: in.id,
		currency:      ch.currency,
		created:       at,
		amount:        amount,
		status:        status,
	}, seq: s.seq, withdrawn: withdraws(status)}
	if !dueBy.IsZero() {
		d.dueBy = dueBy.Unix()
	}
	s.disputes[d.id] = d
	indexOf(s.disputesBy, d.account).add(d)
	ch.disputes.add(d)
	ch.disputed = true
	if d.withdrawn {
		s.disputeMoves(d, -d.amount, at)
	}
	s.addEvent("charge.dispute.created", at, d.account, d.dpState)
	if d.withdrawn {
		s.addEvent("charge.dispute.funds_withdrawn", at, d.account, d.dpState)
	}
	return d.id, nil
}

// SetDisputeStatus moves a dispute to a status at Options.Now. It records
// charge.dispute.closed for the statuses that end a dispute (won, lost, warning_closed,
// prevented) and charge.dispute.updated for the others; an inquiry escalating to a chargeback
// also records charge.dispute.funds_withdrawn, and a chargeback that is won
// charge.dispute.funds_reinstated. A change to the current status records its event again. It
// fails for an unknown dispute or status.
func (s *Server) SetDisputeStatus(disputeID string, status stripe.DisputeStatus) error {
	if !knownDisputeStatuses[status] {
		return fmt.Errorf("stripetest: unknown dispute status %q", status)
	}
	at := s.now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.disputes[disputeID]
	if !ok {
		return errors.New("stripetest: no such dispute: " + disputeID)
	}
	if status == stripe.DisputeStatusWon && d.withdrawn && !d.reinstated {
		// The money comes back once, however often the status is set again.
		d.reinstated = true
		s.disputeMoves(d, d.amount, at)
	}
	d.status = status
	if !closedDisputes[status] {
		s.addEvent("charge.dispute.updated", at, d.account, d.dpState)
		// An inquiry that escalates becomes a chargeback: its funds leave the balance now.
		if !d.withdrawn && withdraws(status) {
			d.withdrawn = true
			s.disputeMoves(d, -d.amount, at)
			s.addEvent("charge.dispute.funds_withdrawn", at, d.account, d.dpState)
		}
		return nil
	}
	s.addEvent("charge.dispute.closed", at, d.account, d.dpState)
	if status == stripe.DisputeStatusWon && d.withdrawn {
		s.addEvent("charge.dispute.funds_reinstated", at, d.account, d.dpState)
	}
	return nil
}

// disputeMoves records a dispute's balance transaction at the time at: an adjustment of
// amount (negative: funds withdrawn, with the dispute fee; positive: funds reinstated on a won
// chargeback, without fee), reporting category dispute or dispute_reversal. The caller holds
// s.mu.
func (s *Server) disputeMoves(d *dispute, amount, at int64) {
	category, fee := "dispute", func(int64, string) int64 { return disputeFee }
	if amount > 0 {
		category, fee = "dispute_reversal", nil
	}
	id := s.moveMoney(d.account, "adjustment", category, d.id, d.currency, amount, fee, "Dispute fee", at, at)
	d.txns = append(slices.Clip(d.txns), &s.txns[id].txnState)
}
