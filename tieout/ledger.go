package tieout

import (
	"context"
	"time"
)

// Basis says which amount a host books: the customer's (presentment) or the one that reached
// the balance (settlement).
type Basis int

// The bases. The zero Basis is invalid.
const (
	// Presentment: the amount and currency the customer paid, compared with the source's.
	Presentment Basis = iota + 1
	// Settlement: the amount in the settlement currency, compared with the line's.
	Settlement
)

// String returns the basis's name.
func (b Basis) String() string {
	switch b {
	case Presentment:
		return "presentment"
	case Settlement:
		return "settlement"
	}
	return "invalid"
}

// Booked is one record of the host's ledger.
type Booked struct {
	// Kind is the booked kind (KindPayment, KindRefund, ...).
	Kind string
	// ID is the id the record is booked under, matched with Member.BookedID (or SourceID).
	ID string
	// Amount is in minor units of Currency, signed as it moves the balance (a refund is
	// negative), in Basis.
	Amount   int64
	Currency string
	Basis    Basis
	// Fee is the fee the host booked, in minor units of the settlement currency, when HasFee.
	Fee    int64
	HasFee bool
	// SettledAt is when the host counts the money as settled; zero if it is not.
	SettledAt time.Time
	// AvailableOn is when the money became available in the external balance, if the host
	// keeps it; zero if not.
	AvailableOn time.Time
	// Group is the group the host recorded the record in; empty if none.
	Group string
	// Status is the record's status as the host names it (for a booked payout: paid, failed).
	Status string
}

// Key is a booked record's identity: its kind and its id.
type Key struct{ Kind, ID string }

// Ledger is the host's ledger as the tie-out reads it. Its methods are called outside any
// transaction of the reconciler's and must be safe for concurrent use.
type Ledger interface {
	// Booked returns the records booked under any of keys, every one of them (several may
	// share a key: two refunds of one payment booked under its id). One call per page of
	// members.
	Booked(ctx context.Context, keys []Key) ([]Booked, error)
	// Unpaid returns, in the ledger's key order after req.After, up to req.Limit settled
	// records in no group whose availability (AvailableOn if known, else SettledAt) is before
	// req.Before, or whose SettledAt or AvailableOn is after req.Ahead (an impossible time,
	// which would otherwise never fall before Before); a page shorter than Limit is the last.
	// Page.Next resumes after the page.
	Unpaid(ctx context.Context, req UnpaidRequest) (UnpaidPage, error)
}

// UnpaidRequest asks a Ledger for a page of records never paid out.
type UnpaidRequest struct {
	// After is the position to resume after; empty means the start.
	After string
	// Before bounds the records' availability: now minus the grace a payout has to carry them.
	Before time.Time
	// Ahead bounds the possible times: a record settled or available after it (more than
	// reconcile.MaxClockSkew ahead of the clock) is returned too, whatever Before. Zero: none.
	Ahead time.Time
	// Limit is the page size; at least 1.
	Limit int
}

// UnpaidPage is one page of records never paid out.
type UnpaidPage struct {
	Records []Booked
	// Next is the position after the page's last record.
	Next string
}
