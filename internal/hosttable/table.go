package hosttable

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what a Table needs of its database: pgstore.DB.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Spec is a host table's statement pieces, built by pgstore from its Config and the host
// table's catalog. Every identifier in it is quoted; values are bound parameters.
type Spec struct {
	// Host is the host table, quoted and possibly schema-qualified.
	Host string
	// Keys are the key columns, quoted and qualified (h."col"); KeyTypes their types, from
	// the catalog; KeyNames their names as configured, for errors.
	Keys, KeyTypes, KeyNames []string
	// ID is the row id column, quoted and qualified.
	ID string
	// Filter is the store's row filter.
	Filter Filter
	// Select and Order are what every keyset read selects (the key as a JSON array and the id
	// as text, or with IDKey the id alone; the external id as text, the readable created_at,
	// whether the row is recent by the grace in $1, why it is invalid, its version, or with
	// XminVersion the row's xmin, then the local state's columns, FROM the host table aliased
	// h) and its ORDER BY ... LIMIT $2. A lane's match selects the same columns
	// (RecordScanner).
	Select, Order string
	// IDKey says that the key is the id alone, of a type whose key text the reader writes as
	// jsonb_build_array(id)::text does: Select has the id alone, as itself, in place of the key
	// and the id as text.
	IDKey IDKey
	// XminVersion says that a row's version is its xmin (an xid) as text, which the reader
	// writes from the xid Select has.
	XminVersion bool
	// LagValue is a row's lag in a lag statement (Query.LagFrom): NULL for a row with invalid
	// times.
	LagValue string
	// ObserveInHost says that observations are kept in host columns (pgstore's
	// ObserveInHostColumns); else in ObservationsTable, quoted.
	ObserveInHost     bool
	ObservationsTable string
	// FindingsTable is the findings table, quoted: the lock space of LockRecords.
	FindingsTable string
	// AggregateType is written on findings and outbox rows.
	AggregateType string
	// TimeZone is the zone a commit runs in.
	TimeZone string
	// The statements of a commit, documented where pgstore builds them: LockRecords,
	// LockObserved (only with ObserveInHost), LockFindings, Findings and Observe (taking the
	// job first when ObserveTakesJob), Unobserved (only with ObserveTakesJob: run after an
	// Observe that wrote fewer rows than it was given, in a transaction of the commit's own),
	// ObserveReturning (only with ObserveTakesJob: Observe returning the rows it left
	// unobserved, for a commit that may run in a savepoint), and ForgetDeleted, run when a
	// cycle completes.
	LockRecords, LockObserved, LockFindings, Findings, Observe string
	ObserveTakesJob                                            bool
	Unobserved, ObserveReturning, ForgetDeleted                string
	// ObserveInRange (only with ObserveTakesJob, and not for every table: empty if not) is
	// Observe checking its rows as read against one scan of the keyset range they were read
	// from (RangeScan from $6; index 1: after a position), not row by row: a sweep's commit
	// (KeyRange).
	ObserveInRange [2]string
	// FindingsObserved (only with ObserveTakesJob) is Findings judging verified outcomes by
	// the observations the observations statement wrote before it in the same transaction,
	// without the clear judgments' external states, versions and answer times.
	FindingsObserved string
	// ObserveOnce (only with ObserveTakesJob) is ObserveReturning for a commit that verified a
	// record more than once: each record observed once, on its newest answer.
	ObserveOnce string
	// WrapError names op in a failed statement's error, as pgstore's errors do (a missing
	// table of the reconciler's is a pgstore.MigrationError).
	WrapError func(op string, err error) error

	keyset     *keysetReads
	filterArgs []any
}

// FilterArgs are the Filter's values, bound after a statement's own parameters.
func (s *Spec) FilterArgs() []any { return s.filterArgs }

// Locals reads the local state L of a read's rows: pgstore's row type.
type Locals[L any] interface {
	// Scanner returns the reader of one result's rows, whose L columns start at index first.
	Scanner(rows pgx.Rows, first int) LocalScanner[L]
}

// LocalScanner reads the local state of each row of one result.
type LocalScanner[L any] interface {
	// Dest returns the scan destinations of L's columns, for rows.Scan.
	Dest() []any
	// Local sets *dst to the current row's state, and returns why it cannot be read, or "".
	Local(rows pgx.Rows, dst *L) string
}

// Handover hands the repair commands a commit queued to a host's queue (pgstore's Deliverer),
// in the commit's transaction; raw is the findings statement's JSON array of them.
type Handover interface {
	Hand(ctx context.Context, tx pgx.Tx, raw []byte) error
}

// Table is a host table that stores read and commit through: pgstore.Store for a whole job,
// pgshard.Lease for a key range of it. It is safe for concurrent use.
type Table[L any] struct {
	db      DB
	locals  Locals[L]
	hand    Handover // nil: the outbox alone
	prepare func(ctx context.Context) (*Spec, error)
	writes  atomic.Uint64
}

// New returns the Table over db. prepare returns the Spec, built (and its catalog checked) on
// first use and kept by the caller; hand, if not nil, hands the commands of every commit over.
func New[L any](db DB, locals Locals[L], hand Handover, prepare func(ctx context.Context) (*Spec, error)) *Table[L] {
	return &Table[L]{db: db, locals: locals, hand: hand, prepare: prepare}
}

// Prepare readies spec for use, once, before a Table's prepare returns it.
func Prepare(spec *Spec) {
	_, spec.filterArgs = spec.Filter.Render(1)
	spec.keyset = newKeysetReads(spec)
}

// Spec returns the table's statement pieces, building them on first use.
func (t *Table[L]) Spec(ctx context.Context) (*Spec, error) { return t.prepare(ctx) }

// DB returns the table's database.
func (t *Table[L]) DB() DB { return t.db }

// Writes counts the writes made through the table (and noted with NoteWrite).
func (t *Table[L]) Writes() uint64 { return t.writes.Load() }

// NoteWrite counts one write made to the reconciler's tables of the table's store.
func (t *Table[L]) NoteWrite() { t.writes.Add(1) }

// LagOf turns a lag in seconds into a Duration: never negative (a row created in the future
// has none), at most the longest a Duration holds.
func LagOf(seconds float64) time.Duration {
	ns := seconds * float64(time.Second)
	switch {
	case !(ns > 0): // also NaN
		return 0
	case ns >= float64(math.MaxInt64):
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// Key is what a store asks of the packages that ask for its Table (pgstore.Store.HostTable):
// only packages of this module can make one, Key{}.
type Key struct{ _ key }

type key struct{}
