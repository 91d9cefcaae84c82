package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// statusResult is the status subcommand's JSON line.
type statusResult struct {
	Rows  int `json:"rows"`
	Batch int `json:"batch"`
	// StatusMS1M and StatusMS10M are the median latency of Store.Status over Runs calls at 1
	// million rows and at -rows (named for the default of 10 million); StatusMS1M is -1 when
	// -rows is under a million.
	StatusMS1M  float64 `json:"status_ms_1m"`
	StatusMS10M float64 `json:"status_ms_10m"`
	Runs        int     `json:"runs"`
	// FullScanMS is the scan of the host table joined with the observations, the lag Status
	// read before lag marks, at -rows; FullScanMS1M at a million.
	FullScanMS   float64 `json:"full_scan_ms"`
	FullScanMS1M float64 `json:"full_scan_ms_1m"`
	// LagSeconds and FullScanLagSeconds are the two lags at -rows; Agree reports that both
	// name the same oldest time, to the microsecond, at every size measured.
	LagSeconds         float64 `json:"lag_seconds"`
	FullScanLagSeconds float64 `json:"full_scan_lag_seconds"`
	Agree              bool    `json:"agree"`
	StatusRows         int64   `json:"status_rows"`
	BuildSeconds       float64 `json:"build_seconds"`
	// CoverageMS1M and CoverageMS10M are the median latency of Store.Coverage (coverageQuery)
	// at a million rows and at -rows, over the lag marks and 30,000 findings; the full-scan
	// figures bucket every row joined with its last verification, as Coverage would without
	// marks. CoverageRows and CoverageFullScanRows are the two bucketings at -rows, and
	// CoverageOlderNeverYounger reports that at every size Coverage counted every row the scan
	// did, each at its age or older.
	CoverageMS1M              float64 `json:"coverage_ms_1m"`
	CoverageMS10M             float64 `json:"coverage_ms_10m"`
	CoverageFullScanMS1M      float64 `json:"coverage_full_scan_ms_1m"`
	CoverageFullScanMS        float64 `json:"coverage_full_scan_ms"`
	CoverageRows              []int64 `json:"coverage_rows"`
	CoverageFullScanRows      []int64 `json:"coverage_full_scan_rows"`
	CoverageOlderNeverYounger bool    `json:"coverage_older_never_younger"`
}

// coverageQuery is what the console's coverage chart asks for.
var coverageQuery = reconcile.CoverageQuery{
	Ages: []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour, 72 * time.Hour, 7 * 24 * time.Hour},
	Days: 14,
}

func statusCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	rows := fs.Int("rows", 10_000_000, "payments rows of the largest table (also measured at 1,000,000 when larger)")
	batch := fs.Int("batch", 200, "the sweep's batch size: rows per lag mark")
	runs := fs.Int("runs", 7, "Status calls timed per size (the median is reported)")
	schema := fs.String("schema", "bench_status", "schema to drop, recreate and work in")
	keep := fs.Bool("keep", false, "keep the schema, with the largest table, after the run")
	if err := parseFlags(fs, args, stderr,
		"usage: go run ./tools/bench status [flags]",
		"Builds a payments table (UNLOGGED, one INSERT ... SELECT generate_series) as a sweep leaves it",
		"halfway through its second cycle — every row verified batch by batch, a few rows unverifiable",
		"since the first cycle, rows created since that are not yet read, one with an impossible time —",
		"with the lag marks the store's commits record, and times pgstore.Store.Status against the",
		"full scan it replaced, checking that both find the same lag. Database: $DATABASE_URL.",
	); err != nil {
		return err
	}
	if *rows < 10_000 || *batch <= 0 || *runs <= 0 {
		return fmt.Errorf("bench: status: -rows must be at least 10000, -batch and -runs positive")
	}
	pool, drop, err := benchSchema(ctx, *schema, stderr)
	if err != nil {
		return err
	}
	defer pool.Close()
	if !*keep {
		defer drop()
	}

	res := statusResult{Rows: *rows, Batch: *batch, Runs: *runs, StatusMS1M: -1, FullScanMS1M: -1, Agree: true,
		CoverageMS1M: -1, CoverageFullScanMS1M: -1, CoverageOlderNeverYounger: true}
	sizes := []int{*rows}
	if *rows > 1_000_000 {
		sizes = []int{1_000_000, *rows}
	}
	for _, n := range sizes {
		m, err := measureStatus(ctx, pool, *schema, n, *batch, *runs, stderr)
		if err != nil {
			return err
		}
		res.Agree = res.Agree && m.agree
		res.CoverageOlderNeverYounger = res.CoverageOlderNeverYounger && m.coverageOK
		res.BuildSeconds += m.build.Seconds()
		if n == 1_000_000 {
			res.StatusMS1M, res.FullScanMS1M = m.statusMS, m.scanMS
			res.CoverageMS1M, res.CoverageFullScanMS1M = m.coverageMS, m.coverageScanMS
		}
		if n == *rows {
			res.StatusMS10M, res.FullScanMS = m.statusMS, m.scanMS
			res.LagSeconds, res.FullScanLagSeconds, res.StatusRows = m.lag.Seconds(), m.scanLag.Seconds(), m.statusRows
			res.CoverageMS10M, res.CoverageFullScanMS = m.coverageMS, m.coverageScanMS
			res.CoverageRows, res.CoverageFullScanRows = m.coverage, m.coverageScan
		}
	}
	if err := emit(stdout, res); err != nil {
		return err
	}
	if !res.Agree {
		return fmt.Errorf("bench: status: Status and the full scan disagree on the lag")
	}
	if !res.CoverageOlderNeverYounger {
		return fmt.Errorf("bench: status: Coverage counts a row younger than the full scan finds it, or misses one")
	}
	return nil
}

type statusMeasure struct {
	statusMS, scanMS float64
	lag, scanLag     time.Duration
	statusRows       int64
	agree            bool
	build            time.Duration

	coverageMS, coverageScanMS float64
	coverage, coverageScan     []int64
	coverageOK                 bool
}

// measureStatus builds the state of n rows in schema (dropping what a smaller run left) and
// times Status and the full scan.
func measureStatus(ctx context.Context, pool *pgxpool.Pool, schema string, n, batch, runs int, stderr io.Writer) (statusMeasure, error) {
	var m statusMeasure
	start := time.Now()
	store, err := buildStatusState(ctx, pool, schema, n, batch, stderr)
	if err != nil {
		return m, err
	}
	m.build = time.Since(start)
	fmt.Fprintf(stderr, "status: %d rows built in %s\n", n, m.build.Round(time.Second))

	var times []time.Duration
	var oldest time.Time
	for range runs + 1 {
		t0 := time.Now()
		st, err := store.Status(ctx, "sweep")
		if err != nil {
			return m, fmt.Errorf("bench: status: %w", err)
		}
		times = append(times, time.Since(t0))
		m.lag, m.statusRows, oldest = st.Lag, st.Rows, st.Now.Add(-st.Lag)
	}
	times = times[1:] // the first call prepares the statements
	slices.Sort(times)
	m.statusMS = ms(times[len(times)/2])

	// The scan Status did before lag marks: every row joined with its last verification.
	t0 := time.Now()
	var scanNow, scanOldest time.Time
	err = pool.QueryRow(ctx, fmt.Sprintf(`SELECT now(), min(coalesce(o.verified_at, p.created_at))
		FROM %[1]s.payments AS p LEFT JOIN %[1]s.reconcile_observations AS o ON o.job = 'sweep' AND o.record_id = p.id::text
		WHERE p.created_at >= '1900-01-01'`, pgx.Identifier{schema}.Sanitize())).Scan(&scanNow, &scanOldest)
	if err != nil {
		return m, fmt.Errorf("bench: status: full scan: %w", err)
	}
	m.scanMS = ms(time.Since(t0))
	m.scanLag = scanNow.Sub(scanOldest)
	m.agree = oldest.Equal(scanOldest)
	fmt.Fprintf(stderr, "status: %d rows: Status %.1f ms (lag %s, oldest %s), full scan %.0f ms (oldest %s)\n",
		n, m.statusMS, m.lag.Round(time.Second), oldest.Format(time.RFC3339Nano), m.scanMS, scanOldest.Format(time.RFC3339Nano))
	return m, measureCoverage(ctx, pool, store, schema, runs, &m, stderr)
}

// measureCoverage adds 30,000 findings of the last 120 days, a third of them open, and times
// Coverage and the full scan that buckets every row.
func measureCoverage(ctx context.Context, pool *pgxpool.Pool, store *pgstore.Store[string], schema string, runs int, m *statusMeasure, stderr io.Writer) error {
	s := pgx.Identifier{schema}.Sanitize()
	if _, err := pool.Exec(ctx, `INSERT INTO `+s+`.reconcile_findings (job, record_id, kind, local_state, detected_at, resolved_at, resolution)
		SELECT 'sweep', i::text, 'paid_locally_not_externally', 'paid', d, r, CASE WHEN r IS NOT NULL THEN 'fixed' END
		FROM generate_series(1, 30000) i,
			LATERAL (SELECT now() - (i % 120) * interval '1 day' - interval '1 hour' AS d) d,
			LATERAL (SELECT CASE WHEN i % 3 <> 0 THEN least(now(), d + (i % 9) * interval '1 day') END AS r) r;
		ANALYZE `+s+`.reconcile_findings`); err != nil {
		return fmt.Errorf("bench: status: findings: %w", err)
	}
	var times []time.Duration
	var cov reconcile.Coverage
	for range runs + 1 {
		t0 := time.Now()
		var err error
		if cov, err = store.Coverage(ctx, "sweep", coverageQuery); err != nil {
			return fmt.Errorf("bench: status: %w", err)
		}
		times = append(times, time.Since(t0))
	}
	if cov.Rows == nil {
		return fmt.Errorf("bench: status: Coverage: %s", cov.Unknown)
	}
	times = times[1:] // the first call prepares the statements
	slices.Sort(times)
	m.coverageMS, m.coverage = ms(times[len(times)/2]), cov.Rows

	// The scan Coverage would need without marks, at Coverage's time.
	ages := coverageQuery.Ages
	thresholds := make([]time.Time, len(ages))
	for i, a := range ages {
		thresholds[len(ages)-1-i] = cov.Now.Add(-a)
	}
	t0 := time.Now()
	rows, err := pool.Query(ctx, fmt.Sprintf(`SELECT width_bucket(coalesce(o.verified_at, p.created_at), $1::timestamptz[]), count(*)
		FROM %[1]s.payments AS p LEFT JOIN %[1]s.reconcile_observations AS o ON o.job = 'sweep' AND o.record_id = p.id::text
		WHERE p.created_at >= '1900-01-01' GROUP BY 1`, s), thresholds)
	if err != nil {
		return fmt.Errorf("bench: status: coverage scan: %w", err)
	}
	m.coverageScan = make([]int64, len(ages)+1)
	var wb int
	var count int64
	if _, err := pgx.ForEachRow(rows, []any{&wb, &count}, func() error {
		m.coverageScan[len(ages)-wb] += count
		return nil
	}); err != nil {
		return fmt.Errorf("bench: status: coverage scan: %w", err)
	}
	m.coverageScanMS = ms(time.Since(t0))
	m.coverageOK = olderNeverYounger(m.coverage, m.coverageScan)
	fmt.Fprintf(stderr, "status: coverage: %.1f ms %v (open %v), full scan %.0f ms %v\n",
		m.coverageMS, m.coverage, cov.Open, m.coverageScanMS, m.coverageScan)
	return nil
}

// olderNeverYounger reports whether est counts every row of exact, each at its age or older:
// from the oldest bucket down, est holds at least as many rows as exact.
func olderNeverYounger(est, exact []int64) bool {
	var e, x int64
	for i := len(exact) - 1; i >= 0; i-- {
		e, x = e+est[i], x+exact[i]
		if e < x {
			return false
		}
	}
	return true
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// buildStatusState makes schema hold a payments table of n rows as a sweep of batch rows leaves
// it halfway through its second cycle, with the lag marks its commits would have recorded, and
// returns a store over it. Times, relative to now: the first cycle ran from 48 to 24 hours ago,
// the second started 24 hours ago and has read half the rows. Rows are created over the 400 days
// before the first cycle, but for the last 1,000, created in the last 20 hours and not yet read.
// Every 99,991st row the second cycle read was unverifiable: it keeps the first cycle's time.
func buildStatusState(ctx context.Context, pool *pgxpool.Pool, schema string, n, batch int, stderr io.Writer) (*pgstore.Store[string], error) {
	s := pgx.Identifier{schema}.Sanitize()
	for _, q := range []string{"DROP SCHEMA " + s + " CASCADE", "CREATE SCHEMA " + s} {
		if _, err := pool.Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("bench: status: %s: %w", q, err)
		}
	}
	// Every time is relative to one instant, so that the statements agree however long they take.
	var t0 time.Time
	if err := pool.QueryRow(ctx, "SELECT now()").Scan(&t0); err != nil {
		return nil, fmt.Errorf("bench: status: %w", err)
	}
	store, err := pgstore.New(pool, pgstore.Config{Table: "payments", Schema: schema})
	if err != nil {
		return nil, err
	}
	if err := pgstore.Migrate(ctx, pool, store.Tables()); err != nil {
		return nil, err
	}
	fresh := 1000
	end := n - fresh // the first cycle's high-water mark
	batches := (end + batch - 1) / batch
	// A mark covers the batches of up to 2,048 rows (pgstore's markRows).
	seg := max(1, 2048/batch) * batch
	marks := (end + seg - 1) / seg
	pos := (marks / 2) * seg // the second cycle's cursor
	// dt is the time between two batches: a cycle takes 24 hours.
	steps := []string{
		// Observations are written once here: the bench does not measure their churn.
		`ALTER TABLE {s}.reconcile_observations SET UNLOGGED`,
		`ALTER TABLE {s}.reconcile_lag_marks SET UNLOGGED`,
		`CREATE UNLOGGED TABLE {s}.payments (id bigint PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
			created_at timestamptz, updated_at timestamptz NOT NULL)`,
		`INSERT INTO {s}.payments SELECT i, 'pi_' || i, 'paid',
			CASE WHEN i > {end} THEN now() - interval '20 hours' + (i - {end}) * interval '1 minute'
				ELSE now() - interval '448 days' + i * (interval '400 days' / {end}) END,
			now() - interval '50 hours'
			FROM generate_series(1, {n}) i`,
		// One row with an impossible time: Status and the scan leave it out.
		`UPDATE {s}.payments SET created_at = '1800-01-01' WHERE id = 7`,
		`CREATE INDEX ON {s}.payments (created_at)`,
		// Each row's last verification: by the batch of the second cycle that read it, or of
		// the first, or (unverifiable since) the first.
		`INSERT INTO {s}.reconcile_observations (job, record_id, external_state, verified_at)
			SELECT 'sweep', i::text, 'succeeded', now() - CASE WHEN i <= {pos} AND i % 99991 <> 0 THEN interval '24 hours' ELSE interval '48 hours' END
				+ ((i - 1) / {batch} + 1) * (interval '24 hours' / {batches})
			FROM generate_series(1, {end}) i WHERE i <> 7`,
		`INSERT INTO {s}.reconcile_cursors (job, position, version, cycle_started_at, last_cycle_completed_at, cycles_completed,
				last_batch_at, last_batch_scanned, cycle_end)
			VALUES ('sweep', jsonb_build_array({pos}), {batches} + {pos} / {batch} + 1, now() - interval '24 hours', now() - interval '24 hours', 1,
				now() - interval '12 hours', {batch}, jsonb_build_array({end}))`,
		// The marks: cycle 0 whole (its last batch a wrap up to its high-water mark), cycle 1 up
		// to the cursor, each of the batches of seg rows. A mark's floor is its first batch's commit
		// time, or an unverifiable row's older one; the second cycle's mark k reached into the first
		// cycle's mark k+1 (version k+2). Its rows not verified: row 7, invalid, and in the second
		// cycle the unverifiable ones.
		`INSERT INTO {s}.reconcile_lag_marks (job, cycle, version, lo, hi, at, floor, rows, started, frontier, unverified, first_at)
			SELECT 'sweep', c, c * {marks} + k + 1, CASE WHEN k > 0 THEN jsonb_build_array(k * {seg}) END,
				jsonb_build_array(least((k + 1) * {seg}, {end})), at,
				CASE WHEN c = 1 AND EXISTS (SELECT 1 FROM generate_series(k * {seg} + 1, (k + 1) * {seg}) i WHERE i % 99991 = 0)
					THEN first - interval '24 hours' ELSE first END,
				least((k + 1) * {seg}, {end}) - k * {seg}, now() - interval '48 hours' + c * interval '24 hours',
				CASE WHEN c = 1 THEN k + 2 WHEN k < {marks} - 1 THEN 0 END,
				(SELECT count(*) FROM generate_series(k * {seg} + 1, least((k + 1) * {seg}, {end})) i WHERE i = 7 OR (c = 1 AND i % 99991 = 0)),
				first
			FROM generate_series(0, 1) c, generate_series(0, {marks} - 1) k,
				LATERAL (SELECT now() - interval '48 hours' + c * interval '24 hours' + (k * {seg} / {batch} + 1) * (interval '24 hours' / {batches}) AS first,
					now() - interval '48 hours' + c * interval '24 hours' + least((k + 1) * {seg} / {batch}, {batches}) * (interval '24 hours' / {batches}) AS at) t
			WHERE c = 0 OR (k + 1) * {seg} <= {pos}`,
		`ANALYZE {s}.payments`,
		`ANALYZE {s}.reconcile_observations`,
		`ANALYZE {s}.reconcile_lag_marks`,
	}
	for _, q := range steps {
		q = strings.ReplaceAll(q, "now()", "'{t0}'::timestamptz")
		q = expand(q, map[string]any{"s": s, "n": n, "end": end, "pos": pos, "batch": batch, "batches": batches,
			"seg": seg, "marks": marks,
			"t0": t0.UTC().Format("2006-01-02 15:04:05.999999Z07:00")})
		began := time.Now()
		if _, err := pool.Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("bench: status: %s: %w", q, err)
		}
		fmt.Fprintf(stderr, "status: %6.1fs %.70s\n", time.Since(began).Seconds(), strings.Join(strings.Fields(q), " "))
	}
	return store, nil
}

// expand replaces each {name} in q by its value.
func expand(q string, vals map[string]any) string {
	for k, v := range vals {
		q = strings.ReplaceAll(q, "{"+k+"}", fmt.Sprint(v))
	}
	return q
}
