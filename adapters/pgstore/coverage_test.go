package pgstore_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// dayAges are the console's buckets: up to an hour, 6 hours, a day, 3 days, and older.
var dayAges = []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour, 72 * time.Hour}

// sweepStep reads and commits one batch of job over store; verdict says what each row's
// outcome is (nil: in sync). It returns whether the batch ended the cycle.
func sweepStep(t *testing.T, store reconcile.Store[string], job string, batch int, verdict func(id string) (reconcile.Decision, bool)) bool {
	t.Helper()
	ctx := context.Background()
	b, err := store.Read(ctx, reconcile.ReadRequest{Job: job, Limit: batch})
	if err != nil {
		t.Fatal(err)
	}
	c := reconcile.Commit{Job: job, Cursor: b.Cursor, Wrap: len(b.Records) < batch}
	for _, r := range b.Records {
		o := reconcile.Outcome{RecordID: r.ID, ExternalID: r.ExternalID, Local: r.Local, External: r.Local,
			Decision: reconcile.Decision{Verdict: reconcile.InSync}, Verified: true}
		switch {
		case r.Invalid != "":
			o.Decision, o.Verified = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: reconcile.KindInvalidRow, Detail: r.Invalid}, false
		case verdict != nil:
			o.Decision, o.Verified = verdict(r.ID)
		}
		if !o.Verified {
			o.External = ""
		}
		c.Outcomes = append(c.Outcomes, o)
		c.Next = r.Key
	}
	if _, err := store.Commit(ctx, c); err != nil {
		t.Fatal(err)
	}
	return c.Wrap
}

// unanswered makes the rows named unverifiable, the others in sync.
func unanswered(ids ...string) func(string) (reconcile.Decision, bool) {
	return func(id string) (reconcile.Decision, bool) {
		if slices.Contains(ids, id) {
			return reconcile.Decision{Verdict: reconcile.Unverifiable}, false
		}
		return reconcile.Decision{Verdict: reconcile.InSync}, true
	}
}

func coverage(t *testing.T, r reconcile.CoverageReader, q reconcile.CoverageQuery) reconcile.Coverage {
	t.Helper()
	cov, err := r.Coverage(context.Background(), "sweep", q)
	if err != nil {
		t.Fatal(err)
	}
	return cov
}

// exactCoverage buckets every row of the payments table by now minus its last verification
// by jobs (its creation if none), reading each: what Coverage estimates.
func exactCoverage(t *testing.T, pool *pgxpool.Pool, now time.Time, ages []time.Duration, jobs ...string) []int64 {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT coalesce(max(o.verified_at), p.created_at) FROM payments AS p
		LEFT JOIN reconcile_observations AS o ON o.job = ANY($1) AND o.record_id = p.id::text
		WHERE p.created_at >= '1900-01-01' GROUP BY p.id, p.created_at`, jobs)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := make([]int64, len(ages)+1)
	for rows.Next() {
		var at time.Time
		if err := rows.Scan(&at); err != nil {
			t.Fatal(err)
		}
		i, _ := slices.BinarySearch(ages, now.Sub(at))
		out[i]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
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

// shiftBack moves every time of the job's world d into the past: as if the sweep had run then.
func shiftBack(t *testing.T, pool *pgxpool.Pool, d time.Duration) {
	t.Helper()
	for _, q := range []string{
		`UPDATE reconcile_lag_marks SET at = at - $1::interval, floor = floor - $1, first_at = first_at - $1, started = started - $1`,
		`UPDATE reconcile_observations SET verified_at = verified_at - $1::interval`,
		`UPDATE reconcile_findings SET detected_at = detected_at - $1::interval`,
		`UPDATE payments SET created_at = created_at - $1::interval`,
		`UPDATE reconcile_cursors SET cycle_started_at = cycle_started_at - $1::interval, last_cycle_completed_at = last_cycle_completed_at - $1,
			last_batch_at = last_batch_at - $1`,
	} {
		if _, err := pool.Exec(context.Background(), q, d); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func exec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestCoverageBucketsFromTheMarks follows one job: right after a cycle, with two rows its
// batches could not verify; after a lane verified rows; part way through the next cycle, with
// rows created since that no batch has read.
func TestCoverageBucketsFromTheMarks(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{}, paymentsDDL, `CREATE INDEX ON payments (created_at)`)
	q := reconcile.CoverageQuery{Ages: dayAges}
	// 30 rows created two days ago, but row 4, created 5 hours ago.
	exec(t, pool, `INSERT INTO payments (id, external_id, status, created_at)
		SELECT i, 'pi_' || i, 'paid', now() - CASE WHEN i = 4 THEN interval '5 hours' ELSE interval '2 days' END FROM generate_series(1, 30) i`)

	cov := coverage(t, s, q)
	if cov.Rows != nil || !strings.Contains(cov.Unknown, "completes a sweep cycle") {
		t.Fatalf("before a cycle: Rows %v, Unknown %q; want nil, saying it waits for a cycle", cov.Rows, cov.Unknown)
	}

	// A cycle in batches of 7, rows 3 and 4 unanswered; then as if it had run 10 hours ago.
	for !sweepStep(t, s, "sweep", 7, unanswered("3", "4")) {
	}
	shiftBack(t, pool, 10*time.Hour)
	cov = coverage(t, s, q)
	// The 28 verified rows 10 hours ago; rows 3 and 4 at the mark's floor, row 3's creation
	// (58 hours ago): row 4 (15 hours) counts older than it is.
	if want := []int64{0, 0, 28, 2, 0}; !slices.Equal(cov.Rows, want) || !cov.Estimated || cov.Unknown != "" {
		t.Fatalf("after a cycle: Rows %v, Estimated %v, Unknown %q; want %v, estimated", cov.Rows, cov.Estimated, cov.Unknown, want)
	}
	if exact := exactCoverage(t, pool, cov.Now, q.Ages, "sweep"); !slices.Equal(exact, []int64{0, 0, 29, 1, 0}) || !olderNeverYounger(cov.Rows, exact) {
		t.Fatalf("after a cycle: exact %v, estimated %v", exact, cov.Rows)
	}

	// A lane verifies rows 1 to 5 now: the marks do not know, and count them older.
	exec(t, pool, `UPDATE reconcile_observations SET verified_at = now() WHERE job = 'sweep' AND record_id::bigint <= 5`)
	exec(t, pool, `INSERT INTO reconcile_observations (job, record_id, external_state, verified_at) VALUES ('sweep', '3', 'paid', now()), ('sweep', '4', 'paid', now())`)
	cov = coverage(t, s, q)
	exact := exactCoverage(t, pool, cov.Now, q.Ages, "sweep")
	if want := []int64{0, 0, 28, 2, 0}; !slices.Equal(cov.Rows, want) || !slices.Equal(exact, []int64{5, 0, 25, 0, 0}) || !olderNeverYounger(cov.Rows, exact) {
		t.Fatalf("after a lane: Rows %v (want %v), exact %v", cov.Rows, want, exact)
	}

	// Two batches of the next cycle, then rows created since: one behind the cursor and one
	// past the cycle's high-water mark, now, and one past it 2 hours ago.
	sweepStep(t, s, "sweep", 7, nil)
	sweepStep(t, s, "sweep", 7, nil)
	exec(t, pool, `INSERT INTO payments (id, external_id, status, created_at) VALUES
		(0, 'pi_0', 'paid', clock_timestamp()), (40, 'pi_40', 'paid', clock_timestamp()), (41, 'pi_41', 'paid', now() - interval '2 hours')`)
	cov = coverage(t, s, q)
	exact = exactCoverage(t, pool, cov.Now, q.Ages, "sweep")
	// Rows 1-14 verified now, rows 0 and 40; 41; of the previous cycle's mark, the 16 rows past
	// the cursor, 2 of them at its floor as it had 2 unverified (rows 3 and 4, behind the cursor:
	// older than they are).
	if want := []int64{16, 1, 14, 2, 0}; !slices.Equal(cov.Rows, want) || !slices.Equal(exact, []int64{16, 1, 16, 0, 0}) ||
		!olderNeverYounger(cov.Rows, exact) {
		t.Fatalf("part way through the next cycle: Rows %v, want %v (exact %v)", cov.Rows, want, exact)
	}

	// The rest of the cycle: the covering marks are its own, every row of them verified now;
	// rows 0, 40 and 41 are past them, or created since their first batch.
	for !sweepStep(t, s, "sweep", 7, nil) {
	}
	cov = coverage(t, s, q)
	if want := []int64{32, 1, 0, 0, 0}; !slices.Equal(cov.Rows, want) || !slices.Equal(exactCoverage(t, pool, cov.Now, q.Ages, "sweep"), want) {
		t.Fatalf("after the next cycle: Rows %v, want %v", cov.Rows, want)
	}
}

// TestCoverageCountsEveryRowOlderNeverYounger drives a sweep through cycles over a table that
// changes under it, as TestStatusFromLagMarksEqualsTheScan does, and checks after every step
// that Coverage counts every row at its age or older, in buckets from a millisecond to days,
// and no more rows than the table has had: for keys of one column and of two.
func TestCoverageCountsEveryRowOlderNeverYounger(t *testing.T) {
	t.Parallel()
	ages := []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second, 10 * time.Second, time.Hour, 30 * time.Hour}
	for _, c := range []struct {
		name, idType, region string
		keys                 []string
	}{
		{name: "key bigint", idType: "bigint"},
		{name: "key text", idType: "text"},
		// The region interleaves the ids: the key order is not the ids'.
		{name: "key (region, id)", idType: "bigint", keys: []string{"region", "id"},
			region: `, region text GENERATED ALWAYS AS (chr(97 + (id % 3)::int)) STORED NOT NULL, UNIQUE (region, id)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pool, s := newStore(t, pgstore.Config{LagJobs: []string{"other"}, KeyColumns: c.keys}, `CREATE TABLE payments (
				id `+c.idType+` PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
				created_at timestamptz, updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour'`+c.region+`)`,
				`CREATE INDEX ON payments (created_at)`)
			exec(t, pool, `INSERT INTO payments (id, external_id, status, created_at)
				SELECT lpad(i::text, 4, '0')::`+c.idType+`, 'pi_' || i, 'paid', now() - interval '1 day' + i * interval '1 minute'
				FROM generate_series(1, 60) i`)
			ch := newChurn(sweeper{t: t, pool: pool, store: s, job: "sweep", batch: 7}, c.idType, 19, 3)
			for step := 0; step < 300; step++ {
				ch.step(step)
				cov := coverage(t, s, reconcile.CoverageQuery{Ages: ages})
				if cov.Rows == nil {
					continue // before the first cycle with marks
				}
				exact := exactCoverage(t, pool, cov.Now, ages, "sweep", "other")
				var est, all int64
				for i := range exact {
					est, all = est+cov.Rows[i], all+exact[i]
				}
				if !olderNeverYounger(cov.Rows, exact) || est > all+int64(ch.deleted) {
					t.Fatalf("step %d: estimated %v, exact %v (%d rows deleted so far)", step, cov.Rows, exact, ch.deleted)
				}
			}
			if cov := coverage(t, s, reconcile.CoverageQuery{Ages: ages}); cov.Rows == nil {
				t.Fatalf("the sweep never completed a cycle with marks: %s", cov.Unknown)
			}
		})
	}
}

// TestCoverageAgreesWithMemstore runs the same sweep over the same rows in pgstore and memstore:
// rows never answered, findings opened and one resolved, rows created since the cycle. Where
// every row's batch verified it or it kept its creation time, the estimate is the exact count.
func TestCoverageAgreesWithMemstore(t *testing.T) {
	t.Parallel()
	pool, pg := newStore(t, pgstore.Config{}, paymentsDDL, `CREATE INDEX ON payments (created_at)`)
	mem := memstore.New[int64, string](memstore.Options{})
	ctx := context.Background()
	created := time.Now().Add(-48 * time.Hour)
	for i := int64(10); i <= 400; i += 10 {
		exec(t, pool, `INSERT INTO payments (id, external_id, status, created_at) VALUES ($1::bigint, 'pi_' || $1::bigint, 'paid', $2)`, i, created)
		mem.Put(memstore.Row[int64, string]{Key: i, ExternalID: "pi_" + strconv.FormatInt(i, 10), Local: "paid", CreatedAt: created})
	}
	verdict := func(id string) (reconcile.Decision, bool) {
		switch id {
		case "170", "230":
			return reconcile.Decision{Verdict: reconcile.Unverifiable}, false
		case "50", "250", "350":
			return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "amount_mismatch"}, true
		}
		return reconcile.Decision{Verdict: reconcile.InSync}, true
	}
	stores := []reconcile.Store[string]{pg, mem}
	for _, st := range stores {
		for !sweepStep(t, st, "sweep", 6, verdict) {
		}
		sweepStep(t, st, "sweep", 6, verdict)
	}
	// New rows since: behind the cursor, and past the cycle's high-water mark.
	for _, id := range []int64{5, 1000} {
		exec(t, pool, `INSERT INTO payments (id, external_id, status, created_at) VALUES ($1::bigint, 'pi_' || $1::bigint, 'paid', clock_timestamp())`, id)
		mem.Put(memstore.Row[int64, string]{Key: id, ExternalID: "pi_" + strconv.FormatInt(id, 10), Local: "paid"})
	}
	for _, r := range []reconcile.Reviewer{pg, mem} {
		fs, err := r.ListFindings(ctx, reconcile.FindingQuery{Job: "sweep", Limit: 10})
		if err != nil || len(fs) != 3 {
			t.Fatalf("findings %v, %v; want 3", fs, err)
		}
		if err := r.ResolveFinding(ctx, fs[0].ID, reconcile.Resolution{As: reconcile.ResolutionFixed, By: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	q := reconcile.CoverageQuery{Ages: dayAges, Days: 3}
	p, m := coverage(t, pg, q), coverage(t, mem, q)
	if want := []int64{40, 0, 0, 2, 0}; !slices.Equal(p.Rows, want) || !slices.Equal(m.Rows, want) {
		t.Fatalf("Rows: pgstore %v, memstore %v; want %v", p.Rows, m.Rows, want)
	}
	open := func(c reconcile.Coverage) []int {
		var out []int
		for _, o := range c.Open {
			out = append(out, o.Open)
		}
		return out
	}
	if want := []int{0, 0, 2}; !slices.Equal(open(p), want) || !slices.Equal(open(m), want) {
		t.Fatalf("Open: pgstore %v, memstore %v; want %v", open(p), open(m), want)
	}
	if p.Estimated == m.Estimated {
		t.Errorf("Estimated: pgstore %v, memstore %v; want only pgstore's set", p.Estimated, m.Estimated)
	}
}

// TestCoverageOpenSamples checks the daily samples against findings detected and resolved at
// known times: resolved before the window (read by no sample), within it, open still, detected
// since the first sample; and a finding of another job.
func TestCoverageOpenSamples(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	exec(t, pool, `INSERT INTO reconcile_findings (job, record_id, kind, local_state, detected_at, resolved_at, resolution) VALUES
		('sweep', '1', 'k', '', now() - interval '30 days', now() - interval '20 days', 'fixed'),
		('sweep', '2', 'k', '', now() - interval '10 days', now() - interval '36 hours', 'fixed'),
		('sweep', '3', 'k', '', now() - interval '10 days', now() - interval '48 hours', 'fixed'),
		('sweep', '4', 'k', '', now() - interval '50 hours', NULL, NULL),
		('sweep', '5', 'k', '', now() - interval '1 hour', NULL, NULL),
		('sweep', '6', 'k', '', now() - interval '72 hours', now() - interval '1 minute', 'fixed'),
		('other', '7', 'k', '', now() - interval '10 days', NULL, NULL)`)
	cov := coverage(t, s, reconcile.CoverageQuery{Days: 4})
	var got []int
	for i, o := range cov.Open {
		got = append(got, o.Open)
		if want := cov.Now.Add(-time.Duration(3-i) * 24 * time.Hour); !o.At.Equal(want) {
			t.Errorf("sample %d at %v; want %v", i, o.At, want)
		}
	}
	// At now-72h: 2, 3, 6 (detected at that very time); now-48h: 2, 4, 6 (3 resolved at that
	// very time); now-24h: 4, 6; now: 4, 5.
	if want := []int{3, 3, 2, 2}; !slices.Equal(got, want) {
		t.Fatalf("Open %v; want %v", got, want)
	}
	if cov := coverage(t, s, reconcile.CoverageQuery{}); len(cov.Open) != 0 {
		t.Fatalf("Days 0: Open %v; want none", cov.Open)
	}
}

// TestCoverageSaysWhenOnlyAScanCouldTell covers the stores Status scans: Rows nil, Unknown
// saying why, the open findings read all the same.
func TestCoverageSaysWhenOnlyAScanCouldTell(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		cfg  pgstore.Config
		ddl  []string
		want string
	}{
		{"a Filter's tier", pgstore.Config{Filter: pgstore.Filter{AnyOf: [][]pgstore.Cond{{{Column: "status", Op: pgstore.Eq, Value: "paid"}}}}},
			[]string{paymentsDDL}, "Filter"},
		{"verifications in the host's columns", pgstore.Config{Observations: pgstore.ObserveInHostColumns},
			hostColumnsDDL("timestamptz", "now()"), "host table's columns"},
		{"no cycle yet", pgstore.Config{}, []string{paymentsDDL}, "completes a sweep cycle"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pool, s := newStore(t, c.cfg, c.ddl...)
			exec(t, pool, `INSERT INTO payments (id, external_id, status, created_at, updated_at) SELECT i, 'pi_' || i, 'paid', now(), now()
				FROM generate_series(1, 3) i`)
			sweepStep(t, s, "sweep", 10, nil)
			exec(t, pool, `INSERT INTO reconcile_findings (job, record_id, kind, local_state) VALUES ('sweep', '1', 'k', '')`)
			if c.want == "completes a sweep cycle" {
				exec(t, pool, `DELETE FROM reconcile_lag_marks`) // as after upgrading: no marks from the cycle's start
			}
			cov := coverage(t, s, reconcile.CoverageQuery{Ages: dayAges, Days: 2})
			if cov.Rows != nil || !strings.Contains(cov.Unknown, c.want) || cov.Estimated {
				t.Fatalf("Rows %v, Unknown %q, Estimated %v; want nil, naming %q", cov.Rows, cov.Unknown, cov.Estimated, c.want)
			}
			if len(cov.Open) != 2 || cov.Open[1].Open != 1 {
				t.Fatalf("Open %v; want 2 samples, the last with the open finding", cov.Open)
			}
		})
	}
}

// TestCoverageRejectsABadQuery: the query's error, before any read.
func TestCoverageRejectsABadQuery(t *testing.T) {
	t.Parallel()
	_, s := newStore(t, pgstore.Config{})
	for _, q := range []reconcile.CoverageQuery{
		{Ages: []time.Duration{time.Hour, time.Hour}},
		{Ages: []time.Duration{0}},
		{Days: reconcile.MaxCoverageDays + 1},
		{Days: -1},
	} {
		if _, err := s.Coverage(context.Background(), "sweep", q); err == nil || !strings.HasPrefix(err.Error(), "pgstore: coverage of job sweep: reconcile: coverage query:") {
			t.Errorf("Coverage(%+v) = %v; want the query's error", q, err)
		}
	}
}

// TestCoverageOfMarksWrittenBeforeMigration009: a mark that does not say how many of its rows
// were verified counts them all at its floor.
func TestCoverageOfMarksWrittenBeforeMigration009(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{}, paymentsDDL, `CREATE INDEX ON payments (created_at)`)
	exec(t, pool, `INSERT INTO payments (id, external_id, status, created_at)
		SELECT i, 'pi_' || i, 'paid', now() - interval '2 days' FROM generate_series(1, 20) i`)
	for !sweepStep(t, s, "sweep", 7, unanswered("3")) {
	}
	sweepStep(t, s, "sweep", 7, nil)
	q := reconcile.CoverageQuery{Ages: dayAges}
	if cov := coverage(t, s, q); !slices.Equal(cov.Rows, []int64{19, 0, 0, 1, 0}) {
		t.Fatalf("marks of migration 009: Rows %v; want 19 verified now, row 3 at its creation", cov.Rows)
	}
	exec(t, pool, `UPDATE reconcile_lag_marks SET unverified = NULL, first_at = NULL`)
	// The current cycle's mark (rows 1-7, all verified) and the previous cycle's past it
	// (rows 8-20 of 20, with one unverified: its floor two days ago).
	if cov := coverage(t, s, q); !slices.Equal(cov.Rows, []int64{7, 0, 0, 13, 0}) {
		t.Fatalf("marks from before migration 009: Rows %v; want [7 0 0 13 0]", cov.Rows)
	}
}

// TestCoverageOfAMarkWrittenBeforeMigration009MissesNoRow: a mark written before migration 009
// does not know when its first batch committed, only its last; a row inserted behind its
// batches in between (read by none of them) is still counted, once the mark is extended after
// the upgrade too.
func TestCoverageOfAMarkWrittenBeforeMigration009MissesNoRow(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{}, paymentsDDL, `CREATE INDEX ON payments (created_at)`)
	exec(t, pool, `INSERT INTO payments (id, external_id, status, created_at)
		SELECT i * 10, 'pi_' || i * 10, 'paid', now() - interval '2 days' FROM generate_series(1, 20) i`)
	for !sweepStep(t, s, "sweep", 7, nil) {
	}
	sweepStep(t, s, "sweep", 3, nil) // rows 10 to 30: the next cycle's mark begins
	exec(t, pool, `INSERT INTO payments (id, external_id, status, created_at) VALUES (15, 'pi_15', 'paid', clock_timestamp())`)
	sweepStep(t, s, "sweep", 3, nil) // rows 40 to 60: the mark extended, row 15 behind it
	// As the marks were before the upgrade; then a batch after it extends the mark again.
	exec(t, pool, `UPDATE reconcile_lag_marks SET unverified = NULL, first_at = NULL`)
	sweepStep(t, s, "sweep", 3, nil)
	q := reconcile.CoverageQuery{Ages: dayAges}
	cov := coverage(t, s, q)
	exact := exactCoverage(t, pool, cov.Now, q.Ages, "sweep")
	if !olderNeverYounger(cov.Rows, exact) {
		t.Fatalf("Rows %v; exact %v: a row missed or counted younger", cov.Rows, exact)
	}
}

// TestCoverageOverAKeyOfAnotherCollation: a text key whose column sorts by a collation other
// than the database's, in which "a…" comes before "B…": the rows created since the previous
// cycle's mark are placed by the key order of the sweep, not the database's.
func TestCoverageOverAKeyOfAnotherCollation(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{}, `CREATE TABLE payments (id text COLLATE "en-x-icu" PRIMARY KEY, external_id text NOT NULL,
		status text NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour')`,
		`CREATE INDEX ON payments (created_at)`)
	exec(t, pool, `INSERT INTO payments (id, external_id, status, created_at)
		SELECT p || i, 'pi_' || p || i, 'paid', now() - interval '2 days' FROM generate_series(1, 9) i, unnest(ARRAY['a', 'B']) p`)
	for !sweepStep(t, s, "sweep", 5, nil) {
	}
	// Created since the cycle's mark, past where the next cycle's cursor will stand: no batch
	// has read it.
	exec(t, pool, `INSERT INTO payments (id, external_id, status, created_at) VALUES ('B5x', 'pi_B5x', 'paid', clock_timestamp())`)
	sweepStep(t, s, "sweep", 5, nil) // a1 to a5
	q := reconcile.CoverageQuery{Ages: dayAges}
	cov := coverage(t, s, q)
	exact := exactCoverage(t, pool, cov.Now, q.Ages, "sweep")
	if !olderNeverYounger(cov.Rows, exact) {
		t.Fatalf("Rows %v; exact %v: a row missed or counted younger", cov.Rows, exact)
	}
}
