package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reconcilekit/reconcile"
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
	// table is only read: SELECT privilege suffices and no updated_at trigger ever fires.
	ObserveInOwnTable Observations = iota
	// ObserveInHostColumns writes the observed state and the last-verified time to columns of the
	// host table (the seed's layout). With an updated_at trigger on the host table, a row whose
	// updated_at is within OwnWriteTolerance of its last-verified time counts as unchanged, so
	// the reconciler's own write does not make the row look recently changed. The commit locks
	// the rows it writes first (in key order) and writes the verified-at time with
	// clock_timestamp(), so a trigger writing now() or clock_timestamp() stays within the
	// tolerance even after the commit waited for a host transaction's row lock; and it runs in
	// Config.TimeZone, so a trigger writing now() into a timestamp without time zone column
	// writes it in that zone, whatever the pool's session zone.
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
	// Schema of the host table. Empty means the search_path.
	Schema string
	// KeyColumns is the keyset: one column (a bigint or other ordered primary key) or several,
	// such as created_at and id for a UUID-keyed table (compared as a row constructor). They
	// must be unique together and should be indexed together. Empty means ["id"].
	KeyColumns []string
	// IDColumn identifies a row in findings and commands. Empty means the last key column.
	IDColumn string
	// ExternalIDColumn holds the external object's id. Empty means "external_id".
	ExternalIDColumn string
	// StateColumn holds the local state. Empty means "status".
	StateColumn string
	// UpdatedAtColumn is the row's last change, for the grace period. Empty means "updated_at".
	UpdatedAtColumn string
	// CreatedAtColumn is the row's creation time, for lag. Empty means "created_at".
	CreatedAtColumn string

	// Tables names the reconciler's own tables.
	Tables Tables
	// StaleAfter is how long a finding may stay open before Status counts it stale. Zero means
	// DefaultStaleAfter.
	StaleAfter time.Duration
	// AggregateType is written on outbox rows and findings. Empty means Table.
	AggregateType string
	// Logger reports reads that fail without failing their call: the external ids of
	// findings, which are then listed without them. Nil means slog.Default().
	Logger *slog.Logger

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

// Store is a reconcile.Store over a host table in PostgreSQL.
type Store struct {
	db  DB
	cfg Config

	mu  sync.Mutex
	sql *statements // built from the catalog on first use
}

var _ reconcile.Store[string] = (*Store)(nil)

var (
	identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	zoneRE  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_/+-]*$`)
)

func checkIdent(field, v string) error {
	if v == "" {
		return fmt.Errorf("pgstore: config: %s is empty", field)
	}
	if !identRE.MatchString(v) || len(v) > 63 {
		return fmt.Errorf("pgstore: config: %s %q is not a plain SQL identifier (letters, digits and underscores, at most 63)", field, v)
	}
	return nil
}

// New checks cfg and returns a store. It does not touch the database; the host table and its
// columns are checked against the catalog on first use (or by Check).
func New(db DB, cfg Config) (*Store, error) {
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
	cfg.Tables = cfg.Tables.withDefaults()

	checks := [][2]string{{"Table", cfg.Table}}
	for i, k := range cfg.KeyColumns {
		checks = append(checks, [2]string{fmt.Sprintf("KeyColumns[%d]", i), k})
	}
	checks = append(checks, [][2]string{{"IDColumn", cfg.IDColumn}, {"ExternalIDColumn", cfg.ExternalIDColumn},
		{"StateColumn", cfg.StateColumn}, {"UpdatedAtColumn", cfg.UpdatedAtColumn}, {"CreatedAtColumn", cfg.CreatedAtColumn}}...)
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
	return &Store{db: db, cfg: cfg}, nil
}

// Config returns the store's configuration with defaults filled in.
func (s *Store) Config() Config { return s.cfg }

// Check verifies that the host table and every configured column exist, and prepares the
// store's statements. Read calls it on first use; call it at startup to fail early.
func (s *Store) Check(ctx context.Context) error {
	_, err := s.statements(ctx)
	return err
}

func (s *Store) statements(ctx context.Context) (*statements, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sql != nil {
		return s.sql, nil
	}
	types, err := s.columnTypes(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.cfg.checkFilter(types); err != nil {
		return nil, err
	}
	st := buildStatements(s.cfg, types)
	// A value the column cannot take (text for a bigint, say) fails here rather than in the
	// first batch.
	if where, args := renderFilter(s.cfg, types, 1); where != "" {
		rows, err := s.db.Query(ctx, "SELECT 1 FROM "+s.hostTable()+" AS h WHERE "+where+" LIMIT 0", args...)
		if err == nil {
			rows.Close()
			err = rows.Err()
		}
		if err != nil {
			return nil, fmt.Errorf("pgstore: config: Filter on %s: %w", s.hostTable(), err)
		}
	}
	s.sql = st
	return s.sql, nil
}

func (s *Store) hostTable() string { return s.cfg.hostTable() }

// hostTable returns the quoted, possibly schema-qualified name of the host table.
func (cfg Config) hostTable() string {
	if cfg.Schema == "" {
		return pgx.Identifier{cfg.Table}.Sanitize()
	}
	return pgx.Identifier{cfg.Schema, cfg.Table}.Sanitize()
}

// columnTypes reads the host table's column types from the catalog.
func (s *Store) columnTypes(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.Query(ctx, `
		SELECT a.attname, format_type(a.atttypid, NULL), a.attnotnull
		FROM pg_attribute a
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, s.hostTable())
	if err != nil {
		return nil, fmt.Errorf("pgstore: read catalog for %s: %w", s.hostTable(), err)
	}
	types := map[string]string{}
	notNull := map[string]bool{}
	var name, typ string
	var nn bool
	if _, err := pgx.ForEachRow(rows, []any{&name, &typ, &nn}, func() error {
		if typ == "character" {
			// format_type without the modifier says "character", which as a cast means
			// char(1) and would cut every value to its first character; bpchar keeps it whole.
			typ = "bpchar"
		}
		types[name], notNull[name] = typ, nn
		return nil
	}); err != nil {
		return nil, fmt.Errorf("pgstore: read catalog for %s: %w", s.hostTable(), err)
	}
	if len(types) == 0 {
		return nil, fmt.Errorf("pgstore: table %s does not exist (or has no columns) in the search_path", s.hostTable())
	}
	need := append([]string{s.cfg.IDColumn, s.cfg.ExternalIDColumn, s.cfg.StateColumn, s.cfg.UpdatedAtColumn, s.cfg.CreatedAtColumn}, s.cfg.KeyColumns...)
	if s.cfg.Observations == ObserveInHostColumns {
		need = append(need, s.cfg.ObservedColumn, s.cfg.VerifiedAtColumn)
	}
	for _, c := range need {
		if _, ok := types[c]; !ok {
			return nil, fmt.Errorf("pgstore: table %s has no column %q", s.hostTable(), c)
		}
	}
	// A keyset skips rows whose key is NULL and rows whose key ties across a batch boundary;
	// findings and observations are per row id, so two rows sharing one would be confused.
	for _, k := range append([]string{s.cfg.IDColumn}, s.cfg.KeyColumns...) {
		if !notNull[k] {
			return nil, fmt.Errorf("pgstore: column %q of %s is nullable; as a key or row id it must be NOT NULL", k, s.hostTable())
		}
	}
	for _, k := range s.cfg.KeyColumns {
		if types[k] == "real" || types[k] == "double precision" {
			return nil, fmt.Errorf("pgstore: key column %q of %s is a floating-point %s; use an exact type", k, s.hostTable(), types[k])
		}
	}
	for _, c := range []string{s.cfg.UpdatedAtColumn, s.cfg.CreatedAtColumn} {
		if types[c] != naiveTimestamp && types[c] != "timestamp with time zone" {
			return nil, fmt.Errorf("pgstore: column %q of %s is %s, not a timestamp", c, s.hostTable(), types[c])
		}
	}
	if err := s.checkUnique(ctx, s.cfg.KeyColumns, "key columns"); err != nil {
		return nil, err
	}
	if err := s.checkUnique(ctx, []string{s.cfg.IDColumn}, "IDColumn"); err != nil {
		return nil, err
	}
	if _, err := s.db.Exec(ctx, "SELECT now() AT TIME ZONE $1::text", s.cfg.TimeZone); err != nil {
		return nil, fmt.Errorf("pgstore: config: TimeZone %q: %w", s.cfg.TimeZone, err)
	}
	return types, nil
}

// checkUnique verifies that some unique index (or the primary key) covers only columns among
// cols, so that cols identify a row.
func (s *Store) checkUnique(ctx context.Context, cols []string, what string) error {
	var unique bool
	if err := s.db.QueryRow(ctx, `
		SELECT EXISTS (
			SELECT 1 FROM pg_index i
			WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
			AND (SELECT bool_and(a.attname = ANY($2)) FROM pg_attribute a
				WHERE a.attrelid = i.indrelid AND a.attnum = ANY((i.indkey::int2[])[0:i.indnkeyatts - 1])))`,
		s.hostTable(), cols).Scan(&unique); err != nil {
		return fmt.Errorf("pgstore: read catalog for %s: %w", s.hostTable(), err)
	}
	if !unique {
		return fmt.Errorf("pgstore: %s %v of %s are not unique (no unique index or primary key within them); rows sharing a value would be skipped or confused", what, cols, s.hostTable())
	}
	return nil
}

// Read returns the rows the Filter selects after the job's cursor, in key order, judging grace
// by the database clock.
func (s *Store) Read(ctx context.Context, req reconcile.ReadRequest) (reconcile.Batch[string], error) {
	var b reconcile.Batch[string]
	if req.Limit <= 0 {
		return b, fmt.Errorf("pgstore: limit %d must be positive", req.Limit)
	}
	st, err := s.statements(ctx)
	if err != nil {
		return b, err
	}
	err = s.db.QueryRow(ctx, st.readCursor, req.Job).Scan(&b.Cursor.Position, &b.Cursor.Version, &b.Cursor.End)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return b, fmt.Errorf("pgstore: read cursor: %w", err)
	}
	for _, p := range []string{b.Cursor.Position, b.Cursor.End} {
		if p == "" {
			continue
		}
		if err := s.checkPosition(p); err != nil {
			return b, fmt.Errorf("pgstore: read cursor: %w", err)
		}
	}
	b.Records, err = s.readRange(ctx, st, req, &b.Cursor, "", "")
	if err != nil {
		return b, fmt.Errorf("pgstore: %w", err)
	}
	return b, nil
}

// readRange reads the next rows after cur's position within the bounds of a shard (lower and
// upper, JSON arrays of the first key column; empty is open) and the cycle's high-water mark.
// At a cycle's start it fixes the mark, in cur.End: the last key present now. An empty range
// gives no mark and no rows.
func (s *Store) readRange(ctx context.Context, st *statements, req reconcile.ReadRequest, cur *reconcile.Cursor, lower, upper string) ([]reconcile.Record[string], error) {
	if cur.End == "" {
		var bounds []any
		if lower != "" {
			bounds = append(bounds, lower)
		}
		if upper != "" {
			bounds = append(bounds, upper)
		}
		err := s.db.QueryRow(ctx, st.shard.highWater(lower != "", upper != ""), append(bounds, st.filterArgs...)...).Scan(&cur.End)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("read the cycle's last key in %s: %w", s.hostTable(), err)
		}
	}
	args := []any{req.Grace.Seconds(), req.Limit}
	after := cur.Position != ""
	if after {
		args = append(args, cur.Position)
	} else if lower != "" {
		args = append(args, lower)
	}
	if upper != "" {
		args = append(args, upper)
	}
	args = append(append(args, cur.End), st.filterArgs...)
	return s.readRecords(ctx, st.shard.read(after, lower != "", upper != "", true), args)
}

// checkPosition verifies that a cursor position is a JSON array with one value per key column.
func (s *Store) checkPosition(pos string) error {
	var vals []json.RawMessage
	if err := json.Unmarshal([]byte(pos), &vals); err != nil || len(vals) != len(s.cfg.KeyColumns) {
		return fmt.Errorf("position %q is not a key of %v; was the job's key changed?", pos, s.cfg.KeyColumns)
	}
	return nil
}

// nullIfEmpty is s, or NULL for an empty s.
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func derefTime(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return *p
}

// Commit writes observations, findings and repair commands and advances the cursor in one
// transaction, pipelined in one round trip. If the cursor moved since the read it rolls back
// and returns reconcile.ErrConcurrentRun.
func (s *Store) Commit(ctx context.Context, c reconcile.Commit) (reconcile.CommitResult, error) {
	var res reconcile.CommitResult
	st, err := s.statements(ctx)
	if err != nil {
		return res, err
	}
	if !c.Wrap {
		if err := s.checkPosition(c.Next); err != nil {
			return res, fmt.Errorf("pgstore: commit: %w", err)
		}
	}
	batch := &pgx.Batch{}
	if c.Wrap {
		batch.Queue(st.wrap, c.Job, c.Cursor.Version, len(c.Outcomes), c.Unverifiable())
	} else {
		batch.Queue(st.advance, c.Job, c.Cursor.Version, c.Next, len(c.Outcomes), c.Unverifiable(), nullIfEmpty(c.Cursor.End))
	}
	s.queueResults(batch, st, c.Job, c.Outcomes, &res)
	if c.Wrap {
		// The cycle is complete: close the findings of rows it showed gone.
		batch.Queue(st.forgetDeleted, c.Job, reconcile.ResolvedByReconciler, forgetNote)
	}

	if err := s.sendFenced(ctx, batch, "commit"); err != nil {
		return reconcile.CommitResult{}, err
	}
	return res, nil
}

// setTimeZone sets the transaction's TimeZone to $1, until it ends.
const setTimeZone = "SELECT set_config('TimeZone', $1, true)"

// forgetNote is the note on findings closed because their row was deleted.
const forgetNote = "the row no longer exists; closed when the cycle completed"

// queueResults queues the observations, findings and repair commands of outcomes; res receives
// what the findings statement added.
func (s *Store) queueResults(batch *pgx.Batch, st *statements, job string, outcomes []reconcile.Outcome, res *reconcile.CommitResult) {
	// In record order, whoever commits: a sweep and a lane writing the same rows at once then
	// lock them in the same order and cannot deadlock.
	outcomes = slices.SortedStableFunc(slices.Values(outcomes), func(a, b reconcile.Outcome) int { return strings.Compare(a.RecordID, b.RecordID) })
	// The commit runs in the configured zone, so that an updated_at trigger on the host table
	// writing now() into a timestamp without time zone column writes it in that zone, not in
	// the session's.
	batch.Queue(setTimeZone, s.cfg.TimeZone)
	var obsIDs, obsStates []string
	var f findingCols
	for _, o := range outcomes {
		if o.Verified {
			obsIDs, obsStates = append(obsIDs, o.RecordID), append(obsStates, o.External)
		}
		if d := o.Decision; d.Kind != "" && (d.Verdict == reconcile.Repairable || d.Verdict == reconcile.NeedsReview) {
			f.add(job, o)
		}
	}
	switch {
	case len(obsIDs) == 0:
	case st.observeTakesJob:
		batch.Queue(st.observe, job, obsIDs, obsStates)
	default:
		batch.Queue(st.lockObserved, obsIDs)
		batch.Queue(st.observe, obsIDs, obsStates)
	}
	if len(f.ids) > 0 {
		batch.Queue(st.findings, job, s.cfg.AggregateType, f.ids, f.kinds, f.locals, f.externals, f.details, f.commands,
			f.once, f.notARow, f.payloads).
			QueryRow(func(row pgx.Row) error { return row.Scan(&res.Findings, &res.Commands) })
	}
}

type findingCols struct {
	ids, kinds, locals, externals, details, commands []string
	once, notARow                                    []bool
	// payloads are the repair commands as JSON without their finding id; nil where none.
	payloads []*string
}

func (f *findingCols) add(job string, o reconcile.Outcome) {
	var payload *string
	if cmd := o.RepairCommand(job); cmd != nil {
		b, _ := json.Marshal(cmd) // strings and an integer: it cannot fail
		p := string(b)
		payload = &p
	}
	f.payloads = append(f.payloads, payload)
	f.once = append(f.once, o.Once)
	f.notARow = append(f.notARow, o.NotARow)
	f.ids = append(f.ids, o.RecordID)
	f.kinds = append(f.kinds, o.Decision.Kind)
	f.locals = append(f.locals, o.Local)
	f.externals = append(f.externals, o.External)
	f.details = append(f.details, o.Decision.Detail)
	f.commands = append(f.commands, o.Decision.Command)
}
