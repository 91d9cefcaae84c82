package tieout

import "time"

// GroupState is what a group's status means for the money, whatever the external system calls
// it.
type GroupState int

// The states of a group. The zero GroupState is invalid, so a forgotten field is caught.
const (
	// GroupPending: the money is on its way (Stripe's pending, in_transit).
	GroupPending GroupState = iota + 1
	// GroupPaid: the external system says the money arrived (Stripe's paid). Not terminal by
	// itself: see Group.Terminal.
	GroupPaid
	// GroupFailed: the money did not arrive, or came back (Stripe's failed, canceled).
	GroupFailed
)

var groupStateNames = [...]string{"", "pending", "paid", "failed"}

// String returns the state's name.
func (s GroupState) String() string {
	if s >= GroupPending && s <= GroupFailed {
		return groupStateNames[s]
	}
	return "invalid"
}

// Group is one payout: a sum of money moved to the bank in one go.
type Group struct {
	// ID is the external id, such as po_....
	ID string
	// Account is the account the group belongs to (a Stripe connected account's acct_...);
	// empty for the platform's own.
	Account string
	// Status is the status as the external system names it, for findings.
	Status string
	// State is what Status means for the money.
	State GroupState
	// Terminal reports that the status can no longer change. Stripe's paid is not terminal: a
	// paid payout can still fail.
	Terminal bool
	// Amount is the amount paid out, in minor units of Currency, the settlement currency.
	Amount   int64
	Currency string
	// Itemized reports that the external system can list the group's members. A manual Stripe
	// payout cannot be itemized: it is reported as such, never as a sum that does not hold.
	Itemized bool
}

// The booked kinds: what a member is, as a host books it. A policy maps the external system's
// types onto them (stripepolicy.BalanceTransactionKinds).
const (
	// KindPayment: money taken from a customer (a charge).
	KindPayment = "payment"
	// KindRefund: money given back (a refund, negative).
	KindRefund = "refund"
	// KindDispute: money withdrawn for a dispute or reinstated after one.
	KindDispute = "dispute"
	// KindRefundFailure: a refund that failed, its money back in the balance.
	KindRefundFailure = "refund_failure"
	// KindPaymentFailureRefund: a payment that failed after it was counted (ACH, SEPA), its
	// money taken back.
	KindPaymentFailureRefund = "payment_failure_refund"
	// KindFee: a fee charged on its own line (Stripe's stripe_fee, tax_fee).
	KindFee = "fee"
	// KindGroup: a group's line: the group's own (its amount leaving the balance), or another
	// group's.
	KindGroup = "payout"
	// KindGroupFailure: an earlier group that failed, its money back in the balance.
	KindGroupFailure = "payout_failure"
	// KindOther: a known type the host has no booking for (a transfer, a reserve movement):
	// it counts in the sum only, unless the host says it books it.
	KindOther = "other"
)

// Member is one line of a group: a Stripe balance transaction.
type Member struct {
	// ID is the line's external id, such as txn_.... Findings about the line are recorded
	// under it.
	ID string
	// Type is the external system's type for the line, such as charge, for findings.
	Type string
	// Kind is the booked kind a policy mapped Type to; empty when the policy does not know
	// Type: such a line is a finding of its own.
	Kind string
	// SourceID is the id of the object that moved the money (ch_..., re_..., du_..., po_...).
	SourceID string
	// BookedID is the id the host books the line under, such as the charge's PaymentIntent
	// for a host that keeps pi_... ids; empty means SourceID.
	BookedID string
	// Amount, Fee and Net are in minor units of Currency, the settlement currency: Net is
	// Amount - Fee, each signed as it moves the balance.
	Amount, Fee, Net int64
	Currency         string
	// SourceAmount and SourceCurrency are the source's own amount, the presentment amount,
	// signed as Amount is; SourceCurrency is empty when the source was not read.
	SourceAmount   int64
	SourceCurrency string
	// ExchangeRate converts SourceCurrency into Currency (major units to major units); 0 when
	// none was applied.
	ExchangeRate float64
	// AvailableOn is when the line's money became available in the balance.
	AvailableOn time.Time
	// Status is the line's status as the external system names it.
	Status string
}

// bookedID is the id the host books m under.
func (m Member) bookedID() string {
	if m.BookedID != "" {
		return m.BookedID
	}
	return m.SourceID
}
