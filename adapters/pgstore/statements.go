package pgstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/hosttable"
)

// statements are the store's SQL, built once from the config and the host table's column
// types. Every identifier is quoted; values are bound parameters. Column types come from the
// catalog (format_type), never from configuration; the only configured literal, the time zone,
// is checked to be a plain zone name first.
type statements struct {
	readCursor        string
	advance, wrap     string
	observe, findings string
	observeTakesJob   bool
	unobserved        string // with observeTakesJob: the rows observe left unobserved
	observeReturning  string // with observeTakesJob: observe, returning those rows itself
	observeOnce       string // with observeTakesJob: observeReturning for a record verified more than once
	findingsObserved  string // with observeTakesJob: findings, taking the observations observe wrote for the check
	lag               string
	// observeInRange, with observeTakesJob: observe checking its rows against one scan of a
	// sweep's keyset range (hosttable.Spec.ObserveInRange).
	observeInRange [2]string
	// match finds rows by external id for a lane (see Store.Match).
	match string
	// externalIDs reads rows' external ids by their ids ($1, text), compared as the id
	// column's type; externalIDsValid says which ids that type can hold (nil: any).
	externalIDs      string
	externalIDsValid func(string) bool
	// search are the conditions of FindingQuery.Search on Config.SearchColumns, and
	// searchRows selects the ids (as text) of the rows that meet them (review.go).
	search     []searchColumn
	searchRows string
	// parts are the pieces the statements are built from.
	parts *sqlParts
	// spec is what the host table's reads and commits are built from, shared with pgshard
	// (hosttable.Table).
	spec *hosttable.Spec
	// filterArgs are the Filter's values, bound after each statement's own parameters: read
	// and lag statements take them from the placeholder after their last one.
	filterArgs []any
	// forgetDeleted and openFindings deal with findings of deleted rows.
	forgetDeleted, openFindings string
	// lockObserved locks the host rows a commit judges, with ObserveInHostColumns: $1 their ids.
	lockObserved string
	// lockRecords and lockFindings serialize the commits that may open findings of the same
	// records (commit.go).
	lockRecords, lockFindings string
	// keyTypes are the key columns' types.
	keyTypes []string
	// lagMarks are the statements of Status's lag without a scan (lagmarks.go).
	lagMarks lagMarkSQL
}

const naiveTimestamp = "timestamp without time zone"

// minPlausibleTime is the earliest created_at taken for a real one: anything before (Go's zero
// time.Time stored by a host, say) makes the row invalid rather than centuries unverified.
var minPlausibleTime = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)

// sqlParts are the pieces every statement of a store is built from: the quoted host table and
// key columns, and the expressions several statements share. Every identifier is quoted.
type sqlParts struct {
	cfg   Config
	types map[string]string
	row   *rowType
	host  string   // the host table, quoted
	keys  []string // the key columns, h."col"
	// keyCollations are the key columns' collations where not the database's, as
	// " COLLATE name", else "" (Store.keyCollations).
	keyCollations []string
	// invalid says why a row's times cannot be read or judged, NULL if they can: an infinite
	// created_at or updated_at (which no time.Time can hold, and no lag can be computed from),
	// or a created_at before minPlausibleTime (such as Go's zero time.Time stored by a host).
	// Read and Match return such a row with Record.Invalid set, so the engine records a
	// NeedsReview invalid_row finding and the cursor moves on; Status leaves it out of the lag
	// (see lagOf), the open finding being how it shows. NULL times are not invalid: a NULL
	// updated_at is not recent, a NULL created_at only leaves a never-verified row out of lag.
	invalid string
	// unjudgeable says why a row cannot be judged, NULL if it can: invalid, or a created_at or
	// updated_at more than reconcile.MaxClockSkew ahead of the database's clock, an impossible
	// time (judged by updated_at alone, the row would be recent at every read, its drift never
	// found). Read and Match return it as Record.Invalid. Such a row's lag can be computed, so
	// Status, its lag marks and Coverage keep it (they leave out invalid rows, not unjudgeable
	// ones, whose state changes as the clock moves, which the marks could not follow): it is
	// never verified while its time stays ahead, and its lag grows.
	unjudgeable string
	// readableCreated is created_at as a value a time.Time can hold.
	readableCreated string
	// withinGrace holds when a row's updated_at lies within the grace ($1, seconds). A grace
	// of zero (reconcile.Config.Grace negative) turns the grace period off: then not even a row
	// whose updated_at lies in the future is recent.
	withinGrace string
	// isRowFinding holds for a stored finding whose record is a host row: the kind says so.
	isRowFinding string
	// idKey and xminVersion say which of a record's key, id and version text the reader writes
	// (recordColumns; hosttable.Spec.IDKey, XminVersion).
	idKey       hosttable.IDKey
	xminVersion bool
}

func newSQLParts(cfg Config, types map[string]string, row *rowType) *sqlParts {
	p := &sqlParts{cfg: cfg, types: types, row: row, host: cfg.hostTable()}
	for _, k := range cfg.KeyColumns {
		p.keys = append(p.keys, p.q(k))
	}
	created, updated := p.ts(cfg.CreatedAtColumn), p.ts(cfg.UpdatedAtColumn)
	p.invalid = fmt.Sprintf(`(CASE WHEN NOT isfinite(%[1]s) THEN '%[3]s is ' || %[1]s::text
			WHEN %[1]s < '%[5]s'::timestamptz THEN '%[3]s ' || to_char(%[1]s AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC is before %[6]s'
			WHEN NOT isfinite(%[2]s) THEN '%[4]s is ' || %[2]s::text END)`,
		created, updated, cfg.CreatedAtColumn, cfg.UpdatedAtColumn, minPlausibleTime.Format(time.RFC3339), minPlausibleTime.Format("2006"))
	// now() moved by an interval is a scalar subquery, an InitPlan: worked out once a statement
	// rather than once for each row it tests (twice a row here, once in withinGrace).
	ahead := fmt.Sprintf("(SELECT now() + make_interval(secs => %f))", reconcile.MaxClockSkew.Seconds())
	future := func(col, name string) string {
		return fmt.Sprintf(`WHEN %[1]s > %[2]s THEN '%[3]s ' || to_char(%[1]s AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC is in the future: more than %[4]s ahead of the database''s clock'`,
			col, ahead, name, reconcile.MaxClockSkew)
	}
	p.unjudgeable = fmt.Sprintf("coalesce(%s, CASE %s %s END)", p.invalid,
		future(created, cfg.CreatedAtColumn), future(updated, cfg.UpdatedAtColumn))
	p.readableCreated = fmt.Sprintf("(CASE WHEN isfinite(%[1]s) THEN %[1]s END)", created)
	p.withinGrace = fmt.Sprintf("($1::float8 > 0 AND %s > (SELECT now() - make_interval(secs => $1::float8)))", updated)
	p.isRowFinding = "f.kind <> '" + reconcile.KindMissingLocally + "'"
	p.idKey, p.xminVersion = idKeyOf(cfg, types), cfg.Observations != ObserveInHostColumns
	return p
}

// q is a host column, quoted and qualified by the alias h.
func (p *sqlParts) q(c string) string { return "h." + pgx.Identifier{c}.Sanitize() }

// ts reads a time column as timestamptz; a timestamp without time zone is taken to be in
// cfg.TimeZone rather than in whatever zone the session happens to have. Within a day of either
// end of the calendar, the zone's offset could take such a time out of timestamptz's range and
// fail every read of the job at that row: there it is read as UTC, a time impossible either way
// (before 1900, or in the future), which invalid and unjudgeable report.
func (p *sqlParts) ts(c string) string {
	if p.types[c] == naiveTimestamp {
		return fmt.Sprintf(`(CASE WHEN %[1]s BETWEEN '4713-01-01 BC'::timestamp AND '294276-12-30'::timestamp THEN %[1]s AT TIME ZONE '%[2]s'
			ELSE %[1]s AT TIME ZONE 'UTC' END)`, p.q(c), p.cfg.TimeZone)
	}
	return p.q(c)
}

// changedWhen makes cond (a row's change that counts) exclude, with ObserveInHostColumns, our
// own write: that may fire an updated_at trigger, and a row whose last change is no later than
// our last verification (within the tolerance) has not changed since.
func (p *sqlParts) changedWhen(cond string) string {
	if p.cfg.Observations != ObserveInHostColumns {
		return cond
	}
	return fmt.Sprintf("%s AND NOT coalesce(%s <= %s + make_interval(secs => %f), false)",
		cond, p.ts(p.cfg.UpdatedAtColumn), p.ts(p.cfg.VerifiedAtColumn), p.cfg.OwnWriteTolerance.Seconds())
}

// where joins conds and the Filter into a WHERE clause; the Filter's placeholders start at
// $first, after the statement's own, and statements.filterArgs are bound to them.
func (p *sqlParts) where(first int, conds ...string) string {
	if f, _ := renderFilter(p.cfg, p.types, first); f != "" {
		conds = append(conds, f)
	}
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// rowExists(id, isRow) is a condition: the host row with the text id exists. It looks the row
// up by its own type, so that the primary key serves; the id is only cast when isRow, a
// condition, holds: the record id of a finding that names no row (an external object's id,
// reconcile.Outcome.NotARow) need not be of the row id's type.
func (p *sqlParts) rowExists(id, isRow string) string {
	return fmt.Sprintf("EXISTS (SELECT 1 FROM %s AS h WHERE %s = (CASE WHEN %s THEN %s END)::%s)",
		p.host, p.q(p.cfg.IDColumn), isRow, id, p.types[p.cfg.IDColumn])
}

// rowAsRead(id, version, isRow) is a condition: the host row with the text id exists and, unless
// version is empty, is at that version (see version). It looks the row up as rowExists does.
func (p *sqlParts) rowAsRead(id, version, isRow string) string {
	return fmt.Sprintf("EXISTS (SELECT 1 FROM %s AS h WHERE %s = (CASE WHEN %s THEN %s END)::%s AND (CASE WHEN %s = '' THEN true ELSE %s END))",
		p.host, p.q(p.cfg.IDColumn), isRow, id, p.types[p.cfg.IDColumn], version, p.unchanged(version))
}

// version is a row's version as a read returns it (reconcile.Record.Version): PostgreSQL's
// xmin, which every write of the row changes, whatever it writes into updated_at. With
// ObserveInHostColumns, the reconciler's own writes change it too, so the version also holds the
// row's updated_at and last-verified time, as a JSON array (timestamps in ISO 8601, whatever
// the session's settings), for unchanged to tell them apart.
func (p *sqlParts) version() string {
	if p.cfg.Observations != ObserveInHostColumns {
		return "h.xmin::text"
	}
	return fmt.Sprintf("jsonb_build_array(h.xmin::text, %s, %s)::text", p.ts(p.cfg.UpdatedAtColumn), p.ts(p.cfg.VerifiedAtColumn))
}

// unchanged(v) is a condition on the host row h: it is at version v (the text version returned
// when it was read), or, with ObserveInHostColumns, it has changed since only by the
// reconciler's own write: its last-verified time moved and its updated_at is no later than
// that, within OwnWriteTolerance, as the grace period judges (changedWhen). As there, a host
// change followed by the reconciler's own write within one batch is taken for the latter when
// a trigger rewrote updated_at.
func (p *sqlParts) unchanged(v string) string {
	if p.cfg.Observations != ObserveInHostColumns {
		return fmt.Sprintf("h.xmin::text = %s", v)
	}
	updated, verified := p.ts(p.cfg.UpdatedAtColumn), p.ts(p.cfg.VerifiedAtColumn)
	return fmt.Sprintf(`(h.xmin::text = (%[1]s::jsonb ->> 0) OR (%[3]s IS DISTINCT FROM (%[1]s::jsonb ->> 2)::timestamptz
		AND coalesce(%[2]s <= %[3]s + make_interval(secs => %[4]f), false)))`, v, updated, verified, p.cfg.OwnWriteTolerance.Seconds())
}

// verifiedSince(id, at, isRow) is a condition: job $1 holds a verification of the row with the
// text id later than an answer obtained at at (a timestamptz, NULL: the commit's time),
// compared as the store writes both: the answer's time no later than the commit's, against the
// observation's time, or with ObserveInHostColumns the row's last-verified time (its commit's).
// Such an answer is older than what the row was last judged on: recording it would overturn a
// newer finding (see reconcile.Sink). The row is looked up as rowExists does.
func (p *sqlParts) verifiedSince(id, at, isRow string) string {
	if p.cfg.Observations != ObserveInHostColumns {
		return fmt.Sprintf("EXISTS (SELECT 1 FROM %s AS o WHERE o.job = $1 AND o.record_id = %s AND o.verified_at > least(%s, now()))",
			p.cfg.Tables.table("observations"), id, at)
	}
	return fmt.Sprintf("EXISTS (SELECT 1 FROM %s AS h WHERE %s = (CASE WHEN %s THEN %s END)::%s AND %s > least(%s, now()))",
		p.host, p.q(p.cfg.IDColumn), isRow, id, p.types[p.cfg.IDColumn], p.ts(p.cfg.VerifiedAtColumn), at)
}

// observedHere(id) is a condition on o, job $1's observation of the record with the text id:
// this transaction wrote it (its xmin; in a savepoint, xmin is the subtransaction's id). A
// frozen row keeps its xmin: one left untouched while 2^32 transaction ids went by passes in
// the one transaction whose id wrapped round to it.
func (p *sqlParts) observedHere(id string) string {
	return "o.job = $1 AND o.record_id = " + id + " AND o.xmin = pg_current_xact_id()::xid"
}

// lagValue is a row's lag: how long it has gone unverified, counting a never-verified row from
// its creation; NULL for a row with invalid times. The lag may be negative (rows created in the
// future) or past what a time.Duration holds: lagOf clamps it.
func (p *sqlParts) lagValue() string {
	verified := "o.verified_at"
	if p.cfg.Observations == ObserveInHostColumns {
		verified = fmt.Sprintf("(CASE WHEN isfinite(%[1]s) THEN %[1]s END)", p.ts(p.cfg.VerifiedAtColumn))
	}
	return fmt.Sprintf("(CASE WHEN %s IS NULL THEN now() - coalesce(%s, %s) END)", p.invalid, verified, p.ts(p.cfg.CreatedAtColumn))
}

// buildStatements builds every statement of a store, each group by the function named for
// what it serves.
func buildStatements(cfg Config, types map[string]string, keyCollations []string, row *rowType) *statements {
	p := newSQLParts(cfg, types, row)
	p.keyCollations = keyCollations
	st := &statements{parts: p, spec: p.hostSpec()}
	_, st.filterArgs = renderFilter(cfg, types, 1)
	p.cursorStatements(st)
	p.keysetReads(st)
	// Prepared once the keyset reads' pieces are in: the commit's statements use its range scan.
	hosttable.Prepare(st.spec)
	p.commitStatements(st)
	p.statusStatements(st)
	p.lagMarkStatements(st)
	p.coverageStatements(st)
	p.laneStatements(st)
	p.reviewStatements(st)
	sp := st.spec
	sp.LockRecords, sp.LockObserved, sp.LockFindings = st.lockRecords, st.lockObserved, st.lockFindings
	sp.Findings, sp.Observe, sp.ObserveTakesJob, sp.ForgetDeleted = st.findings, st.observe, st.observeTakesJob, st.forgetDeleted
	sp.Unobserved, sp.ObserveReturning, sp.ObserveInRange = st.unobserved, st.observeReturning, st.observeInRange
	sp.FindingsObserved, sp.ObserveOnce = st.findingsObserved, st.observeOnce
	return st
}

// hostSpec is the host table's pieces that its reads and commits (hosttable.Table) and the
// statements built beside them (hosttable.Query) take; buildStatements adds the statements.
func (p *sqlParts) hostSpec() *hosttable.Spec {
	cfg := p.cfg
	sp := &hosttable.Spec{Host: p.host, Keys: p.keys, KeyNames: cfg.KeyColumns, ID: p.q(cfg.IDColumn),
		Filter: hostFilter(cfg, p.types), LagValue: p.lagValue(),
		ObserveInHost: cfg.Observations == ObserveInHostColumns, ObservationsTable: cfg.Tables.table("observations"),
		FindingsTable: cfg.Tables.table("findings"), AggregateType: cfg.AggregateType, TimeZone: cfg.TimeZone,
		WrapError: cfg.Tables.wrap, IDKey: p.idKey, XminVersion: p.xminVersion}
	for _, k := range cfg.KeyColumns {
		sp.KeyTypes = append(sp.KeyTypes, p.types[k])
	}
	return sp
}

// cursorStatements: reading a job's cursor and moving it, as compare-and-set.
// Cursor positions are JSON arrays of the key values, built by to_jsonb: timestamps come out in
// ISO 8601 whatever the session's DateStyle, so a position written by one process reads back
// the same in another.
func (p *sqlParts) cursorStatements(st *statements) {
	cursors := p.cfg.Tables.table("cursors")
	// The cycle's high-water mark counts only in the cycle it was fixed in (cycle_end_cycle):
	// a release before migration 005 ends a cycle without clearing it, and a newer cycle must
	// not stop at a mark of an older one.
	st.readCursor = `SELECT coalesce(position::text, ''), version,
				coalesce(CASE WHEN cycle_end_cycle = cycles_completed THEN cycle_end::text END, '')
			FROM ` + cursors + ` WHERE job = $1`
	// Compare-and-set on the version read ($2), as one upsert: it affects one row exactly
	// when the cursor is still where the batch found it (or did not exist yet).
	// $6 is the cycle's high-water mark, fixed by its first batch, and tagged with its cycle.
	st.advance = `INSERT INTO ` + cursors + ` AS c (job, position, version, last_batch_at, last_batch_scanned, last_batch_unverifiable,
				cycle_end, cycle_end_cycle)
			VALUES ($1, $3::jsonb, $2::bigint + 1, now(), $4, $5, $6::jsonb, 0)
			ON CONFLICT (job) DO UPDATE SET position = EXCLUDED.position, version = c.version + 1,
				last_batch_at = EXCLUDED.last_batch_at, last_batch_scanned = EXCLUDED.last_batch_scanned,
				last_batch_unverifiable = EXCLUDED.last_batch_unverifiable, cycle_end = EXCLUDED.cycle_end,
				cycle_end_cycle = c.cycles_completed
			WHERE c.version = $2`
	// A wrap may carry the cycle's last rows ($3 scanned, $4 unverifiable): they count as
	// the last batch. An empty wrap leaves the last batch's figures as they were.
	st.wrap = `INSERT INTO ` + cursors + ` AS c (job, position, version, cycles_completed, last_cycle_completed_at,
				last_batch_at, last_batch_scanned, last_batch_unverifiable)
			VALUES ($1, NULL, $2::bigint + 1, 1, now(), CASE WHEN $3::int > 0 THEN now() END, $3, $4)
			ON CONFLICT (job) DO UPDATE SET position = NULL, cycle_end = NULL, cycle_end_cycle = NULL, version = c.version + 1,
				cycles_completed = c.cycles_completed + 1, last_cycle_completed_at = now(), cycle_started_at = now(),
				last_batch_at = CASE WHEN $3::int > 0 THEN now() ELSE c.last_batch_at END,
				last_batch_scanned = CASE WHEN $3::int > 0 THEN $3 ELSE c.last_batch_scanned END,
				last_batch_unverifiable = CASE WHEN $3::int > 0 THEN $4 ELSE c.last_batch_unverifiable END
			WHERE c.version = $2`
}

// keyText is a row's key as a read returns it (reconcile.Record.Key): a JSON array of the key
// columns' values, as jsonb_build_array(...)::text writes it. Integers are written by
// concatenation, the same text at a fraction of the cost (a jsonb built and printed for each
// row was most of a read's time on the server).
func (p *sqlParts) keyText() string {
	for _, k := range p.cfg.KeyColumns {
		if !isInteger(p.types[k]) {
			return fmt.Sprintf("jsonb_build_array(%s)::text", strings.Join(p.keys, ", "))
		}
	}
	return "'[' || " + strings.Join(p.keys, " || ', ' || ") + " || ']'"
}

// recordColumns are the columns of a read's record, a keyset read's or a lane's match's
// (hosttable.RecordScanner): the key and the id, the external id as text, the readable
// created_at, whether the row is recent (the condition recent), why it cannot be judged, its
// version, then the local state's. A key that is an integer, text or uuid id alone comes as
// the id itself, and a version that is xmin alone as the xid: the reader writes their text
// (hosttable.Spec.IDKey, XminVersion), which the server, writing it for each row, spent a
// third of a read's time on.
func (p *sqlParts) recordColumns(recent string) string {
	cfg := p.cfg
	key := p.keyText() + ", " + p.q(cfg.IDColumn) + "::text"
	if p.idKey != hosttable.NotIDKey {
		key = p.q(cfg.IDColumn)
	}
	version := p.version()
	if p.xminVersion {
		version = "h.xmin"
	}
	return fmt.Sprintf("%s, %s::text, %s, coalesce(%s, false), %s, %s, %s",
		key, p.q(cfg.ExternalIDColumn), p.readableCreated, recent, p.unjudgeable, version, p.row.selectList(p))
}

// idKeyOf is how a read selects a key that is the id column alone (hosttable.IDKey): as the id
// itself for the types whose key text the reader writes, else as the server writes it.
func idKeyOf(cfg Config, types map[string]string) hosttable.IDKey {
	if len(cfg.KeyColumns) != 1 || cfg.KeyColumns[0] != cfg.IDColumn {
		return hosttable.NotIDKey
	}
	switch t := types[cfg.IDColumn]; {
	case isInteger(t):
		return hosttable.IntIDKey
	case t == "text" || strings.HasPrefix(t, "character varying"):
		return hosttable.TextIDKey
	case t == "uuid":
		return hosttable.UUIDIDKey
	}
	return hosttable.NotIDKey
}

// keysetReads: the keyset reads of the host table, of the whole job and of a key range
// (keyset.go).
func (p *sqlParts) keysetReads(st *statements) {
	sp := st.spec
	sp.Select = fmt.Sprintf("SELECT %s FROM %s AS h", p.recordColumns(p.changedWhen(p.withinGrace)), p.host)
	sp.Order = fmt.Sprintf(" ORDER BY %s LIMIT $2", strings.Join(p.keys, ", "))
	st.keyTypes = sp.KeyTypes
}

// isInteger reports whether a column of type typ (format_type) holds integers, which a key's
// JSON array and the id's text write as Go's strconv does.
func isInteger(typ string) bool {
	switch typ {
	case "smallint", "integer", "bigint":
		return true
	}
	return false
}

// commitStatements: what a commit writes besides the cursor: observations, findings with their
// repair commands, the closing of findings that verified judgments no longer describe, and,
// when a cycle completes, the closing of deleted rows' findings.
func (p *sqlParts) commitStatements(st *statements) {
	cfg, t := p.cfg, p.cfg.Tables
	// lockRecords takes, for job $1, a transaction advisory lock on each record of $3, in a
	// lock space of the findings table ($2, its name): the commits that may open findings of
	// the same record (a sweep and a lane) take turns, so that the second judges against what
	// the first opened and closed, and a record never keeps two open findings. The locks are
	// taken in one order, so commits cannot deadlock on them.
	st.lockRecords = `SELECT count(pg_advisory_xact_lock(hashtext($2), l.k)) FROM (
			SELECT DISTINCT hashtext($1 || ' ' || r) AS k FROM unnest($3::text[]) AS r ORDER BY k) AS l`
	// lockFindings locks the open findings of job $1's records $2 (those the commit may open
	// findings of), after the host rows: in the canonical writer's order, a row, then its
	// findings. A repair or webhook that changed one of those rows and is resolving its finding
	// has committed when the lock is granted, so the findings statement, run after it, sees the
	// row changed; without the lock it would read the row as before and then find the finding
	// resolved: a second finding. One lookup per record, in the records' order, then the
	// kinds': a lateral subquery, which the planner does not merge, in the order of the
	// findings_open index, so that that index serves whatever the statistics say (of a table
	// never analyzed, say).
	st.lockFindings = `SELECT 1 FROM unnest($2::text[]) AS r(id), LATERAL (
			SELECT f.id FROM ` + t.table("findings") + ` AS f WHERE f.job = $1 AND f.record_id = r.id AND f.resolved_at IS NULL
			ORDER BY f.kind FOR NO KEY UPDATE OFFSET 0) AS l`
	// findings records the outcomes that carry a finding, $3 their record ids, and closes the
	// findings that verified judgments no longer describe. $9 and $10 are the outcomes' Once
	// and NotARow; $11 their repair commands as JSON, marshalled in Go
	// (reconcile.Outcome.RepairCommand), to which the new finding's id is added; $12 their
	// external ids; $13 their decisions' Diffs as JSON (NULL for none); $14 the rows' versions
	// as read; $15 whether each decides its record's findings (reconcile.Outcome.Decides); $16
	// whether each is Verified, and $17 when its answer was obtained (NULL: the commit's time).
	// $18 are the records of the verified judgments that carry no finding but decide (InSync,
	// say), with $19 and $20 their local and external states, $21 their versions as read and
	// $22 their answers' times (findingsObserved, below, binds $18 and $19 alone). Such a
	// record's open findings are looked up first (open_all): only a record that has one, and
	// every outcome that carries a finding, is checked further (judged), so that the rows in
	// sync with nothing to close, most of a batch, cost their share of one range of the
	// findings_open index (near) and no more; $19 to $22 are not even unnested unless one of
	// them has an open finding. A row changed or deleted since its batch read it, or verified
	// on an answer older than the job's last verification of it (verifiedSince), is left alone,
	// and its id returned. (The observations statement reports the same of every verified row,
	// from the observation it wrote or did not: see hosttable.QueueResults.) A deciding outcome
	// closes its record's other open findings (closed): as cleared without a kind, else as
	// superseded by the finding of its kind left open (successor). It closes those it can lock
	// at once (open_all; the records it opens findings of are locked already, by lockFindings):
	// one that another transaction holds (a person resolving it, a repair) is left to the next
	// verified judgment, so that the statement waits on no finding and commits judging the same
	// records cannot deadlock. With a Config.Deliver, the commands are written as handed over
	// (processed_at set, so no dispatcher claims them) and returned as a JSON array for the
	// Deliverer.
	var deliveredCol, deliveredVal, deliveredCmds string
	if cfg.Deliver != nil {
		deliveredCol, deliveredVal = ", processed_at", ", now()"
		deliveredCmds = `, (SELECT coalesce(jsonb_agg(jsonb_build_object('id', id, 'name', event_type, 'payload', payload) ORDER BY id), '[]')
				FROM queued)`
	}
	const reconciler = "'" + reconcile.ResolvedByReconciler + "'"
	// closeSet closes a finding n (of open_now) that judgment l (of live) no longer describes,
	// when closes holds: as cleared without a kind, else as superseded by successor s.
	closeSet := `SET resolved_at = now(), resolved_by = ` + reconciler + `,
					resolution = CASE WHEN l.kind = '' THEN '` + reconcile.ResolutionCleared + `' ELSE '` + reconcile.ResolutionSuperseded + `' END,
					resolution_note = CASE WHEN l.kind = '' THEN 'in sync again: local ' || l.local_state || ', external ' || l.external_state
						ELSE 'superseded by ' || coalesce('finding ' || s.id, 'a finding') || ': ' || l.kind END,
					superseded_by = s.id
				FROM open_now AS n JOIN live AS l ON l.record_id = n.record_id LEFT JOIN successor AS s ON s.record_id = l.record_id`
	closes := `l.decides AND n.kind <> l.kind AND n.kind <> '` + reconcile.KindMissingLocally + `'`
	// clearAll are the clear judgments as candidates, and asReadAll says whether a candidate
	// is to be judged: its row as read and, if verified, not verified since on a newer answer.
	rowAsRead := p.rowAsRead("candidates.record_id", "candidates.version", "NOT candidates.not_a_row")
	clearAll := `SELECT c.record_id, '', c.local_state, c.external_state, '', '', false, false, NULL, '', NULL, c.version, true, true, c.answered_at
				FROM unnest($18::text[], $19::text[], $20::text[], $21::text[], $22::timestamptz[])
					AS c(record_id, local_state, external_state, version, answered_at)`
	asReadAll := rowAsRead + `
					AND NOT (verified AND ` + p.verifiedSince("candidates.record_id", "candidates.answered_at", "NOT candidates.not_a_row") + `)`
	findings := func(clear, asRead string) string {
		return `WITH input AS (
				SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bool[], $10::bool[], $11::text[], $12::text[], $13::text[], $14::text[], $15::bool[],
						$16::bool[], $17::timestamptz[])
					AS t(record_id, kind, local_state, external_state, detail, command, once, not_a_row, payload, external_id, diffs, version, decides,
						verified, answered_at)
			), span AS MATERIALIZED (
				-- The least and greatest of the wanted records (those whose judgments decide
				-- their findings) and n, straight from the arrays, not deduplicated: a record
				-- judged twice counts twice. n need only be at least the number of records:
				-- near, read to n + 1 entries at most, is whole when it read n or fewer (every
				-- open finding from lo to hi, so every wanted record's), else each record is
				-- looked up. A larger n costs at most a longer read, never a finding missed.
				SELECT min(w.record_id) AS lo, max(w.record_id) AS hi, count(*) AS n
				FROM (SELECT record_id FROM input WHERE decides UNION ALL SELECT unnest($18::text[])) AS w(record_id)
			), near AS MATERIALIZED (
				-- The job's open findings from the least of the wanted records to the greatest,
				-- read in one range of findings_open (its order: with sorts off no other index
				-- serves) rather than looked up record by record, as long as there are no more
				-- than n; else every record is looked up.
				SELECT f.record_id FROM ` + t.table("findings") + ` AS f
				WHERE f.job = $1 AND f.resolved_at IS NULL
					AND f.record_id >= (SELECT lo FROM span) AND f.record_id <= (SELECT hi FROM span)
				ORDER BY f.job, f.record_id, f.kind LIMIT (SELECT n FROM span) + 1
			), whole AS MATERIALIZED (
				SELECT count(*) <= (SELECT n FROM span) AS whole FROM near
			), wanted AS (
				-- The records looked up: the wanted records near found (usually none; each
				-- array is hashed only when near found a record the arrays before it lack:
				-- the outcomes with findings first, the fewer), or, when near was cut short,
				-- every wanted record, each once.
				SELECT record_id FROM near WHERE (SELECT whole FROM whole)
					AND (record_id IN (SELECT record_id FROM input WHERE decides) OR record_id IN (SELECT unnest($18::text[])))
				UNION
				SELECT record_id FROM input WHERE decides AND NOT (SELECT whole FROM whole)
				UNION
				SELECT unnest($18::text[]) WHERE NOT (SELECT whole FROM whole)
			), open_all AS MATERIALIZED (
				SELECT f.* FROM wanted AS r, LATERAL (
					SELECT f.id, f.record_id, f.kind, f.ctid AS tid FROM ` + t.table("findings") + ` AS f
					WHERE f.job = $1 AND f.record_id = r.record_id AND f.resolved_at IS NULL
					ORDER BY f.kind FOR NO KEY UPDATE SKIP LOCKED OFFSET 0) AS f
			), candidates AS (
				SELECT * FROM input
				UNION ALL
				-- The verified judgments without a finding of the records with open findings,
				-- their arrays unnested only when there are such records.
				` + clear + `
				WHERE EXISTS (SELECT 1 FROM open_all) AND c.record_id IN (SELECT record_id FROM open_all)
			), judged AS MATERIALIZED (
				SELECT *, not_a_row OR (` + asRead + `) AS as_read
				FROM candidates
			), live AS (
				SELECT * FROM judged WHERE as_read
			), open_now AS (
				SELECT * FROM open_all WHERE record_id IN (SELECT record_id FROM live WHERE decides)
			), opened AS (
				INSERT INTO ` + t.table("findings") + ` (job, record_id, kind, local_state, external_state, detail, command, aggregate_type, external_id, diffs)
				SELECT $1, record_id, kind, local_state, external_state, detail, command, $2, external_id, diffs::jsonb FROM live
				WHERE kind <> ''
				-- Once: a finding (job, record, kind) ever opened is not opened again. (OFFSET 0:
				-- looked up for such outcomes only, never by hashing the job's every finding.)
				AND NOT (once AND EXISTS (SELECT 1 FROM ` + t.table("findings") + ` AS f
					WHERE f.job = $1 AND f.record_id = live.record_id AND f.kind = live.kind OFFSET 0))
				ON CONFLICT (job, record_id, kind) WHERE resolved_at IS NULL DO NOTHING
				RETURNING id, record_id, kind, command
			), successor AS (
				SELECT l.record_id, coalesce(o.id, (SELECT n.id FROM open_now AS n WHERE n.record_id = l.record_id AND n.kind = l.kind)) AS id
				FROM live AS l LEFT JOIN opened AS o ON o.record_id = l.record_id AND o.kind = l.kind
				WHERE l.decides AND l.kind <> ''
			), closed AS (
				UPDATE ` + t.table("findings") + ` AS f ` + closeSet + `
				-- The findings where open_all found and locked them, open (so no resolved_at
				-- condition here, which would let a planner that believes the table empty scan
				-- every open finding of the job by a partial index instead).
				WHERE f.ctid = ANY (ARRAY(SELECT tid FROM open_now)) AND f.id = n.id AND ` + closes + `
				RETURNING f.id, f.resolution, f.resolution_note
			), missed AS (
				-- A finding that another transaction changed, and left open, after this
				-- statement's snapshot and before open_all locked it: open_all has the ctid of
				-- its newest version, which the snapshot cannot see, and closed missed it.
				SELECT n.id FROM open_now AS n JOIN live AS l ON l.record_id = n.record_id
				WHERE ` + closes + ` AND n.id NOT IN (SELECT id FROM closed)
			), moved AS (
				-- Found by id, its update follows to the version open_all locked. The one-time
				-- filter (EXISTS) spares the lookup when there is none, nearly always.
				UPDATE ` + t.table("findings") + ` AS f ` + closeSet + `
				WHERE EXISTS (SELECT 1 FROM missed) AND f.id = ANY (ARRAY(SELECT id FROM missed)) AND f.id = n.id AND ` + closes + `
				RETURNING f.id, f.resolution, f.resolution_note
			), history AS (
				INSERT INTO ` + t.table("finding_events") + ` (finding_id, action, actor, resolution, note)
				SELECT id, 'resolved', ` + reconciler + `, resolution, resolution_note FROM closed
				UNION ALL
				SELECT id, 'resolved', ` + reconciler + `, resolution, resolution_note FROM moved
			), queued AS (
				INSERT INTO ` + t.table("outbox") + ` (aggregate_type, aggregate_id, event_type, finding_id, payload` + deliveredCol + `)
				SELECT $2, o.record_id, o.command, o.id, (SELECT i.payload::jsonb FROM input AS i
					WHERE i.record_id = o.record_id AND i.kind = o.kind LIMIT 1) || jsonb_build_object('finding_id', o.id)` + deliveredVal + `
				FROM opened AS o WHERE o.command <> '' ORDER BY o.id
				RETURNING id, event_type, payload
			)
			SELECT (SELECT count(*) FROM opened), (SELECT count(*) FROM queued),
				(SELECT coalesce(array_agg(record_id), '{}') FROM judged WHERE NOT as_read)` + deliveredCmds
	}
	st.findings = findings(clearAll, asReadAll)
	if cfg.Observations != ObserveInHostColumns {
		obs := t.table("observations")
		// findingsObserved is findings for a commit whose observations statement ran before it
		// in the same top-level transaction, on each verified record once (QueueResults
		// chooses: in a savepoint xmin names the subtransaction, and two outcomes of one record
		// share one observation). There, for a verified candidate, "as read and not verified
		// since" is what that statement decided: it wrote the observation only if the row was
		// as read (observe: the same rowAsRead, empty version included; observeInRange: the
		// same for a row of a version read from the range, and QueueResults keeps findings for
		// a row of none) and no verification at least as recent was recorded (ON CONFLICT's
		// WHERE, on the newest committed observation, after waiting for any transaction
		// writing it: verifiedSince's test, least(answer, now()) with the same answer and
		// now()). Its decision shows in the observation's xmin: this transaction's when
		// inserted or updated (HOT or not, the version seen is its own), another's when left
		// alone (a lock leaves xmin). No one changes it before this transaction ends, which
		// holds its lock: a lane's verification, newer or older, committed before the
		// observations statement or waits for this commit. So a verified candidate is judged by
		// whether this transaction wrote its observation (observedHere), whose external state
		// its in-sync note reads, and $20 to $22 are not bound; an unverified one keeps
		// rowAsRead. What moves is when the host row, locked by neither, is checked: at the
		// observations statement's snapshot, not this one's, both inside the commit and after
		// lockFindings (so its argument holds: a repair holding those locks has committed
		// before either). A row changed in between is judged on its read, as one changed just
		// after this statement always was; before, it was observed but not judged.
		observedHere := p.observedHere("candidates.record_id")
		clearObserved := `SELECT c.record_id, '', c.local_state, (SELECT o.external_state FROM ` + obs + ` AS o WHERE ` + p.observedHere("c.record_id") + `),
					'', '', false, false, NULL, '', NULL, '', true, true, NULL
				FROM unnest($18::text[], $19::text[]) AS c(record_id, local_state)`
		// (OFFSET 0: looked up for each candidate, never by hashing the job's every
		// observation, a plan the planner may take for the EXISTS of an equality.)
		st.findingsObserved = findings(clearObserved, `CASE WHEN verified THEN EXISTS (SELECT 1 FROM `+obs+` AS o WHERE `+observedHere+` OFFSET 0)
					ELSE `+rowAsRead+` END`)
	}
	if cfg.Observations == ObserveInHostColumns {
		// The verified-at time is the clock when each row is written, after lockObserved took
		// every row's lock: an updated_at trigger on the host table writes now() (earlier) or
		// clock_timestamp() (microseconds later), however long a host transaction made the
		// commit wait for a row. So the own-write test (updated_at within OwnWriteTolerance of
		// the verified-at time) holds. It is therefore the commit's time, not the answer's
		// (Outcome.VerifiedAt), which may be older by the batch's duration, and by the
		// look-ahead's age within the cycle: the own-write test could not tell the write of a
		// row verified on an older answer from a change the host made after it.
		now := "clock_timestamp()"
		if p.types[cfg.VerifiedAtColumn] == naiveTimestamp {
			now = fmt.Sprintf("(clock_timestamp() AT TIME ZONE '%s')", cfg.TimeZone)
		}
		// Locks in key order, so that commits writing the same rows cannot deadlock. The rows a
		// commit judges stay as they are until it ends: its findings and observations are of
		// the rows as the commit saw them.
		st.lockObserved = fmt.Sprintf(`SELECT 1 FROM %s AS h WHERE %s = ANY($1::text[]::%s[]) ORDER BY %s FOR NO KEY UPDATE`,
			p.host, p.q(cfg.IDColumn), p.types[cfg.IDColumn], p.q(cfg.IDColumn))
		// $3 are the rows' versions as read: a row changed since is not observed; $4 when the
		// answers were obtained: a row verified since on a newer answer is not observed either.
		// It returns the ids of the rows it left unobserved (changed since their read, or
		// deleted), for the commit to count (hosttable.QueueResults).
		st.observe = fmt.Sprintf(`WITH written AS (
				UPDATE %s AS h SET %s = t.e, %s = %s
				FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) AS t(r, e, v, at) WHERE %s = t.r::%s
					AND (CASE WHEN t.v = '' THEN true ELSE %s END) AND NOT coalesce(%s > least(t.at, now()), false)
				RETURNING t.r
			)
			SELECT CASE WHEN (SELECT count(*) FROM written) = cardinality($1::text[]) THEN '{}'
				ELSE (SELECT coalesce(array_agg(t.r), '{}') FROM unnest($1::text[]) AS t(r) WHERE t.r NOT IN (SELECT r FROM written)) END`,
			p.host, pgx.Identifier{cfg.ObservedColumn}.Sanitize(), pgx.Identifier{cfg.VerifiedAtColumn}.Sanitize(), now,
			p.q(cfg.IDColumn), p.types[cfg.IDColumn], p.unchanged("t.v"), p.ts(cfg.VerifiedAtColumn))
	} else {
		// A row's verified time is when its answer was obtained ($5, NULL: unknown), never
		// later than the commit; an observation is replaced only by one at least as recent (an
		// answer kept from earlier in the cycle may reach a commit after a lane's newer one).
		// It runs before the findings statement (see queueResults), which then leaves alone
		// the rows this left unobserved.
		st.observeTakesJob = true
		// $4 are the rows' versions as read: a row changed or deleted since is not observed.
		// The rows it wrote are counted (no RETURNING: a list of every row costs about a tenth
		// of the statement); when they are fewer than it was given, unobserved then names the
		// rows left unobserved (changed or deleted since their read, or verified since on a
		// newer answer), for the commit to count (hosttable.QueueResults): those of $2 whose
		// observation this transaction did not write.
		insert := `INSERT INTO ` + t.table("observations") + ` AS o (job, record_id, external_state, verified_at)
			SELECT $1, t.r, t.e, least(t.at, now()) FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[]) AS t(r, e, v, at)`
		upsert := `
			ON CONFLICT (job, record_id) DO UPDATE
			SET external_state = EXCLUDED.external_state, verified_at = EXCLUDED.verified_at
			WHERE o.verified_at <= EXCLUDED.verified_at`
		// The rows are written in the records' order (bytewise, as QueueResults sorts them and
		// observeInRange and observeOnce write), whatever the plan: a lookup planned as a scan
		// of the host table probing a hash of the rows (a lane's step over an analyzed table)
		// writes in the table's order, and a lane writing 9 before 10 while a sweep writes "10"
		// before "9" deadlocked.
		st.observe = insert + `
			WHERE ` + p.rowAsRead("t.r", "t.v", "true") + `
			ORDER BY t.r COLLATE "C"` + upsert
		// observeInRange is observe for a sweep's commit, which knows the keyset range its rows
		// were read from ($6 the position they were read after, if after, then the key of the
		// last): each row is checked as read against one index range scan of that range, by id
		// in a hash (see hosttable's joinByHash), rather than looked up in the primary key one
		// by one. A row changed since its read (its xmin differs), deleted, or moved out of the
		// range by an update of its key (which changes its xmin too) has no match and is not
		// observed, as observe leaves it; a row still in the range at its version is found
		// there, since the read found it there by the same bounds (hosttable.Spec.RangeScan).
		// The range's other rows (rows inserted since) match no row of the batch and write
		// nothing. The rows are written in the order of the arrays, the records' (QueueResults:
		// bytewise, as COLLATE "C" sorts), as observe writes them: a hash join's order is the
		// range's, and commits upserting the same observations in different orders could
		// deadlock. Not with a Filter: the range then also holds every row the Filter leaves
		// out, which the scan would read too (at one row in ten of the range in the batch, the
		// check took about three times as long as the lookups; at one in a hundred, over ten).
		if f, _ := renderFilter(cfg, p.types, 1); f == "" {
			scan := p.q(cfg.IDColumn) + " AS id, " + p.version() + " AS version"
			for i, after := range []bool{false, true} {
				st.observeInRange[i] = insert + `
			WHERE EXISTS (SELECT 1 FROM (` + st.spec.RangeScan(scan, 6, after) + `) AS h
				WHERE h.id = t.r::` + p.types[cfg.IDColumn] + ` AND (t.v = '' OR h.version = t.v))
			ORDER BY t.r COLLATE "C"` + upsert
			}
		}
		st.unobserved = `SELECT coalesce(array_agg(t.r), '{}') FROM unnest($2::text[]) AS t(r)
			WHERE NOT EXISTS (SELECT 1 FROM ` + t.table("observations") + ` AS o
				WHERE ` + p.observedHere("t.r") + `)`
		// A commit that may run in a savepoint (the store's DB a transaction, or a DB that is
		// neither a pool nor a connection) writes with a transaction id of its own, which xmin
		// holds and pg_current_xact_id does not name: there, the observations statement returns
		// the rows it left unobserved itself.
		st.observeReturning = `WITH written AS (` + st.observe + `
				RETURNING o.record_id
			)
			SELECT CASE WHEN (SELECT count(*) FROM written) = cardinality($2::text[]) THEN '{}'
				ELSE (SELECT coalesce(array_agg(t.r), '{}') FROM unnest($2::text[]) AS t(r) WHERE t.r NOT IN (SELECT record_id FROM written)) END`
		// observeOnce is observeReturning for a commit that verified a record more than once (a
		// host's own outcomes may): an INSERT ... ON CONFLICT DO UPDATE may not write one row
		// twice, so each record is observed once, on the newest answer among its outcomes whose
		// row is as read (the later outcome on a tie). Its other outcomes are then older than
		// the verification recorded, or of a row changed since, and the findings statement
		// leaves them alone.
		st.observeOnce = `WITH written AS (
				INSERT INTO ` + t.table("observations") + ` AS o (job, record_id, external_state, verified_at)
				SELECT DISTINCT ON (t.r COLLATE "C") $1, t.r, t.e, least(t.at, now())
				FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[]) WITH ORDINALITY AS t(r, e, v, at, n)
				WHERE ` + p.rowAsRead("t.r", "t.v", "true") + `
				ORDER BY t.r COLLATE "C", least(t.at, now()) DESC, t.n DESC` + upsert + `
				RETURNING o.record_id
			)
			SELECT coalesce(array_agg(DISTINCT t.r), '{}') FROM unnest($2::text[]) AS t(r) WHERE t.r NOT IN (SELECT record_id FROM written)`
	}
	// forgetDeleted closes the open findings of job $1 whose row no longer exists, as
	// row_deleted by $2, in their history too, and removes the job's observations of such rows.
	// It runs when a cycle completes: a finding of a row deleted after its batch would
	// otherwise stay open forever. missing_locally findings name external objects, not rows,
	// and stay. An outbox command already queued for such a row stays too: its canonical
	// writer finds the row gone and finishes it (or the dispatcher parks it dead).
	// Observations are compared as text, in one anti-join per cycle. Findings and observations
	// are locked before they are changed, in the order commits lock them (the records bytewise,
	// as QueueResults sorts them, then a record's findings by kind): changed in whatever order
	// the plan visited them (the table's), a lane locking 10's then 9's while they were closed
	// or removed deadlocked with the wrap.
	st.forgetDeleted = `WITH doomed AS MATERIALIZED (
			SELECT f.id FROM ` + t.table("findings") + ` AS f
			WHERE f.job = $1 AND f.resolved_at IS NULL AND ` + p.isRowFinding + ` AND NOT ` + p.rowExists("f.record_id", p.isRowFinding) + `
			ORDER BY f.record_id COLLATE "C", f.kind FOR NO KEY UPDATE
		), gone AS (
			UPDATE ` + t.table("findings") + ` AS f SET resolved_at = now(), resolution = '` + reconcile.ResolutionRowDeleted + `',
				resolved_by = $2, resolution_note = $3
			WHERE f.id = ANY (ARRAY(SELECT id FROM doomed)) AND f.resolved_at IS NULL
			RETURNING f.id
		), ev AS (
			INSERT INTO ` + t.table("finding_events") + ` (finding_id, action, actor, resolution, note)
			SELECT id, 'resolved', $2, '` + reconcile.ResolutionRowDeleted + `', $3 FROM gone
		), obs AS (
			DELETE FROM ` + t.table("observations") + ` AS o
			WHERE o.job = $1 AND o.record_id = ANY (ARRAY(SELECT g.record_id FROM ` + t.table("observations") + ` AS g
				WHERE g.job = $1 AND NOT EXISTS (SELECT 1 FROM ` + p.host + ` AS h WHERE ` + p.q(cfg.IDColumn) + `::text = g.record_id)
				ORDER BY g.record_id COLLATE "C" FOR UPDATE))
		)
		SELECT count(*) FROM gone`
}

// statusStatements: the lag and the open findings that Status reports.
func (p *sqlParts) statusStatements(st *statements) {
	// Lag: the longest any of the filter's rows has gone unverified, counting never-verified
	// rows from creation. $1 is the jobs whose verifications count (the job and LagJobs). Rows
	// with invalid times are left out of the lag and of the rows created in the last hour (they
	// show as open invalid_row findings).
	st.lag = fmt.Sprintf(`SELECT now(), count(*), coalesce(extract(epoch FROM max(%s)), 0)::float8,
			count(*) FILTER (WHERE %s > now() - interval '1 hour' AND %s IS NULL)
		FROM %s`, p.lagValue(), p.ts(p.cfg.CreatedAtColumn), p.invalid, st.spec.Query(1).LagFrom())
	// openFindings counts a job's open findings by kind for Status, leaving out those of rows
	// deleted since (forgetDeleted closes them when the cycle completes). $2 is StaleAfter.
	st.openFindings = `SELECT kind, count(*), min(detected_at), count(*) FILTER (WHERE detected_at < now() - $2::interval)
		FROM ` + p.cfg.Tables.table("findings") + ` AS f WHERE job = $1 AND resolved_at IS NULL
			AND (NOT ` + p.isRowFinding + ` OR ` + p.rowExists("f.record_id", p.isRowFinding) + `) GROUP BY kind`
}

// laneStatements: a lane's match, rows by external id (see Store.Match). $1 is the grace in
// seconds, $2 the external ids, $3 per id the time from which a change makes the row Recent
// (NULL adds nothing), then the Filter's values. It reads rows outside the Filter too, flagged,
// so that a lane does not take another tier's row for a missing one: its columns are a keyset
// read's (recordColumns), then whether the row is in the Filter's scope. Text-like external id
// columns are compared as their own type, so that an index on them serves; others as text.
func (p *sqlParts) laneStatements(st *statements) {
	cfg := p.cfg
	changed := p.changedWhen(fmt.Sprintf("(%s OR %s >= t.since)", p.withinGrace, p.ts(cfg.UpdatedAtColumn)))
	extMatch := fmt.Sprintf("%s::text = t.ext", p.q(cfg.ExternalIDColumn))
	switch et := p.types[cfg.ExternalIDColumn]; {
	case et == "text" || strings.HasPrefix(et, "character varying"):
		extMatch = fmt.Sprintf("%s = t.ext::%s", p.q(cfg.ExternalIDColumn), et)
	case et == "bpchar":
		extMatch = fmt.Sprintf("%s = t.ext::bpchar", p.q(cfg.ExternalIDColumn))
	}
	inScope := "true"
	if f, _ := renderFilter(cfg, p.types, 4); f != "" {
		inScope = "coalesce(" + f + ", false)"
	}
	st.match = fmt.Sprintf("SELECT %s, %s FROM %s AS h JOIN unnest($2::text[], $3::timestamptz[]) AS t(ext, since) ON %s",
		p.recordColumns(changed), inScope, p.host, extMatch)
}

// reviewStatements: the external ids the review API shows beside findings.
func (p *sqlParts) reviewStatements(st *statements) {
	id := p.cfg.IDColumn
	st.externalIDs = fmt.Sprintf("SELECT %s::text, coalesce(%s::text, '') FROM %s AS h WHERE %s = ANY($1::text[]::%s[])",
		p.q(id), p.q(p.cfg.ExternalIDColumn), p.host, p.q(id), p.types[id])
	st.externalIDsValid = holds(p.types[id])
	for _, c := range p.cfg.SearchColumns {
		sc := searchColumn{valid: holds(p.types[c])}
		// Text-like, integer and uuid columns are compared in their own type, so that an
		// index on the column serves; a value an integer or uuid column cannot hold is not
		// looked for in it.
		switch typ := p.types[c]; {
		case typ == "text" || typ == "bpchar" || strings.HasPrefix(typ, "character varying") || sc.valid != nil:
			sc.cond = fmt.Sprintf("%s = $%%[1]d::%s", p.q(c), typ)
		default:
			// Compared as text, which no plain index on the column serves.
			sc.cond = fmt.Sprintf("%s::text = $%%[1]d", p.q(c))
		}
		st.search = append(st.search, sc)
	}
	st.searchRows = fmt.Sprintf("SELECT %s::text FROM %s AS h WHERE ", p.q(id), p.host)
}

// holds says which text values a column of type typ can hold, for the types whose casts fail
// on others (one failed cast fails the whole statement); nil for the types that take any text.
func holds(typ string) func(string) bool {
	bits := map[string]int{"smallint": 16, "integer": 32, "bigint": 64}[typ]
	switch {
	case bits > 0:
		return func(v string) bool {
			_, err := strconv.ParseInt(v, 10, bits)
			return err == nil
		}
	case typ == "uuid":
		return uuidID.MatchString
	}
	return nil
}
