package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
)

var _ reconcile.CoverageReader = (*Store[string])(nil)

// Coverage reads how long the job's rows have gone unverified, bucketed by q.Ages, and its open
// findings at each of the last q.Days days (reconcile.CoverageReader), for the console's
// coverage chart. Like Status, it does not scan the host table: it reads the lag marks Status
// reads (lagmarks.go), counting a mark's verified rows at the commit of its first batch (or at
// the oldest answer its batches verified a row on, if older) and its
// other rows (unverifiable, in flight, invalid) at its floor, the earliest time any of them
// kept (migration 009 records how many); of the previous cycle's mark that reaches back behind
// the cursor, only the rows now past the cursor. Rows no mark has read — created since the
// previous cycle started, after the first commit of the mark covering their key or past every
// mark — count at their creation.
//
// Cost: two round trips; the marks (one cycle's worth, about 5,000 at 10 million rows, sorted
// by key with the rows created over the last two cycles, found by an index range scan on
// CreatedAtColumn), an index range scan of at most one mark's rows, and the findings open now
// or resolved within q.Days, from their indexes alone. About 30 ms at 10 million rows, against
// seconds for a scan (README, Performance); it grows with the table's marks and with the rows
// created over the last two cycles, each read and sorted (about 1 µs a row: 285 ms with
// 300,000 of them), not with the table's other rows.
//
// Estimated is set: a row verified again since its mark (by a lane, or a LagJobs job) counts
// at the mark's time, older than it is, never younger; so does a row its batch did not verify
// whose own time is later than the mark's floor. A row deleted since its mark still counts
// until the sweep reads past it; one inserted into a mark's key range while the mark's batches
// were being committed may count twice, one inserted between the read and the commit of a
// mark's first batch not at all, until the next read; a batch committed between the two round
// trips may be counted twice or not at all. Like Status, it takes a row to be inserted no
// earlier than its created_at says. Marks written before migration 009 count all their rows
// at their floor, and the rows inserted into their ranges since the commit before their first
// batch at their creation, some of them twice.
//
// Where Status scans the host table — a store with a Filter, or with ObserveInHostColumns, and
// a job not yet on the marks (its first cycle with them under way, or sharded) — Coverage has
// Rows nil and Unknown saying why, and still reads the open findings: only a full scan could
// bucket those rows, and Coverage is read on page views.
func (s *Store[L]) Coverage(ctx context.Context, job string, q reconcile.CoverageQuery) (reconcile.Coverage, error) {
	if err := q.Validate(); err != nil {
		return reconcile.Coverage{}, fmt.Errorf("pgstore: coverage of job %s: %w", job, err)
	}
	sql, err := s.statements(ctx)
	if err != nil {
		return reconcile.Coverage{}, err
	}
	cov := reconcile.Coverage{Job: job, Open: make([]reconcile.OpenSample, 0, q.Days)}
	b := &pgx.Batch{}
	b.Queue("SELECT now()").QueryRow(func(r pgx.Row) error { return r.Scan(&cov.Now) })
	marks := s.lagMarksApply()
	var sum lagSummary
	var fr frontierMark
	if marks {
		s.queueLagSummary(b, sql, job, &sum)
		b.Queue(sql.lagMarks.coverFrontier, job).Query(func(rows pgx.Rows) error {
			_, err := pgx.ForEachRow(rows, []any{&fr.cycle, &fr.version, &fr.pos, &fr.hi, &fr.since, &fr.floor, &fr.unverified}, func() error {
				fr.found = true
				return nil
			})
			return err
		})
	}
	if q.Days > 0 {
		b.Queue(s.own.openSamples, job, q.Days).Query(func(rows pgx.Rows) error {
			var o reconcile.OpenSample
			_, err := pgx.ForEachRow(rows, []any{&o.At, &o.Open}, func() error {
				cov.Open = append(cov.Open, o)
				return nil
			})
			return err
		})
	}
	if err := s.db.SendBatch(ctx, b).Close(); err != nil {
		return reconcile.Coverage{}, s.cfg.Tables.wrap("coverage of job "+job, err)
	}
	switch {
	case len(s.cfg.Filter.AnyOf) > 0:
		cov.Unknown = "This store's rows are a Filter's tier, which rows enter and leave unrecorded: only a full scan could bucket them by age."
		return cov, nil
	case s.cfg.Observations != ObserveInOwnTable:
		cov.Unknown = "This store keeps verifications in the host table's columns, which the sweep's lag marks cannot vouch for: only a full scan could bucket its rows by age."
		return cov, nil
	case !sum.ready:
		cov.Unknown = "Available once the job completes a sweep cycle with lag marks (after upgrading, the cycle under way and the next; never for a sharded job)."
		return cov, nil
	}

	// Bucket i holds the times in [Now - Ages[i], Now - Ages[i-1]): width_bucket counts the
	// thresholds, ascending, that a time is at or after.
	thresholds := make([]time.Time, len(q.Ages))
	for i, a := range q.Ages {
		thresholds[len(q.Ages)-1-i] = cov.Now.Add(-a)
	}
	cov.Rows, cov.Estimated = make([]int64, len(q.Ages)+1), true
	add := func(rows pgx.Rows) error {
		var wb int
		var n int64
		_, err := pgx.ForEachRow(rows, []any{&wb, &n}, func() error {
			cov.Rows[len(q.Ages)-wb] += n
			return nil
		})
		return err
	}
	b = &pgx.Batch{}
	var excludeCycle, excludeVersion *int64
	var beyond int64
	if fr.found {
		excludeCycle, excludeVersion = &fr.cycle, &fr.version
		// Its bounds as parameters, so that the planner sees a range of one mark's rows.
		count := func(r pgx.Row) error { return r.Scan(&beyond) }
		if fr.hi == nil {
			b.Queue(sql.lagMarks.coverFrontierToEnd, fr.pos, fr.since).QueryRow(count)
		} else {
			b.Queue(sql.lagMarks.coverFrontierRows, fr.pos, fr.since, fr.hi).QueryRow(count)
		}
	}
	b.Queue(sql.lagMarks.coverMarks, job, thresholds, excludeCycle, excludeVersion).Query(add)
	b.Queue(sql.lagMarks.coverNew, job, thresholds, sum.start).Query(add)
	if err := s.db.SendBatch(ctx, b).Close(); err != nil {
		return reconcile.Coverage{}, s.cfg.Tables.wrap("coverage of job "+job, err)
	}
	if fr.found {
		unverified := min(fr.unverified, beyond)
		cov.Rows[q.Bucket(cov.Now.Sub(fr.floor))] += unverified
		cov.Rows[q.Bucket(cov.Now.Sub(fr.since))] += beyond - unverified
	}
	return cov, nil
}

// frontierMark is the previous cycle's first covering mark when it reaches back behind the
// cursor, over rows the current cycle's marks count.
type frontierMark struct {
	found          bool
	cycle, version int64
	pos, hi        *string // the cursor's position and the mark's hi, as JSON; hi nil: to the end
	since, floor   time.Time
	unverified     int64
}

// coverageStatements: Coverage's reads of the covering marks (lagMarkSQL.covering), $1 the job
// and $2 the buckets' thresholds, ascending, which return (width_bucket, rows) pairs; and of the
// previous cycle's mark that reaches back behind the cursor.
func (p *sqlParts) coverageStatements(st *statements) {
	m := &st.lagMarks
	keyTypes := st.keyTypes
	keys := "(" + strings.Join(p.keys, ", ") + ")"
	// s is the covering marks with since, the commit of the mark's first batch: the rows in its
	// range created since then no batch of it read. A mark written before migration 009 knows
	// only its last commit; the commit before its first batch stands in (the previous mark's
	// last, else the cycle's start), so that a row inserted behind its batches is counted, if
	// perhaps twice, rather than missed.
	covering := m.covering + `,
		s AS (SELECT m.*, coalesce(m.first_at, lag(m.at) OVER (PARTITION BY m.cycle ORDER BY m.version), m.started) AS since FROM m)`
	// The previous cycle's first covering mark, if it reaches back behind the cursor: its cycle
	// and version, the cursor's position, its hi, since, its floor and its rows not verified
	// (all of them for a mark written before migration 009).
	m.coverFrontier = fmt.Sprintf(`WITH %s
		SELECT s.cycle, s.version, c.pos::text, s.hi::text, s.since, s.floor, coalesce(s.unverified, s.rows)
		FROM s, c, f WHERE s.cycle = c.cyc - 1 AND s.version = f.v AND c.pos IS NOT NULL`, covering)
	// Its rows now past the cursor ($1) and up to its hi ($3, or to the end), that coverNew
	// does not count as unread: invalid, or created before its since ($2).
	read := fmt.Sprintf("(%s IS NULL AND %s) IS NOT TRUE", p.invalid, p.createdAt(">=", "$2::timestamptz"))
	past := fmt.Sprintf("%s > %s", keys, p.keyOf("$1::jsonb", keyTypes))
	m.coverFrontierToEnd = fmt.Sprintf("SELECT count(*) FROM %s AS h WHERE %s AND %s", p.host, past, read)
	m.coverFrontierRows = fmt.Sprintf("SELECT count(*) FROM %s AS h WHERE %s AND %s <= %s AND %s", p.host, past, keys, p.keyOf("$3::jsonb", keyTypes), read)
	// The other marks: the verified rows at the commit of the mark's first batch, the others
	// at its floor; a mark written before migration 009 knows no more than its floor. $3 and
	// $4 are the cycle and version of the frontier mark, counted apart.
	m.coverMarks = fmt.Sprintf(`WITH %s,
		v AS (SELECT m.first_at, m.floor, m.rows, coalesce(m.unverified, m.rows) AS unverified FROM m
			WHERE (m.cycle, m.version) IS DISTINCT FROM ($3::bigint, $4::bigint))
		SELECT width_bucket(x.t, $2::timestamptz[]), sum(x.n)::bigint
		FROM v, LATERAL (VALUES (v.first_at, v.rows - v.unverified), (v.floor, v.unverified)) AS x(t, n)
		WHERE x.n > 0 GROUP BY 1`, m.covering)
	// The rows created since $3, the previous cycle's start, at or after the since of the mark
	// covering their key (the one with the lowest hi at or past it; a NULL hi reaches to the
	// end), or past every mark: sorted with the marks by key, descending, each row follows its
	// mark, numbered in that order (n, the marks alone, numbered alike, gives its since: one
	// sort of the rows, not one more to spread each mark's since over its rows). Rows created
	// before $3 were read by the marks, as Status assumes.
	his, order, hisOrder := make([]string, len(keyTypes)), make([]string, len(keyTypes)), make([]string, len(keyTypes))
	for i := range keyTypes {
		his[i] = p.keyValue("m.hi", keyTypes, i)
		order[i] = fmt.Sprintf("k%d DESC", i)
		hisOrder[i] = his[i] + " DESC"
	}
	m.coverNew = fmt.Sprintf(`WITH %[1]s,
		u AS (SELECT %[2]s, m.cycle, m.version, NULL::timestamptz AS created, 0 AS r FROM s AS m
			UNION ALL
			SELECT %[3]s, NULL, NULL, %[4]s, 1 FROM %[5]s AS h WHERE %[6]s AND %[7]s IS NULL),
		g AS (SELECT created, count(cycle) OVER (ORDER BY %[8]s, r, cycle, version ROWS UNBOUNDED PRECEDING) AS mark FROM u),
		n AS (SELECT m.since, row_number() OVER (ORDER BY %[9]s, m.cycle, m.version) AS mark FROM s AS m)
		SELECT width_bucket(g.created, $2::timestamptz[]), count(*) FROM g LEFT JOIN n USING (mark)
		WHERE g.created IS NOT NULL AND (n.since IS NULL OR g.created >= n.since) GROUP BY 1`,
		covering, columnsAs(his), columnsAs(p.keys), p.ts(p.cfg.CreatedAtColumn), p.host,
		p.createdAt(">=", "$3::timestamptz"), p.invalid, strings.Join(order, ", "), strings.Join(hisOrder, ", "))
}

// columnsAs names exprs k0, k1, ...
func columnsAs(exprs []string) string {
	out := make([]string, len(exprs))
	for i, e := range exprs {
		out[i] = fmt.Sprintf("%s AS k%d", e, i)
	}
	return strings.Join(out, ", ")
}

// openSamplesSQL counts, at each of $2 times a day apart ending now, the findings of job $1
// open then (detected at or before, not resolved by then). It reads only the findings open now
// and those resolved since the first time, from their indexes alone (findings_open_detected,
// findings_resolved): each adds one from the first time at or after its detection (date_bin's
// bin of the microsecond before, plus a day), and takes it away from the first at or after its
// resolution.
func openSamplesSQL(t Tables) string {
	findings := t.table("findings")
	return `WITH w AS (SELECT now() - ($2::int - 1) * interval '24 hours' AS t0),
		f AS (SELECT detected_at AS d, NULL::timestamptz AS r FROM ` + findings + ` WHERE job = $1 AND resolved_at IS NULL
			UNION ALL
			SELECT detected_at, resolved_at FROM ` + findings + `, w WHERE job = $1 AND resolved_at > w.t0),
		d AS (SELECT greatest(w.t0, date_bin('24 hours', x.t - interval '1 microsecond', w.t0) + interval '24 hours') AS at, sum(x.n) AS n
			FROM f, w, LATERAL (VALUES (f.d, 1), (f.r, -1)) AS x(t, n) WHERE x.t IS NOT NULL GROUP BY 1)
		SELECT s.at, (sum(coalesce(d.n, 0)) OVER (ORDER BY s.at))::int
		FROM (SELECT w.t0 + k * interval '24 hours' AS at FROM w, generate_series(0, $2::int - 1) AS k) AS s LEFT JOIN d USING (at)
		ORDER BY s.at`
}
