package reconcile

import (
	"context"
	"errors"
	"time"
)

// ErrConcurrentRun means another reconciler advanced the job's cursor between this batch's read
// and its commit. Nothing of the batch was written; the other run did the work.
var ErrConcurrentRun = errors.New("reconcile: cursor moved by a concurrent run")

// Cursor is a job's position as read from the store. Sources return it with every batch and
// sinks compare-and-set on it at commit, so two reconcilers racing for one job never both write.
type Cursor struct {
	// Position is the key of the last row of the previous batch, encoded by the Source; empty
	// means the start of a cycle.
	Position string
	// Version counts the cursor's advances. The commit succeeds only if it is unchanged.
	Version int64
	// End is the cycle's high-water mark: the key of the last row that existed when the
	// cycle's first batch was read, encoded by the Source. Rows beyond it arrived during the
	// cycle and are the next cycle's, so a cycle ends however fast rows arrive. The Source sets
	// it on the first read of a cycle; the Sink stores it with the advance and clears it when
	// the cycle wraps. A Source without one leaves it empty: its cycles end at a short read.
	End string
}

// ReadRequest asks a Source for the next batch of a job.
type ReadRequest struct {
	Job   string
	Limit int
	// Grace is how recently a row may have changed and still be judged now. Rows changed within
	// Grace, measured by the store's own clock (the database's), come back with Recent set. A
	// row changed, by its updated_at, more than MaxClockSkew in the future is not Recent but
	// Invalid, whatever the Grace (see MaxClockSkew).
	Grace time.Duration
}

// MaxClockSkew is how far ahead of the store's clock (the database's) a row's updated_at or
// created_at may lie and still be taken for a real time: the skew between the clocks of the
// servers that write the rows and the store's. A row changed up to MaxClockSkew in the future
// is within the grace period like any row just changed. A time further ahead is impossible (a
// bad import, a hostile writer): a Source returns the row with Record.Invalid set, so it
// becomes a NeedsReview invalid_row finding instead of being judged InFlight at every cycle
// (its drift never found, the row never verified) or, by its created_at, having a lag that
// stays below zero, hidden, for as long as it goes unverified. A Source judges the times at
// every read: once its clock has caught up, the row is judged as any other.
const MaxClockSkew = 5 * time.Minute

// Batch is what a Source returns: the cursor as read and up to Limit records after it, in key
// order, none beyond the cycle's End. Fewer than Limit records (none included) means that no
// row of the cycle lies after them: once they are judged, the cycle is complete and the cursor
// wraps. A Source must therefore never return a short batch in the middle of a cycle.
type Batch[L any] struct {
	Cursor  Cursor
	Records []Record[L]
}

// Record is one local row as the reconciler sees it.
type Record[L any] struct {
	// Key is the row's cursor position, encoded by the Source (for example its primary key, or
	// created_at and id for a composite keyset). The next batch starts after it.
	Key string
	// ID identifies the row in findings, observations and repair commands.
	ID string
	// ExternalID is the id of the external object, such as a PaymentIntent id.
	ExternalID string
	// Local is the host's local state.
	Local L
	// CreatedAt is when the row was created, if the Source knows; gateways may use it to fetch
	// external objects in bulk.
	CreatedAt time.Time
	// Recent reports that the row changed within the grace period. It is judged InFlight and
	// the external system is not asked about it.
	Recent bool
	// Version is the row's version as read, encoded by the Source (a revision counter,
	// PostgreSQL's xmin): the Sink of the same store records the row's outcome only if the row
	// is still at this version when it commits (see Sink). Empty means no such check.
	Version string
	// Invalid, when not empty, says why the row cannot be judged (a value the Source could not
	// read, an impossible time such as one more than MaxClockSkew in the future). The row
	// becomes a NeedsReview finding of kind KindInvalidRow with Invalid as its detail, the
	// external system is not asked, and the cursor moves on: one bad row never stops a job.
	Invalid string
}

// Source reads batches of local rows with a keyset cursor: WHERE key > cursor AND key <= end
// ORDER BY key LIMIT n, never OFFSET (see Batch and Cursor.End).
type Source[L any] interface {
	Read(ctx context.Context, req ReadRequest) (Batch[L], error)
}
