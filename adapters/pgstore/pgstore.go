package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/hosttable"
	"github.com/reconcilekit/reconcile/internal/shared/pgtables"
)

// DB is what the store needs of its database. Give it a *pgxpool.Pool: batches commit in
// transactions of their own, and Status may run beside RunBatch. (A *pgx.Conn or pgx.Tx has these
// methods too, but a Tx would hold a transaction open across gateway calls, and a Conn is not
// safe for concurrent use.)
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Observations says where a row's last confirmed external state is kept.
type Observations int

const (
	// ObserveInOwnTable keeps observations in the reconciler's observations table. The host
	// table is only read: SELECT privilege suffices and no updated_at trigger ever fires. A
	// row's verified time is when the answer it was judged on was obtained
	// (reconcile.Outcome.VerifiedAt), never later than the commit.
	ObserveInOwnTable Observations = iota
	// ObserveInHostColumns writes the observed state and the last-verified time to columns of the
	// host table (the seed's layout). With an updated_at trigger on the host table, a row whose
	// updated_at is within OwnWriteTolerance of its last-verified time counts as unchanged, so
	// the reconciler's own write does not make the row look recently changed. The commit locks
	// the rows it writes first (in key order) and writes the verified-at time with
	// clock_timestamp(), so a trigger writing now() or clock_timestamp() stays within the
	// tolerance even after the commit waited for a host transaction's row lock; and it runs in
	// Config.TimeZone, so a trigger writing now() into a timestamp without time zone column
	// writes it in that zone, whatever the pool's session zone. The verified-at time is
	// therefore the commit's, not the answer's (reconcile.Outcome.VerifiedAt): it may be later
	// than the moment Stripe answered by the batch's duration, and by the look-ahead's age
	// within the cycle; ObserveInOwnTable records the answer's.
	ObserveInHostColumns
)

// Config describes the host table and where the reconciler keeps its state. Only Table is
// required; the column defaults are generic names (id, external_id, status, updated_at,
// created_at), so a table whose external id column is, say, stripe_payment_intent_id names it
// in ExternalIDColumn. Names must be plain SQL
// identifiers; they are always quoted, so they are case-sensitive ("Payments" is not payments).
type Config struct {
	// Table is the host table, such as "payments". Required.
	Table string
	// Schema holds the host table and, unless Tables.Schema names another, the reconciler's
	// own tables: a host whose tables all live in one schema names it here, once, and passes
	// Store.Tables to Migrate and to pgoutbox. Empty means the search_path.
	Schema string
	// KeyColumns is the keyset: one column (a bigint or other ordered primary key) or several,
	// such as created_at and id for a UUID-keyed table (compared as a row constructor). They
	// must be NOT NULL and unique together and should be indexed together. A cursor position
	// holds their values as a JSON array, so each must be of a type whose value comes back from
	// its text as the same key in any session: an integer, numeric, text, varchar, char, uuid,
	// a date or timestamp, an enum, bytea, bit, a range of numbers, or a domain over one. Check
	// refuses a floating-point column, an array, a composite type, json or jsonb, an interval, money,
	// a reg* type (regclass), a range of dates or times, and a type without ordering (xml, point).
	// Empty means ["id"].
	KeyColumns []string
	// IDColumn identifies a row in findings and commands. Empty means the last key column.
	IDColumn string
	// ExternalIDColumn holds the external object's id. Empty means "external_id".
	ExternalIDColumn string
	// StateColumn holds the local state of a Store[string] (New); a store of a struct (NewOf)
	// reads its fields' columns instead. Empty means "status".
	StateColumn string
	// UpdatedAtColumn is when the row last changed, a timestamp the host's writes keep
	// current. It drives the grace period: a row changed within reconcile.Config.Grace (or
	// LaneConfig.Grace) is judged InFlight and not asked about, and a lane does not judge a row
	// changed since the event it read against that event's state. NULL counts as not changed
	// recently; a time more than reconcile.MaxClockSkew ahead of the database's clock makes the
	// row an invalid_row finding (so does such a created_at). Empty means "updated_at".
	UpdatedAtColumn string
	// CreatedAtColumn is when the row was created, a timestamp. A row never verified counts its
	// lag from it (Status), and it drives the bulk fetch: each row's created_at goes to the
	// gateway (reconcile.Lookup.CreatedAt), which lists the external objects created around
	// it (stripeadapter: within GatewayConfig.CreatedSkew, 5 minutes), so it should be when
	// the row was inserted, next to the call that created the external object, not a business
	// date; a row whose object was created at another time costs a call of its own. Status
	// finds the rows created since a cycle started by it: index it. Empty means "created_at".
	CreatedAtColumn string

	// SearchColumns are host columns, such as an order id, that FindingQuery.Search matches
	// besides the external id and the record id: a finding matches when its row holds the
	// searched value in one of them, whole. Index them: a text, varchar, char, integer or uuid
	// column is compared in its own type, so that its index serves; any other (numeric, an
	// enum, citext, ...) is compared as text, which no plain index on it serves.
	SearchColumns []string

	// Columns renames the columns of a struct row's fields (NewOf) when the program runs: a
	// field's name, as Go spells it (Embedded.Field for a promoted one), to its column, in
	// place of its db tag; "-" leaves the field unread, at its zero value. It is for a row type
	// fixed at compile time over a table known only at run time (the command line's audit
	// names its columns with flags). A name that is no mapped field of L is an error. Nil
	// means every field's own column.
	Columns map[string]string

	// Tables names the reconciler's own tables. Its Schema defaults to Config.Schema; set it
	// only to keep them apart from the host table (jobs over host tables in different schemas
	// that should share one outbox and one dispatcher set it alike).
	Tables Tables
	// StaleAfter is how long a finding may stay open before Status counts it stale; Status
	// reports it (reconcile.Status.StaleAfter), so the console and the health reasons say it
	// without being told. Zero means DefaultStaleAfter.
	StaleAfter time.Duration
	// AggregateType is written on outbox rows and findings. Empty means Table.
	AggregateType string
	// Logger reports reads that fail without failing their call: the external ids of
	// findings, which are then listed without them. Nil means slog.Default().
	Logger *slog.Logger

	// Deliver, if set, hands every repair command a commit queues to the host's own job queue
	// (adapters/riverdelivery enqueues River jobs), inside the commit's transaction: if it
	// fails, the commit fails and nothing of it is recorded. The outbox row is still written,
	// as the command's record (a finding's history shows it) and its unique id, but marked as
	// handed over (processed_at set, the seed's mark of a relayed row), so that no pgoutbox
	// Dispatcher claims it and Outbox.Stats does not count it as queued. Nil means the outbox
	// alone, for a Dispatcher or the host's own relay.
	Deliver Deliverer

	// Observations chooses where observations go; the default is the reconciler's own table.
	Observations Observations
	// ObservedColumn and VerifiedAtColumn are the host columns for ObserveInHostColumns.
	// Empty means "observed_external_status" and "last_reconciled_at".
	ObservedColumn   string
	VerifiedAtColumn string
	// OwnWriteTolerance is how close updated_at may be to the last-verified time and still be
	// taken for the reconciler's own write, with ObserveInHostColumns. Zero means one second.
	OwnWriteTolerance time.Duration

	// TimeZone is the zone that columns of type timestamp without time zone are in, so that
	// grace, lag and filters do not depend on the session's TimeZone setting. Empty means "UTC".
	TimeZone string

	// Filter selects the rows this store covers, for a tier: several jobs over one host table,
	// each with its own store, filter and cadence. Read and Status see only these rows. The
	// zero Filter selects every row.
	Filter Filter
	// LagJobs names other jobs whose verifications count for this store's lag in Status, such
	// as the other tiers over the same table: a row that leaves the hot tier for the cold one
	// has gone unverified only since the hot job last verified it. The job Status is asked
	// about always counts. ObserveInHostColumns keeps one verified-at column for every job, so
	// there every job's verification counts already and LagJobs changes nothing.
	LagJobs []string
}

// Store is a reconcile.Store[L] over a host table in PostgreSQL: L is a row's local state,
// the state column's text for a Store[string] (New), or a struct of host columns (NewOf).
type Store[L any] struct {
	db  DB
	cfg Config
	own tableSQL // statements over the reconciler's own tables
	row *rowType // how L is read

	// table is what reads and commits go through, shared with pgshard; it counts the
	// store's writes.
	table *hosttable.Table[L]
	// hostOnly is table for ReadFrom, which needs none of the reconciler's tables.
	hostOnly *hosttable.Table[L]

	mu       sync.Mutex
	sql      *statements // built from the catalog on first use
	migrated bool        // the reconciler's tables were found migrated (checkMigrated)

	// hints are the cursors this store's last commits left, by job: a guess of where the
	// next read starts, which that read checks (read.go).
	hintsMu sync.Mutex
	hints   map[string]reconcile.Cursor
}

var _ reconcile.Store[string] = (*Store[string])(nil)

var (
	zoneRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_/+-]*$`)
)

func checkIdent(field, v string) error {
	if err := pgtables.CheckIdent(field, v); err != nil {
		return fmt.Errorf("pgstore: config: %w", err)
	}
	return nil
}

// New checks cfg and returns a store whose local state is the text of Config.StateColumn. It
// does not touch the database; the host table and its columns are checked against the catalog
// on first use (or by Check).
func New(db DB, cfg Config) (*Store[string], error) {
	return NewOf[string](db, cfg)
}

// NewOf checks cfg and returns a store whose local state is L: a string type, read from
// Config.StateColumn as New does, or a struct whose fields are host columns. A field's column is
// named by its db tag (`db:"amount_cents"`), or, untagged, is its name lowercased (Amount is
// amount, not amount_cents); `db:"-"` and unexported fields are skipped, and an untagged exported
// embedded struct contributes its fields. Each column is read in its own type into its field as
// pgx scans it: int64 for a bigint, string or pgtype.Numeric for a numeric, a string type for text
// or an enum, a pointer, sql.Null or pgtype type for a nullable column, time.Time for a timestamp
// (one without time zone taken to be in Config.TimeZone). A value a field cannot take (a NULL into
// an int64) makes the row Invalid, naming the column; it does not stop the batch. With a struct L,
// Config.StateColumn is not read and need not exist; a column of the struct may also be the key,
// id or external id column. Like New, NewOf does not touch the database: every field's column is
// checked against the catalog on first use (or by Check).
func NewOf[L any](db DB, cfg Config) (*Store[L], error) {
	row, err := newRowType[L](cfg.Columns)
	if err != nil {
		return nil, err
	}
	if db == nil {
		return nil, errors.New("pgstore: nil DB")
	}
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	if len(cfg.KeyColumns) == 0 {
		cfg.KeyColumns = []string{"id"}
	}
	cfg.KeyColumns = append([]string(nil), cfg.KeyColumns...)
	cfg.LagJobs = append([]string(nil), cfg.LagJobs...)
	cfg.SearchColumns = append([]string(nil), cfg.SearchColumns...)
	cfg.Columns = maps.Clone(cfg.Columns)
	cfg.Filter = cfg.Filter.clone()
	def(&cfg.IDColumn, cfg.KeyColumns[len(cfg.KeyColumns)-1])
	def(&cfg.ExternalIDColumn, "external_id")
	def(&cfg.StateColumn, "status")
	def(&cfg.UpdatedAtColumn, "updated_at")
	def(&cfg.CreatedAtColumn, "created_at")
	def(&cfg.AggregateType, cfg.Table)
	def(&cfg.ObservedColumn, "observed_external_status")
	def(&cfg.VerifiedAtColumn, "last_reconciled_at")
	def(&cfg.TimeZone, "UTC")
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OwnWriteTolerance == 0 {
		cfg.OwnWriteTolerance = time.Second
	}
	if cfg.StaleAfter == 0 {
		cfg.StaleAfter = DefaultStaleAfter
	} else if cfg.StaleAfter < 0 {
		return nil, fmt.Errorf("pgstore: config: StaleAfter %v is negative", cfg.StaleAfter)
	}
	if cfg.Tables.Schema == "" {
		cfg.Tables.Schema = cfg.Schema
	}
	cfg.Tables = cfg.Tables.withDefaults()

	checks := [][2]string{{"Table", cfg.Table}}
	for i, k := range cfg.KeyColumns {
		checks = append(checks, [2]string{fmt.Sprintf("KeyColumns[%d]", i), k})
	}
	checks = append(checks, [][2]string{{"IDColumn", cfg.IDColumn}, {"ExternalIDColumn", cfg.ExternalIDColumn},
		{"StateColumn", cfg.StateColumn}, {"UpdatedAtColumn", cfg.UpdatedAtColumn}, {"CreatedAtColumn", cfg.CreatedAtColumn}}...)
	for i, c := range cfg.SearchColumns {
		checks = append(checks, [2]string{fmt.Sprintf("SearchColumns[%d]", i), c})
	}
	if cfg.Schema != "" {
		checks = append(checks, [2]string{"Schema", cfg.Schema})
	}
	if cfg.Observations == ObserveInHostColumns {
		checks = append(checks, [2]string{"ObservedColumn", cfg.ObservedColumn}, [2]string{"VerifiedAtColumn", cfg.VerifiedAtColumn})
	}
	for _, c := range checks {
		if err := checkIdent(c[0], c[1]); err != nil {
			return nil, err
		}
	}
	if err := cfg.Tables.validate(); err != nil {
		return nil, err
	}
	if cfg.Observations != ObserveInOwnTable && cfg.Observations != ObserveInHostColumns {
		return nil, fmt.Errorf("pgstore: config: unknown Observations mode %d", cfg.Observations)
	}
	if !zoneRE.MatchString(cfg.TimeZone) {
		return nil, fmt.Errorf("pgstore: config: TimeZone %q is not a time zone name", cfg.TimeZone)
	}
	if cfg.OwnWriteTolerance < 0 {
		return nil, fmt.Errorf("pgstore: config: OwnWriteTolerance %s is negative", cfg.OwnWriteTolerance)
	}
	if err := cfg.Filter.validate(); err != nil {
		return nil, err
	}
	for i, j := range cfg.LagJobs {
		if j == "" {
			return nil, fmt.Errorf("pgstore: config: LagJobs[%d] is empty", i)
		}
	}
	seen := map[string]bool{}
	for _, k := range cfg.KeyColumns {
		if seen[k] {
			return nil, fmt.Errorf("pgstore: config: key column %q listed twice", k)
		}
		seen[k] = true
	}
	s := &Store[L]{db: db, cfg: cfg, own: newTableSQL(cfg.Tables), row: row}
	var hand hosttable.Handover
	if cfg.Deliver != nil {
		hand = &delivery{to: cfg.Deliver, tables: cfg.Tables}
	}
	s.table = hosttable.New[L](db, rowLocals[L]{row}, hand, func(ctx context.Context) (*hosttable.Spec, error) {
		st, err := s.statements(ctx)
		if err != nil {
			return nil, err
		}
		return st.spec, nil
	})
	// ReadFrom's reads: the same Spec, without the check of the reconciler's tables.
	s.hostOnly = hosttable.New[L](db, rowLocals[L]{row}, nil, func(ctx context.Context) (*hosttable.Spec, error) {
		st, err := s.prepare(ctx, false)
		if err != nil {
			return nil, err
		}
		return st.spec, nil
	})
	return s, nil
}

// Config returns the store's configuration with defaults filled in.
func (s *Store[L]) Config() Config { return s.cfg }

// Tables returns the reconciler's tables this store uses, defaults filled in: give the same
// value to Migrate (or Migrations), to pgoutbox.Config.Tables and to pgbudget.Config.Tables, so
// that the schema is named once, in Config.
func (s *Store[L]) Tables() Tables { return s.cfg.Tables }

func (s *Store[L]) hostTable() string { return s.cfg.hostTable() }

// hostTable returns the quoted, possibly schema-qualified name of the host table.
func (cfg Config) hostTable() string {
	if cfg.Schema == "" {
		return pgx.Identifier{cfg.Table}.Sanitize()
	}
	return pgx.Identifier{cfg.Schema, cfg.Table}.Sanitize()
}
