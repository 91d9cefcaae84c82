package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/hosttable"
)

// Lag marks: how Status finds a job's lag without scanning the host table.
//
// A sweep reads the rows in key order, each cycle up to its high-water mark, and every commit
// records a mark: the key range (lo, hi] it read, and floor, the earliest
// coalesce(last verified, created_at) of its rows right after the commit: the time of the oldest
// answer the commit verified a row on (no later than the commit's), or the older time a row not
// verified kept (Unverifiable, InFlight, invalid rows being left out as the scan leaves them
// out). Verifications only move a row's time forward (an observation is replaced only by a more
// recent one), so a row read by a batch is at least that batch's floor old... until the next
// batch that reads it. Every row of the job is therefore covered by the marks of the current cycle (the
// rows up to the cursor) and of the previous cycle beyond the cursor, except rows inserted since
// the previous cycle started, which are found by created_at. Status then computes
//
//	oldest = min(exact(m1), floor(m2), new)
//
// where m1 and m2 are the two covering marks with the lowest floors, exact(m1) is the true
// minimum over the rows now in m1's key range (an index range scan of one batch of rows), and new
// is the true minimum over the rows created since the previous cycle started and before floor(m2)
// (an index range scan on created_at). When exact(m1) <= floor(m2) — the oldest batch still has
// its rows, the usual case — the result is exact; otherwise (every row of m1's range deleted, or
// verified again by a lane or a LagJobs job since) it is floor(m2), a lower bound of the oldest
// time, attained unless m2's rows are gone too: Status then reports a lag too large, never too
// small, until the sweep reads past those keys (TestStatusLagBoundWhenTheOldestBatchesLostTheirRows).
// Two assumptions: a row is inserted no earlier than its created_at says (a backfilled row
// with an older created_at, inserted behind the cursor, counts from its next read), and the
// cycle's rows lie in its key ranges (keys are not updated). See Store.Status for when the
// scan is kept.
type lagMarkSQL struct {
	// insert records a commit's mark: $1 job, $2 wrap, $3 lo, $4 hi (JSON arrays or NULL),
	// $5 the ids of the rows read but not verified, $6 the rows read, $7 the lag jobs, $8 the
	// time of the oldest answer a row was verified on (NULL: none, or the commit's).
	insert string
	// changed lowers the floor of the mark job $1's commit just recorded (the one written at
	// the transaction's time) to the times of the rows $2 it verified but left unrecorded,
	// because they changed since their read, and counts them unverified; $3 the lag jobs.
	changed string
	// prune deletes the marks of cycles before the previous one of job $1, at a wrap, and any
	// of cycles not yet begun (left by a cursor reset by hand).
	prune string
	// covering defines, for job $1, the common table expressions c (the cursor), f (the
	// version of the previous cycle's first mark still covering rows) and m (the covering
	// marks), which summary and Coverage's statements read.
	covering string
	// summary reads, for job $1, whether the marks cover every row (ready), their floor and
	// rows, the previous cycle's start, the lowest mark's key range and the second floor.
	summary string
	// exactAfter computes the oldest time of the rows in the key range ($2 lo, $3 hi], $1 the
	// lag jobs; exactFrom of the rows up to $2.
	exactFrom, exactAfter string
	// created computes the oldest time of the rows created at or after $2 and before $3, $1 the
	// lag jobs; newRows counts the rows created in the last hour. Both are index range scans on
	// created_at when the host table has an index on it.
	created, newRows string
	// count counts the host table's rows, for Rows below countRowsBelow.
	count string
	// Coverage's (coverage.go): coverMarks and coverNew bucket the rows of the covering marks
	// and the rows no mark has read; coverFrontier reads the mark of the previous cycle that
	// reaches behind the cursor, and coverFrontierRows and coverFrontierToEnd count its rows
	// past the cursor.
	coverMarks, coverNew, coverFrontier, coverFrontierRows, coverFrontierToEnd string
}

// countRowsBelow is the number of rows under which Status counts them (a few milliseconds)
// rather than taking the sweep's count over its last cycle's worth of batches.
const countRowsBelow = 100_000

// rowTime is a row's last verification by the jobs in $jobs, or its creation if none, as a
// timestamptz; NULL for a never-verified row with no created_at.
func (p *sqlParts) rowTime(jobs int) string {
	return fmt.Sprintf(`coalesce((SELECT max(o.verified_at) FROM %s AS o WHERE o.job = ANY($%d::text[]) AND o.record_id = %s::text), %s)`,
		p.cfg.Tables.table("observations"), jobs, p.q(p.cfg.IDColumn), p.ts(p.cfg.CreatedAtColumn))
}

// keyOf is the key held by a JSON array (a position), as a row constructor's values.
func (p *sqlParts) keyOf(expr string, keyTypes []string) string {
	vals := make([]string, len(keyTypes))
	for i := range keyTypes {
		vals[i] = p.keyValue(expr, keyTypes, i)
	}
	return "(" + strings.Join(vals, ", ") + ")"
}

// keyValue is the key column i's value held by a JSON array, in the column's collation: two
// keys taken from JSON compare as the sweep reads them, not in the database's collation.
func (p *sqlParts) keyValue(expr string, keyTypes []string, i int) string {
	v := fmt.Sprintf("((%s) ->> %d)::%s", expr, i, keyTypes[i])
	if i < len(p.keyCollations) {
		v += p.keyCollations[i]
	}
	return v
}

// createdAt compares the created_at column, as stored, with the timestamptz expr, so that an
// index on the column serves.
func (p *sqlParts) createdAt(op, expr string) string {
	if p.types[p.cfg.CreatedAtColumn] == naiveTimestamp {
		expr = fmt.Sprintf("((%s) AT TIME ZONE '%s')", expr, p.cfg.TimeZone)
	}
	return fmt.Sprintf("%s %s %s", p.q(p.cfg.CreatedAtColumn), op, expr)
}

// markRows is how many rows a mark covers at most (unless one batch has more): at 10 million
// rows, about 2,500 marks a cycle and an exact read of at most 4,096 rows.
const markRows = 2048

// exactMarks is how many of the covering marks with the lowest floors Status reads exactly.
const exactMarks = 3

func (p *sqlParts) lagMarkStatements(st *statements) {
	cfg, t := p.cfg, p.cfg.Tables
	marks, cursors := t.table("lag_marks"), t.table("cursors")
	keyTypes := st.keyTypes
	keys := "(" + strings.Join(p.keys, ", ") + ")"
	valid := p.invalid + " IS NULL"
	m := &st.lagMarks
	// A batch extends the cycle's last mark while that covers fewer than markRows rows, else
	// starts a new one: Status reads at most a cycle's marks and one mark's rows. Its frontier
	// walks the previous cycle's marks from the last mark's frontier on, in version order:
	// amortized, a mark or two per commit. An extended mark keeps its first batch's commit time
	// (first_at, or the oldest answer any of its batches verified a row on, if older) and adds
	// up the rows not verified, for Coverage.
	m.insert = fmt.Sprintf(`WITH c AS (SELECT * FROM %[2]s WHERE job = $1),
		new AS (SELECT c.cycles_completed - CASE WHEN $2 THEN 1 ELSE 0 END AS cycle, c.version,
			least(now(), $8::timestamptz, (SELECT min(%[3]s) FROM %[4]s AS h WHERE %[5]s = ANY($5::text[]::%[6]s[]) AND %[7]s)) AS floor,
			CASE WHEN $2 THEN coalesce((SELECT min(m.started) FROM %[1]s AS m WHERE m.job = $1 AND m.cycle = c.cycles_completed - 1), '-infinity')
				ELSE c.cycle_started_at END AS started,
			CASE WHEN NOT $2 THEN coalesce(
				(SELECT p.version FROM %[1]s AS p WHERE p.job = $1 AND p.cycle = c.cycles_completed - 1
					AND p.version >= coalesce((SELECT l.frontier FROM %[1]s AS l WHERE l.job = $1 AND l.cycle = c.cycles_completed
						ORDER BY l.version DESC LIMIT 1), 0)
					AND (p.hi IS NULL OR %[8]s > %[9]s) ORDER BY p.version LIMIT 1),
				(SELECT max(p.version) + 1 FROM %[1]s AS p WHERE p.job = $1 AND p.cycle = c.cycles_completed - 1), 0) END AS frontier
			FROM c),
		last AS (SELECT l.version FROM %[1]s AS l, new WHERE l.job = $1 AND l.cycle = new.cycle AND l.hi IS NOT DISTINCT FROM $3::jsonb
			AND l.rows + $6 <= %[10]d ORDER BY l.version DESC LIMIT 1),
		extended AS (UPDATE %[1]s AS m SET hi = $4::jsonb, at = now(), floor = least(m.floor, new.floor), rows = m.rows + $6,
				unverified = m.unverified + coalesce(cardinality($5::text[]), 0), frontier = new.frontier,
				first_at = CASE WHEN m.first_at IS NOT NULL THEN least(m.first_at, $8::timestamptz) END
			FROM new, last WHERE m.job = $1 AND m.cycle = new.cycle AND m.version = last.version RETURNING 1)
		INSERT INTO %[1]s (job, cycle, version, lo, hi, at, floor, rows, started, frontier, unverified, first_at)
		SELECT $1, new.cycle, new.version, $3::jsonb, $4::jsonb, now(), new.floor, $6, new.started, new.frontier,
			coalesce(cardinality($5::text[]), 0), least(now(), $8::timestamptz)
		FROM new WHERE NOT EXISTS (SELECT 1 FROM extended)
		ON CONFLICT (job, cycle, version) DO UPDATE SET lo = EXCLUDED.lo, hi = EXCLUDED.hi, at = EXCLUDED.at,
			floor = EXCLUDED.floor, rows = EXCLUDED.rows, started = EXCLUDED.started, frontier = EXCLUDED.frontier,
			unverified = EXCLUDED.unverified, first_at = EXCLUDED.first_at`,
		marks, cursors, p.rowTime(7), p.host, p.q(cfg.IDColumn), p.types[cfg.IDColumn], valid,
		p.keyOf("p.hi", keyTypes), p.keyOf("$4::jsonb", keyTypes), markRows)
	m.changed = fmt.Sprintf(`UPDATE %s SET unverified = unverified + cardinality($2::text[]),
			floor = least(floor, (SELECT min(%s) FROM %s AS h WHERE %s = ANY($2::text[]::%s[]) AND %s))
		WHERE job = $1 AND at = now()`, marks, p.rowTime(3), p.host, p.q(cfg.IDColumn), p.types[cfg.IDColumn], valid)
	m.prune = fmt.Sprintf(`DELETE FROM %s AS m USING %s AS c WHERE m.job = $1 AND c.job = $1
		AND (m.cycle < c.cycles_completed - 1 OR m.cycle > c.cycles_completed)`, marks, cursors)
	// The covering marks: the current cycle's, and the previous cycle's from the current
	// cycle's last frontier on (all of them at a cycle's start). The previous cycle covers every
	// row only if its marks start at the cycle's start.
	m.covering = fmt.Sprintf(`c AS (SELECT cycles_completed AS cyc, position AS pos FROM %[2]s WHERE job = $1),
		f AS MATERIALIZED (SELECT CASE WHEN c.pos IS NULL THEN 0 ELSE (SELECT l.frontier FROM %[1]s AS l WHERE l.job = $1 AND l.cycle = c.cyc
			ORDER BY l.version DESC LIMIT 1) END AS v FROM c),
		m AS MATERIALIZED (SELECT mk.cycle, mk.version, mk.floor, mk.rows, mk.lo, mk.hi, mk.at, mk.started, mk.unverified, mk.first_at FROM %[1]s AS mk, c, f
			WHERE mk.job = $1 AND (mk.cycle = c.cyc OR (mk.cycle = c.cyc - 1 AND mk.version >= f.v)))`, marks, cursors)
	m.summary = fmt.Sprintf(`WITH %[2]s
		SELECT EXISTS (SELECT 1 FROM %[1]s AS mk, c WHERE mk.job = $1 AND mk.cycle = c.cyc - 1 AND mk.lo IS NULL)
				AND (SELECT v FROM f) IS NOT NULL,
			coalesce((SELECT sum(rows) FROM m), 0)::bigint,
			(SELECT min(mk.started) FROM %[1]s AS mk, c WHERE mk.job = $1 AND mk.cycle = c.cyc - 1),
			coalesce(array_agg(k.floor ORDER BY k.floor), '{}'), coalesce(array_agg(k.lo::text ORDER BY k.floor), '{}'),
			coalesce(array_agg(k.hi::text ORDER BY k.floor), '{}')
		FROM (SELECT floor, lo, hi FROM m ORDER BY floor LIMIT %[3]d) AS k`,
		marks, m.covering, exactMarks+1)
	exact := func(conds ...string) string {
		return fmt.Sprintf("SELECT min(%s) FROM %s AS h WHERE %s", p.rowTime(1), p.host, strings.Join(append(conds, valid), " AND "))
	}
	upTo := func(n int) string {
		return fmt.Sprintf("%s <= %s", keys, p.keyOf(fmt.Sprintf("$%d::jsonb", n), keyTypes))
	}
	m.exactFrom = exact(upTo(2))
	m.exactAfter = exact(fmt.Sprintf("%s > %s", keys, p.keyOf("$2::jsonb", keyTypes)), upTo(3))
	m.created = exact(p.createdAt(">=", "$2::timestamptz"), p.createdAt("<", "$3::timestamptz"))
	m.count = "SELECT count(*) FROM " + p.host
	m.newRows = fmt.Sprintf("SELECT count(*) FROM %s AS h WHERE %s AND %s", p.host, p.createdAt(">", "now() - interval '1 hour'"), valid)
}

// lagMarksApply says whether Status can use the marks: only for a store of every row that
// keeps observations in its own table (see Store.Status for why).
func (s *Store[L]) lagMarksApply() bool {
	return s.cfg.Observations == ObserveInOwnTable && len(s.cfg.Filter.AnyOf) == 0
}

// queueLagMark queues the mark of commit c, after its cursor statement and its observations,
// and at a wrap the deletion of the marks no longer needed.
func (s *Store[L]) queueLagMark(batch *pgx.Batch, st *statements, c reconcile.Commit) {
	if len(c.Outcomes) == 0 {
		return
	}
	var unverified []string
	var oldest pgtype.Timestamptz // the oldest answer a row was verified on
	for i := range c.Outcomes {
		o := &c.Outcomes[i]
		if !o.Verified && !o.NotARow {
			unverified = append(unverified, o.RecordID)
		}
		if at := hosttable.VerifiedAt(o); o.Verified && at.Valid && (!oldest.Valid || at.Time.Before(oldest.Time)) {
			oldest = at
		}
	}
	hi := c.Next
	if c.Wrap {
		hi = c.Cursor.End
	}
	batch.Queue(genericPlans)
	batch.Queue(st.lagMarks.insert, c.Job, c.Wrap, nullIfEmpty(c.Cursor.Position), nullIfEmpty(hi), unverified, len(c.Outcomes), s.lagJobs(c.Job), oldest)
	batch.Queue(restorePlans)
	if c.Wrap {
		batch.Queue(st.lagMarks.prune, c.Job)
	}
}

// genericPlans makes the transaction plan its statements once (a generic plan), with index
// lookups rather than scans, until restorePlans restores the settings it found. The server
// would otherwise plan the mark's statement anew at every commit, its estimate of a generic
// plan being higher than the custom ones': 0.6 ms of planning for 0.1 ms of execution, with
// the same plan. Every table it reads it reads by key, but it is first planned on empty
// tables, where a scan looks cheaper and a generic plan would keep it.
const (
	genericPlans = `SELECT set_config('reconcile.plan_cache_mode', current_setting('plan_cache_mode'), true),
		set_config('reconcile.enable_seqscan', current_setting('enable_seqscan'), true),
		set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true)`
	restorePlans = `SELECT set_config('plan_cache_mode', current_setting('reconcile.plan_cache_mode'), true),
		set_config('enable_seqscan', current_setting('reconcile.enable_seqscan'), true)`
)

// fixLagMark runs in the transaction of commit c, once its batch is read, if c verified rows
// that changed since their read (changed, their ids): the commit left them unrecorded, so
// the mark it wrote must not count them verified. Rare, it costs a round trip then.
func (s *Store[L]) fixLagMark(ctx context.Context, tx pgx.Tx, st *statements, c reconcile.Commit, changed []string) error {
	var ids []string
	for _, o := range c.Outcomes {
		if o.Verified && !o.NotARow && slices.Contains(changed, o.RecordID) {
			ids = append(ids, o.RecordID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, st.lagMarks.changed, c.Job, ids, s.lagJobs(c.Job)); err != nil {
		return fmt.Errorf("lag mark of rows changed since their read: %w", err)
	}
	return nil
}

// lagJobs are the jobs whose verifications count for job's lag.
func (s *Store[L]) lagJobs(job string) []string { return append([]string{job}, s.cfg.LagJobs...) }

// lagSummary is what the marks say of a job.
type lagSummary struct {
	ready bool               // the marks cover every row but those created since start
	rows  int64              // rows read by the covering marks
	start pgtype.Timestamptz // the previous cycle's start, -infinity if unknown
	// floors, los and his are the exactMarks+1 covering marks with the lowest floors, lowest
	// first: their floors and key ranges.
	floors   []time.Time
	los, his []*string
}

// queueLagSummary queues the read of the marks of job.
func (s *Store[L]) queueLagSummary(b *pgx.Batch, st *statements, job string, sum *lagSummary) {
	b.Queue(st.lagMarks.summary, job).QueryRow(func(r pgx.Row) error {
		return r.Scan(&sum.ready, &sum.rows, &sum.start, &sum.floors, &sum.los, &sum.his)
	})
}

// oldestFromMarks returns the oldest coalesce(last verified, created_at) of the job's rows
// (see lagMarkSQL), nil if no row has one. It reads the marks with the lowest floors exactly,
// lowest first, until the next floor is no earlier than the oldest time found (up to
// exactMarks of them, the next floor then standing in), and then the rows created since the
// previous cycle started and before that time.
func (s *Store[L]) oldestFromMarks(ctx context.Context, st *statements, job string, sum lagSummary) (*time.Time, error) {
	jobs := s.lagJobs(job)
	var oldest *time.Time
	read := func(q string, args ...any) (*time.Time, error) {
		var t *time.Time
		if err := s.db.QueryRow(ctx, q, args...).Scan(&t); err != nil {
			return nil, s.cfg.Tables.wrap("status of job "+job, err)
		}
		return t, nil
	}
	for i, floor := range sum.floors {
		if oldest != nil && !floor.Before(*oldest) {
			break // every other row is at least floor old
		}
		if i == exactMarks {
			oldest = &sum.floors[i] // the bound: a lag too large, never too small
			break
		}
		var t *time.Time
		var err error
		switch {
		case sum.his[i] == nil:
			// A mark with no high-water mark (a Source without one): its floor stands.
			t = &sum.floors[i]
		case sum.los[i] == nil:
			t, err = read(st.lagMarks.exactFrom, jobs, *sum.his[i])
		default:
			t, err = read(st.lagMarks.exactAfter, jobs, *sum.los[i], *sum.his[i])
		}
		if err != nil {
			return nil, err
		}
		oldest = earliest(oldest, t)
	}
	// Rows created since the previous cycle started may be older; a row created later than
	// the oldest time found cannot be.
	upper := pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
	if oldest != nil {
		upper = pgtype.Timestamptz{Time: *oldest, Valid: true}
	}
	created, err := read(st.lagMarks.created, jobs, sum.start, upper)
	if err != nil {
		return nil, err
	}
	return earliest(oldest, created), nil
}

func earliest(a, b *time.Time) *time.Time {
	switch {
	case a == nil:
		return b
	case b == nil || a.Before(*b):
		return a
	}
	return b
}
