// Package storehook gives the packages built on a pgstore.Store (pgshard) the parts of it they
// share and that pgstore does not export: its statements' pieces, its keyset read and its
// fenced, set-based commit. pgstore sets Of when it is initialised.
package storehook

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reconcilekit/reconcile"
)

// DB is pgstore.DB.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Statements are the pieces of a store's SQL, built from its config and the host table's
// catalog, that statements over key ranges of its host table are built from.
type Statements struct {
	// Host is the host table, quoted; Keys its key columns as h."col", KeyTypes their types.
	Host           string
	Keys, KeyTypes []string
	// Where joins conds and the Filter into a WHERE clause; the Filter's placeholders start
	// at $first, and FilterArgs are bound to them.
	Where      func(first int, conds ...string) string
	FilterArgs []any
	// LagValue is a row's lag (NULL for a row with invalid times). LagFrom is the FROM clause
	// of a lag statement: the Filter's rows with their last verification by the jobs in $1,
	// the Filter's placeholders from $first.
	LagValue string
	LagFrom  func(first int) string
	// ForgetDeleted closes the open findings of job $1 whose row no longer exists, as resolved
	// by $2 with note $3 (ForgetNote), when a cycle completes.
	ForgetDeleted, ForgetNote string
}

// Store is what a pgstore.Store[L] lends the packages built on it.
type Store[L any] interface {
	DB() DB
	// Statements builds the store's statements on first use (checking the catalog).
	Statements(ctx context.Context) (*Statements, error)
	// ReadRange reads the next rows after cur's position within a key range (lower and upper,
	// JSON arrays of the first key column; empty is open) and the cycle's high-water mark,
	// which it fixes in cur.End at a cycle's start.
	ReadRange(ctx context.Context, req reconcile.ReadRequest, cur *reconcile.Cursor, lower, upper string) ([]reconcile.Record[L], error)
	// CheckPosition verifies that a cursor position is a key of the store's key columns.
	CheckPosition(pos string) error
	// QueueResults queues the observations, findings and repair commands of outcomes; res
	// receives what the findings statement added. The Deliver it returns is to be run in the
	// same transaction once b is read.
	QueueResults(ctx context.Context, b *pgx.Batch, job string, outcomes []reconcile.Outcome, res *reconcile.CommitResult) (Deliver, error)
	// SendFenced runs b in a transaction whose first statement is a compare-and-set: if it
	// affects no row, nothing is written and the result is reconcile.ErrConcurrentRun. Then it
	// runs deliver in the same transaction.
	SendFenced(ctx context.Context, b *pgx.Batch, what string, deliver Deliver) error
	// Lag turns a lag in seconds into a Duration as Status does.
	Lag(seconds float64) time.Duration
}

// Deliver hands the repair commands a batch queued to the store's Config.Deliver, in the
// batch's transaction; it does nothing when the store has none.
type Deliver func(ctx context.Context, tx pgx.Tx) error

// Of returns the Store[L] of a *pgstore.Store[L], as an any (a variable cannot be generic);
// pgstore sets it. For asserts its type.
var Of func(store any) any

// For returns the Store[L] of a *pgstore.Store[L].
func For[L any](store any) Store[L] { return Of(store).(Store[L]) }
