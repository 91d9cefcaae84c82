package pgstore_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// sweeper drives a job's sweep by hand, batch by batch, deciding per row whether the external
// system answered.
type sweeper struct {
	t     *testing.T
	pool  *pgxpool.Pool
	store *pgstore.Store[string]
	job   string
	batch int
}

// step reads and commits one batch; answered says which rows were verified. It returns
// whether the batch ended the cycle.
func (w sweeper) step(answered func(id string) bool) bool {
	w.t.Helper()
	return sweepStep(w.t, w.store, w.job, w.batch, func(id string) (reconcile.Decision, bool) {
		if !answered(id) {
			return reconcile.Decision{Verdict: reconcile.Unverifiable}, false
		}
		return reconcile.Decision{Verdict: reconcile.InSync}, true
	})
}

// churn changes a payments table under a sweep, one random step at a time: new rows, created
// now, at the end of the key order or among the rows; a row deleted; a row verified out of
// turn by a lane or by the LagJobs job "other"; an outage of a row for a while; and otherwise
// a batch of the sweep, in which the rows in an outage are not answered.
type churn struct {
	w       sweeper
	keyType string // the id column's type
	rng     *rand.Rand
	next    int
	down    map[string]int // rows the external system does not answer for, until a step
	deleted int            // rows deleted so far
}

func newChurn(w sweeper, keyType string, seed1, seed2 uint64) *churn {
	return &churn{w: w, keyType: keyType, rng: rand.New(rand.NewPCG(seed1, seed2)), next: 2000, down: map[string]int{}}
}

func (c *churn) step(step int) {
	c.w.t.Helper()
	switch op := c.rng.IntN(12); {
	case op == 0:
		for range 1 + c.rng.IntN(3) {
			id := c.next
			if c.rng.IntN(2) == 0 {
				id = 1 + c.rng.IntN(60)*10 + 5000
			}
			c.next++
			c.w.exec(`INSERT INTO payments (id, external_id, status, created_at) VALUES (lpad($1, 4, '0')::`+c.keyType+`, 'pi_' || $1, 'paid', clock_timestamp())
				ON CONFLICT DO NOTHING`, strconv.Itoa(id))
		}
	case op == 1:
		tag, err := c.w.pool.Exec(context.Background(), `DELETE FROM payments WHERE id = (SELECT id FROM payments ORDER BY md5(id::text || $1) LIMIT 1)`, strconv.Itoa(step))
		if err != nil {
			c.w.t.Fatal(err)
		}
		c.deleted += int(tag.RowsAffected())
	case op == 2:
		job := []string{"sweep", "other"}[c.rng.IntN(2)]
		c.w.exec(`INSERT INTO reconcile_observations (job, record_id, external_state, verified_at)
			SELECT $1, id::text, status, now() FROM payments ORDER BY md5(id::text || $2) LIMIT 1
			ON CONFLICT (job, record_id) DO UPDATE SET verified_at = now()`, job, strconv.Itoa(step))
	case op == 3 && c.rng.IntN(3) == 0:
		c.down[strconv.Itoa(1+c.rng.IntN(60))] = step + 5 + c.rng.IntN(30)
	default:
		c.w.step(func(id string) bool {
			n, _ := strconv.Atoi(id)
			return c.down[strconv.Itoa(n)] <= step
		})
	}
}

// agree checks that Status's lag is the scan's: the same oldest time, to the microsecond.
func (w sweeper) agree(what string) reconcile.Status {
	w.t.Helper()
	ctx := context.Background()
	st, err := w.store.Status(ctx, w.job)
	if err != nil {
		w.t.Fatal(err)
	}
	oldest, _, err := pgstore.ScanOldest(ctx, w.store, w.job)
	if err != nil {
		w.t.Fatal(err)
	}
	want := time.Duration(0)
	if oldest != nil {
		want = max(st.Now.Sub(*oldest), 0)
	}
	if st.Lag != want {
		w.t.Fatalf("%s: Status lag %v, the scan's %v (oldest %v, now %v)", what, st.Lag, want, oldest, st.Now)
	}
	return st
}

func (w sweeper) exec(sql string, args ...any) {
	w.t.Helper()
	if _, err := w.pool.Exec(context.Background(), sql, args...); err != nil {
		w.t.Fatalf("%s: %v", sql, err)
	}
}

// marksUsed reports whether the job has marks covering every row, which is when Status reads
// them rather than scanning.
func (w sweeper) marksUsed() bool {
	var ok bool
	if err := w.pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM reconcile_lag_marks AS m
		JOIN reconcile_cursors AS c USING (job) WHERE m.job = $1 AND m.cycle = c.cycles_completed - 1 AND m.lo IS NULL)`, w.job).Scan(&ok); err != nil {
		w.t.Fatal(err)
	}
	return ok
}

// TestStatusFromLagMarksEqualsTheScan drives a sweep through cycles over a table that
// changes under it — rows unverifiable for a while, new rows, deleted rows, rows verified by a
// lane and by a LagJobs job, rows with invalid times — and checks after every step that the
// lag Status reads from the marks is the one a scan of the table finds.
func TestStatusFromLagMarksEqualsTheScan(t *testing.T) {
	t.Parallel()
	for _, keyType := range []string{"bigint", "text"} {
		t.Run("key "+keyType, func(t *testing.T) {
			t.Parallel()
			pool, s := newStore(t, pgstore.Config{LagJobs: []string{"other"}}, `CREATE TABLE payments (
				id `+keyType+` PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
				created_at timestamptz, updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour')`,
				`CREATE INDEX ON payments (created_at)`)
			w := sweeper{t: t, pool: pool, store: s, job: "sweep", batch: 7}
			// 60 rows created a day ago, minute by minute, so that each has its own time.
			w.exec(`INSERT INTO payments (id, external_id, status, created_at)
				SELECT lpad(i::text, 4, '0')::` + keyType + `, 'pi_' || i, 'paid', now() - interval '1 day' + i * interval '1 minute'
				FROM generate_series(1, 60) i`)
			// One row with an impossible creation time: both leave it out.
			w.exec(`INSERT INTO payments (id, external_id, status, created_at) VALUES ('0999', 'pi_bad', 'paid', '1800-01-01')`)
			c := newChurn(w, keyType, 18, 9)
			for step := 0; step < 400; step++ {
				c.step(step)
				w.agree("step " + strconv.Itoa(step))
			}
			if !w.marksUsed() {
				t.Fatal("the sweep never completed a cycle with marks: Status only scanned")
			}
		})
	}
}

// TestStatusLagBoundWhenTheOldestBatchesLostTheirRows checks the documented bound: when every
// row of the marks holding the oldest verifications is gone (the three Status reads exactly
// and the next), Status reports the next one's floor as the oldest time — a lag too large,
// never too small — and is exact again once the sweep has moved past them. A batch of 2,048
// rows makes a mark of its own.
func TestStatusLagBoundWhenTheOldestBatchesLostTheirRows(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{}, paymentsDDL, `CREATE INDEX ON payments (created_at)`)
	const batch = 2048
	w := sweeper{t: t, pool: pool, store: s, job: "sweep", batch: batch}
	insertPayments(t, pool, ids(1, 6*batch+10)...)
	all := func(string) bool { return true }
	for !w.step(all) {
	}
	w.step(all) // rows 1-2048 again
	w.agree("after a cycle and a batch")

	w.exec(`DELETE FROM payments WHERE id BETWEEN $1 AND $2`, batch+1, 3*batch)
	w.agree("the two oldest marks' rows deleted")

	w.exec(`DELETE FROM payments WHERE id BETWEEN $1 AND $2`, 3*batch+1, 5*batch)
	ctx := context.Background()
	st, err := s.Status(ctx, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	oldest, _, err := pgstore.ScanOldest(ctx, s, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	var floor time.Time
	if err := pool.QueryRow(ctx, `SELECT floor FROM reconcile_lag_marks WHERE job = 'sweep' AND cycle = 0 AND hi = $1`,
		"["+strconv.Itoa(5*batch)+"]").Scan(&floor); err != nil {
		t.Fatal(err)
	}
	if want := st.Now.Sub(floor); st.Lag != want || st.Lag <= st.Now.Sub(*oldest) {
		t.Fatalf("Status lag %v; want %v (since the commit of the fourth oldest mark), more than the true %v", st.Lag, want, st.Now.Sub(*oldest))
	}

	w.step(all) // rows past the deleted ones
	w.agree("past the deleted rows")
}

func ids(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestStatusFromLagMarksOverAKeyOfAnotherCollation: a text key whose column sorts by a
// collation other than the database's ("a…" before "B…" in it, after in the database's): the
// marks' key ranges are compared in the column's order, as the sweep reads them, so the
// previous cycle's mark still covers the rows past the cursor and the lag is theirs.
func TestStatusFromLagMarksOverAKeyOfAnotherCollation(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{}, `CREATE TABLE payments (id text COLLATE "en-x-icu" PRIMARY KEY, external_id text NOT NULL,
		status text NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour')`,
		`CREATE INDEX ON payments (created_at)`)
	exec(t, pool, `INSERT INTO payments (id, external_id, status, created_at)
		SELECT p || i, 'pi_' || p || i, 'paid', now() - interval '2 days' FROM generate_series(1, 9) i, unnest(ARRAY['a', 'B']) p`)
	for !sweepStep(t, s, "sweep", 5, nil) {
	}
	shiftBack(t, pool, 10*time.Hour)
	sweepStep(t, s, "sweep", 5, nil) // a1 to a5, now; B1 to B9 were verified 10 hours ago
	ctx := context.Background()
	st, err := s.Status(ctx, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	oldest, _, err := pgstore.ScanOldest(ctx, s, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	if want := st.Now.Sub(*oldest); st.Lag < want {
		t.Fatalf("Status lag %v; the oldest row was verified %v ago", st.Lag, want)
	}
}
