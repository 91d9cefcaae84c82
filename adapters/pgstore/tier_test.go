package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

const day = 24 * time.Hour

// hotFilter is the usual hot tier: created in the last 90 days, or not yet settled.
func hotFilter(not bool) pgstore.Filter {
	return pgstore.Filter{AnyOf: [][]pgstore.Cond{
		{{Column: "created_at", Op: pgstore.Within, Value: 90 * day}},
		{{Column: "status", Op: pgstore.In, Value: []string{"pending"}}},
	}, Not: not}
}

// tiers returns a hot and a cold store over the test's payments table, the cold one
// hotFilter's complement.
func tiers(t *testing.T, pool *pgxpool.Pool, hotLag, coldLag []string) (hot, cold *pgstore.Store[string]) {
	t.Helper()
	var err error
	if hot, err = pgstore.New(pool, pgstore.Config{Table: "payments", Filter: hotFilter(false), LagJobs: hotLag}); err != nil {
		t.Fatal(err)
	}
	if cold, err = pgstore.New(pool, pgstore.Config{Table: "payments", Filter: hotFilter(true), LagJobs: coldLag}); err != nil {
		t.Fatal(err)
	}
	return hot, cold
}

func job(name string, s *pgstore.Store[string], gw reconcile.Gateway[string], batch int) reconcile.Config[string, string] {
	return reconcile.Config[string, string]{Job: name, Source: s, Sink: s, Gateway: gw, Classifier: reconciletest.Classifier(), BatchSize: batch}
}

// observed returns the ids of the rows the job has verified.
func observed(t *testing.T, pool *pgxpool.Pool, job string) []int64 {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT record_id::bigint FROM reconcile_observations WHERE job = $1 ORDER BY 1`, job)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func status(t *testing.T, s *pgstore.Store[string], job string) reconcile.Status {
	t.Helper()
	st, err := s.Status(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestComplementaryTiersReadEveryRowExactlyOnce(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"timestamptz", "timestamp"} {
		t.Run("with created_at a "+typ+" that may be NULL", func(t *testing.T) {
			t.Parallel()
			pool, _ := newStore(t, pgstore.Config{}, `CREATE TABLE payments (
				id bigint PRIMARY KEY, external_id text NOT NULL, status text, created_at `+typ+`,
				updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour')`)
			ctx := context.Background()
			// 1000 rows over two years, each half a day off a whole number of days so that none
			// sits on the 90-day boundary; some with no creation time, some with no status.
			const n = 1000
			ids, ages, statuses := make([]int64, n), make([]*int32, n), make([]*string, n)
			wantHot := map[int64]bool{}
			for i := range n {
				id := int64(i + 1)
				ids[i] = id
				if id%53 != 0 {
					d := int32(id * 7919 % 730)
					ages[i] = &d
				}
				if id%41 != 0 {
					s := []string{"pending", "paid", "failed"}[id%3]
					statuses[i] = &s
				}
				wantHot[id] = ages[i] != nil && *ages[i] < 90 || statuses[i] != nil && *statuses[i] == "pending"
			}
			now := "now()"
			if typ == "timestamp" { // written in UTC, read by sessions in Los Angeles
				now = "(now() AT TIME ZONE 'UTC')"
				pool = variant(t, pool, map[string]string{"TimeZone": "America/Los_Angeles"}, nil)
			}
			if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, created_at)
				SELECT id, 'pi_' || id, status, `+now+` - make_interval(days => age) - interval '12 hours'
				FROM unnest($1::bigint[], $2::int[], $3::text[]) AS t(id, age, status)`, ids, ages, statuses); err != nil {
				t.Fatal(err)
			}
			hot, cold := tiers(t, pool, nil, nil)
			hotGW, coldGW := reconciletest.NewGateway(states(n, "succeeded")), reconciletest.NewGateway(states(n, "succeeded"))
			reconciletest.Cycle(t, job("hot", hot, hotGW, 64), 100)
			reconciletest.Cycle(t, job("cold", cold, coldGW, 64), 100)

			var nullCreated, nullStatus int
			for i, id := range ids {
				ext := fmt.Sprintf("pi_%d", id)
				h, c := hotGW.Calls(ext), coldGW.Calls(ext)
				if h+c != 1 || (h == 1) != wantHot[id] {
					t.Fatalf("row %d (age %v days, status %v) asked %d times by hot and %d by cold; want once, by hot: %v",
						id, deref(ages[i]), deref(statuses[i]), h, c, wantHot[id])
				}
				if ages[i] == nil {
					nullCreated++
				}
				if statuses[i] == nil {
					nullStatus++
				}
			}
			hotIDs, coldIDs := observed(t, pool, "hot"), observed(t, pool, "cold")
			all := slices.Sorted(slices.Values(append(slices.Clone(hotIDs), coldIDs...)))
			if !slices.Equal(all, ids) {
				t.Fatalf("hot (%d rows) and cold (%d rows) observed %d rows, some twice or none; want each of %d once",
					len(hotIDs), len(coldIDs), len(slices.Compact(all)), n)
			}
			hs, cs := status(t, hot, "hot"), status(t, cold, "cold")
			if hs.Rows != int64(len(hotIDs)) || cs.Rows != int64(len(coldIDs)) {
				t.Fatalf("Status rows: hot %d, cold %d; want %d and %d", hs.Rows, cs.Rows, len(hotIDs), len(coldIDs))
			}
			t.Logf("hot %d rows, cold %d rows; %d with no created_at, %d with no status", len(hotIDs), len(coldIDs), nullCreated, nullStatus)
		})
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return "NULL"
	}
	return *p
}

func TestTheHotTierRunsAtItsCadenceWhileTheColdTierAdvancesBatchByBatch(t *testing.T) {
	t.Parallel()
	pool, _ := newStore(t, pgstore.Config{})
	ctx := context.Background()
	// Rows 1-30: paid in the last 30 days; 31-35: pending for 200 days (hot by status);
	// 36-135: settled and 100 to 694 days old (cold).
	if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, created_at, updated_at)
		SELECT i, 'pi_' || i,
			CASE WHEN i BETWEEN 31 AND 35 THEN 'pending' WHEN i % 2 = 0 THEN 'paid' ELSE 'failed' END,
			now() - CASE WHEN i <= 30 THEN i * interval '1 day' WHEN i <= 35 THEN interval '200 days' ELSE (100 + (i - 36) * 6) * interval '1 day' END,
			now() - interval '1 hour'
		FROM generate_series(1, 135) i`); err != nil {
		t.Fatal(err)
	}
	hot, cold := tiers(t, pool, nil, nil)
	ext := map[string]string{}
	for i := 1; i <= 135; i++ {
		switch {
		case i > 30 && i <= 35:
			ext[fmt.Sprintf("pi_%d", i)] = "processing"
		case i > 35 && i%2 == 1:
			ext[fmt.Sprintf("pi_%d", i)] = "canceled"
		default:
			ext[fmt.Sprintf("pi_%d", i)] = "succeeded"
		}
	}
	gw := reconciletest.NewGateway(ext)
	hotJob, coldJob := job("hot", hot, gw, 100), job("cold", cold, gw, 25)
	position := func() string {
		var p string
		if err := pool.QueryRow(ctx, `SELECT coalesce(position::text, '') FROM reconcile_cursors WHERE job = 'cold'`).Scan(&p); err != nil && err != pgx.ErrNoRows {
			t.Fatal(err)
		}
		return p
	}
	var lastVerified time.Time
	var coldPositions []string
	for round := 1; round <= 5; round++ {
		before := position()
		reconciletest.Cycle(t, hotJob, 3)
		if p := position(); p != before {
			t.Fatalf("round %d: the hot cycle moved the cold cursor from %q to %q", round, before, p)
		}
		// Every hot row was verified in this hot cycle, after every verification of the last one.
		var n int
		var oldest, newest time.Time
		if err := pool.QueryRow(ctx, `SELECT count(*), min(verified_at), max(verified_at) FROM reconcile_observations WHERE job = 'hot'`).
			Scan(&n, &oldest, &newest); err != nil {
			t.Fatal(err)
		}
		if n != 35 || !oldest.After(lastVerified) {
			t.Fatalf("round %d: %d hot rows verified, oldest at %v (last cycle's newest %v); want all 35 verified again", round, n, oldest, lastVerified)
		}
		lastVerified = newest

		hs, cs := status(t, hot, "hot"), status(t, cold, "cold")
		if hs.Lag > time.Minute || hs.Rows != 35 || hs.CyclesCompleted != int64(round) {
			t.Fatalf("round %d: hot status %+v; want a lag under a minute over 35 rows, %d cycles", round, hs, round)
		}
		if round <= 4 && (cs.Lag < 100*day || cs.Rows != 100 || cs.CyclesCompleted != 0) {
			t.Fatalf("round %d: cold status %+v; want a lag over 100 days (unverified old rows remain) over 100 rows, no cycle yet", round, cs)
		}
		if round == 5 && (cs.Lag > time.Minute || cs.CyclesCompleted != 1) {
			t.Fatalf("after the cold cycle: cold status %+v; want a lag under a minute and one cycle", cs)
		}
		if round == 5 {
			break
		}
		rep, err := reconcile.RunBatch(ctx, coldJob)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("[%d]", 35+25*round)
		if rep.Scanned != 25 || position() != want {
			t.Fatalf("cold batch %d: scanned %d, cursor at %s; want 25 rows up to %s", round, rep.Scanned, position(), want)
		}
		coldPositions = append(coldPositions, position())
		if round == 4 { // the cold tier has read its last row; the next read wraps
			if rep, err := reconcile.RunBatch(ctx, coldJob); err != nil || !rep.Wrapped {
				t.Fatalf("the cold tier's fifth batch: %+v, %v; want the wrap", rep, err)
			}
		}
	}
	for i := 1; i <= 135; i++ {
		want := 1
		if i <= 35 {
			want = 5
		}
		if n := gw.Calls(fmt.Sprintf("pi_%d", i)); n != want {
			t.Fatalf("pi_%d asked %d times, want %d", i, n, want)
		}
	}
	t.Logf("cold cursor positions: %v", coldPositions)
}

func TestAColdTierCountsTheHotTiersVerificationOfARowThatMovedToIt(t *testing.T) {
	t.Parallel()
	pool, _ := newStore(t, pgstore.Config{})
	ctx := context.Background()
	// Row 1 is pending for 400 days (hot by status), row 2 paid 5 days ago (hot), row 3 paid
	// 300 days ago (cold).
	if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, created_at, updated_at) VALUES
		(1, 'pi_1', 'pending', now() - interval '400 days', now() - interval '1 hour'),
		(2, 'pi_2', 'paid', now() - interval '5 days', now() - interval '1 hour'),
		(3, 'pi_3', 'paid', now() - interval '300 days', now() - interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	hot, cold := tiers(t, pool, []string{"cold"}, []string{"hot"})
	_, coldAlone := tiers(t, pool, nil, nil)
	gw := reconciletest.NewGateway(map[string]string{"pi_1": "processing", "pi_2": "succeeded", "pi_3": "succeeded"})
	reconciletest.Cycle(t, job("hot", hot, gw, 10), 3)
	reconciletest.Cycle(t, job("cold", cold, gw, 10), 3)
	// The payment settles: row 1 leaves the hot tier for the cold one, which has never seen it.
	if _, err := pool.Exec(ctx, `UPDATE payments SET status = 'paid' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	gw.Set("pi_1", "succeeded")
	hs, cs, alone := status(t, hot, "hot"), status(t, cold, "cold"), status(t, coldAlone, "cold")
	if hs.Rows != 1 || cs.Rows != 2 {
		t.Fatalf("rows: hot %d, cold %d; want 1 and 2", hs.Rows, cs.Rows)
	}
	if cs.Lag > time.Minute {
		t.Fatalf("cold lag %v with the hot job's verifications counted; want under a minute (the hot job verified row 1 just now)", cs.Lag)
	}
	if alone.Lag < 399*day {
		t.Fatalf("cold lag %v counting only its own verifications; want about 400 days (row 1 since its creation)", alone.Lag)
	}
	// The overall lag is the largest tier's; an unfiltered store counting both jobs agrees.
	all, err := pgstore.New(pool, pgstore.Config{Table: "payments", LagJobs: []string{"hot", "cold"}})
	if err != nil {
		t.Fatal(err)
	}
	overall := status(t, all, "hot")
	if d := overall.Lag - max(hs.Lag, cs.Lag); d < 0 || d > time.Second || overall.Rows != 3 {
		t.Fatalf("overall lag %v over %d rows, tiers' %v and %v; want the larger over 3 rows", overall.Lag, overall.Rows, hs.Lag, cs.Lag)
	}
	// The cold tier's next cycle verifies the row itself.
	reconciletest.Cycle(t, job("cold", cold, gw, 10), 3)
	if ids := observed(t, pool, "cold"); !slices.Equal(ids, []int64{1, 3}) {
		t.Fatalf("cold observed rows %v, want [1 3]", ids)
	}
	if alone := status(t, coldAlone, "cold"); alone.Lag > time.Minute {
		t.Fatalf("cold lag %v after its own cycle, want under a minute", alone.Lag)
	}
}

func TestFilterValuesAreBoundNotSpliced(t *testing.T) {
	t.Parallel()
	pool, _ := newStore(t, pgstore.Config{})
	ctx := context.Background()
	evil := []string{`'; DROP TABLE payments; --`, `pending' OR '1'='1`}
	if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, updated_at) VALUES
		(1, 'pi_1', 'paid', now() - interval '1 hour'), (2, 'pi_2', $1, now() - interval '1 hour'),
		(3, 'pi_3', $2, now() - interval '1 hour'), (4, 'pi_4', 'pending', now() - interval '1 hour')`, evil[0], evil[1]); err != nil {
		t.Fatal(err)
	}
	for i, f := range []pgstore.Filter{
		{AnyOf: [][]pgstore.Cond{{{Column: "status", Op: pgstore.Eq, Value: evil[0]}}}},
		{AnyOf: [][]pgstore.Cond{{{Column: "status", Op: pgstore.In, Value: []string{evil[1]}}}}},
	} {
		s, err := pgstore.New(pool, pgstore.Config{Table: "payments", Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		gw := reconciletest.NewGateway(states(4, "succeeded"))
		name := fmt.Sprint("evil", i)
		reconciletest.Cycle(t, job(name, s, gw, 10), 3)
		if ids := observed(t, pool, name); !slices.Equal(ids, []int64{int64(i + 2)}) || gw.Calls("") != 1 {
			t.Fatalf("filter on %q read rows %v (%d calls); want only row %d, whose status it is", evil[i], ids, gw.Calls(""), i+2)
		}
		if st := status(t, s, name); st.Rows != 1 {
			t.Fatalf("filter on %q: Status counts %d rows, want 1", evil[i], st.Rows)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM payments`).Scan(&n); err != nil || n != 4 {
		t.Fatalf("payments has %d rows (%v) after the filters ran; want all 4", n, err)
	}
}
