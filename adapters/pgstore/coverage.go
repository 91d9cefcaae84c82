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
// coverage chart. Like Status, it does not scan the host table. It reads the lag marks Status
// reads (lagmarks.go): one cycle's worth, each up to 2,048 rows, a mark's verified rows counted
// at the commit of its first batch and its other rows (unverifiable, in flight, invalid) at its
// floor, the earliest time any of them kept. Of the previous cycle's mark that reaches back
// behind the cursor, it counts the rows now past the cursor (an index range scan of at most one
// mark's rows). Rows created since the previous cycle started, after the first commit of the
// mark covering their key or past every mark, which no mark has read, count at their creation:
// an index range scan on CreatedAtColumn, sorted with the marks by key. The cost grows with
// the marks and with the rows created over the last two cycles, not with the table (a few
// milliseconds at 10 million rows; README, Performance). The open findings are counted from
// the findings open now and those resolved within the days asked for, by index (migration
// 009).
//
// The counts are therefore Estimated: a row verified again since its mark (by a lane, or a
// LagJobs job) counts at its mark's time, older than it is, never younger; so does a row its
// batch did not verify whose own time is later than the mark's floor. A row deleted since its
// mark still counts until the sweep reads past it; a row inserted into a mark's key range while
// the mark's batches were being committed may count twice (seconds, for a sweep committing
// batch after batch), one inserted between the read and the commit of a mark's first batch not
// at all, until the next read. Like Status, it takes a row to be inserted no earlier than its
// created_at says. Marks written before migration 009 count all their rows at their floor.
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
	if marks {
		s.queueLagSummary(b, sql, job, &sum)
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

	// Bucket i holds the times in (Now - Ages[i], Now - Ages[i-1]]: width_bucket counts the
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
	b.Queue(sql.lagMarks.coverMarks, job, thresholds).Query(add)
	b.Queue(sql.lagMarks.coverNew, job, thresholds, sum.start).Query(add)
	if err := s.db.SendBatch(ctx, b).Close(); err != nil {
		return reconcile.Coverage{}, s.cfg.Tables.wrap("coverage of job "+job, err)
	}
	return cov, nil
}

// coverageStatements: Coverage's reads of the covering marks (lagMarkSQL.covering), $1 the job
// and $2 the buckets' thresholds, ascending: each returns (width_bucket, rows) pairs.
func (p *sqlParts) coverageStatements(st *statements) {
	m := &st.lagMarks
	keyTypes := st.keyset.keyTypes
	keys := "(" + strings.Join(p.keys, ", ") + ")"
	// A row no mark has read, counted by coverNew: valid, and created since the commit of the
	// first batch of the mark covering its key.
	unread := func(since string) string {
		return fmt.Sprintf("(%s IS NULL AND %s)", p.invalid, p.createdAt(">=", since))
	}
	// A mark's verified rows count at its first batch's commit, the others at its floor; a mark
	// written before migration 009 knows no more than its floor. The previous cycle's first
	// covering mark may reach back behind the cursor, over rows the current cycle's marks
	// count: of its rows, those now past the cursor are counted (an index range scan of up to
	// one mark's rows), as many of them unverified as the mark had.
	m.coverMarks = fmt.Sprintf(`WITH %[1]s,
		n AS (SELECT m.first_at, m.floor, m.unverified, CASE WHEN m.cycle = c.cyc - 1 AND m.version = f.v AND c.pos IS NOT NULL
				THEN (SELECT count(*) FROM %[2]s AS h WHERE %[3]s > %[4]s AND (m.hi IS NULL OR %[3]s <= %[5]s) AND %[6]s IS NOT TRUE)
				ELSE m.rows END AS rows
			FROM m, c, f),
		v AS (SELECT n.first_at, n.floor, n.rows, least(coalesce(n.unverified, n.rows), n.rows) AS unverified FROM n)
		SELECT width_bucket(x.t, $2::timestamptz[]), sum(x.n)::bigint
		FROM v, LATERAL (VALUES (v.first_at, v.rows - v.unverified), (v.floor, v.unverified)) AS x(t, n)
		WHERE x.n > 0 GROUP BY 1`,
		m.covering, p.host, keys, p.keyOf("c.pos", keyTypes), p.keyOf("m.hi", keyTypes), unread("coalesce(m.first_at, m.at)"))
	// The rows created since $3, the previous cycle's start, after the first commit of the mark
	// covering their key (the one with the lowest hi at or past it; a NULL hi reaches to the
	// end), or past every mark: sorted with the marks by key, descending, each row follows its
	// mark. Rows created before $3 were read by the marks, as Status assumes.
	his, order := make([]string, len(keyTypes)), make([]string, len(keyTypes))
	for i, t := range keyTypes {
		his[i] = fmt.Sprintf("(m.hi ->> %d)::%s", i, t)
		order[i] = fmt.Sprintf("k%d DESC", i)
	}
	m.coverNew = fmt.Sprintf(`WITH %[1]s,
		u AS (SELECT %[2]s, coalesce(m.first_at, m.at) AS since, NULL::timestamptz AS created, 0 AS r FROM m
			UNION ALL
			SELECT %[3]s, NULL, %[4]s, 1 FROM %[5]s AS h WHERE %[6]s AND %[7]s IS NULL),
		g AS (SELECT created, since, count(since) OVER (ORDER BY %[8]s, r ROWS UNBOUNDED PRECEDING) AS mark FROM u),
		o AS (SELECT created, max(since) OVER (PARTITION BY mark) AS since FROM g)
		SELECT width_bucket(created, $2::timestamptz[]), count(*) FROM o
		WHERE created IS NOT NULL AND (since IS NULL OR created >= since) GROUP BY 1`,
		m.covering, columnsAs(his), columnsAs(p.keys), p.ts(p.cfg.CreatedAtColumn), p.host,
		p.createdAt(">=", "$3::timestamptz"), p.invalid, strings.Join(order, ", "))
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
// and those resolved since the first time, by index: each adds one from the first time at or
// after its detection and takes it away from the first at or after its resolution.
func openSamplesSQL(t Tables) string {
	findings := t.table("findings")
	return `WITH w AS (SELECT now() - ($2::int - 1) * interval '24 hours' AS t0),
		f AS (SELECT detected_at AS d, resolved_at AS r FROM ` + findings + ` WHERE job = $1 AND resolved_at IS NULL
			UNION ALL
			SELECT detected_at, resolved_at FROM ` + findings + `, w WHERE job = $1 AND resolved_at > w.t0),
		e AS (SELECT x.n, (extract(epoch FROM x.t - w.t0) * 1000000)::bigint AS us FROM f, w,
			LATERAL (VALUES (f.d, 1), (f.r, -1)) AS x(t, n) WHERE x.t IS NOT NULL),
		d AS (SELECT greatest(0, (us + 86399999999) / 86400000000) AS k, sum(n) AS n FROM e GROUP BY 1)
		SELECT w.t0 + s.k * interval '24 hours', (sum(coalesce(d.n, 0)) OVER (ORDER BY s.k))::int
		FROM w, generate_series(0, $2::int - 1) AS s(k) LEFT JOIN d USING (k) ORDER BY s.k`
}
