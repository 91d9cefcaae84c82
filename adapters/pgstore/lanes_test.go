package pgstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// laneExec runs each statement, failing the test on the first error.
func laneExec(t testing.TB, pool *pgxpool.Pool, sqls ...string) {
	t.Helper()
	for _, q := range sqls {
		if _, err := pool.Exec(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// laneCount returns the result of a count(*) query.
func laneCount(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// laneWritten counts what the job has recorded: findings, observations and outbox rows.
func laneWritten(t testing.TB, pool *pgxpool.Pool, job string) (findings, observations, commands int) {
	t.Helper()
	return laneCount(t, pool, `SELECT count(*) FROM reconcile_findings WHERE job = $1`, job),
		laneCount(t, pool, `SELECT count(*) FROM reconcile_observations WHERE job = $1`, job),
		laneCount(t, pool, `SELECT count(*) FROM reconcile_outbox WHERE payload->>'job' = $1`, job)
}

// laneMatch calls Match and returns the records sorted by row id.
func laneMatch(t testing.TB, s *pgstore.Store[string], req reconcile.MatchRequest) []reconcile.Record[string] {
	t.Helper()
	if req.Job == "" {
		req.Job = "payments"
	}
	res, err := s.Match(context.Background(), req)
	if err != nil {
		t.Fatalf("Match(%v): %v", req.ExternalIDs, err)
	}
	recs := res.Rows
	slices.SortFunc(recs, func(a, b reconcile.Record[string]) int { return strings.Compare(a.ID, b.ID) })
	return recs
}

func laneIDs(recs []reconcile.Record[string]) []string {
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	return ids
}

// laneRead returns the lane's cursor, failing the test on an error.
func laneRead(t testing.TB, s *pgstore.Store[string], job, lane string) reconcile.Cursor {
	t.Helper()
	c, err := s.ReadLane(context.Background(), job, lane)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// laneStatusOf returns the status of one lane of job, and false if Status lists no such lane.
func laneStatusOf(t testing.TB, s *pgstore.Store[string], job, lane string) (reconcile.LaneStatus, bool) {
	t.Helper()
	st, err := s.Status(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range st.Lanes {
		if l.Lane == lane {
			return l, true
		}
	}
	return reconcile.LaneStatus{}, false
}

// laneWrap completes a cycle of the sweep job, as an empty read does.
func laneWrap(t testing.TB, s *pgstore.Store[string], job string) {
	t.Helper()
	ctx := context.Background()
	b, err := s.Read(ctx, reconcile.ReadRequest{Job: job, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, reconcile.Commit{Job: job, Cursor: b.Cursor, Wrap: true}); err != nil {
		t.Fatal(err)
	}
}

var (
	laneMissedSuccess = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}
	laneSynced        = reconcile.Decision{Verdict: reconcile.InSync}
)

// laneVerified is a verified outcome for the row with the given id.
func laneVerified(id string, d reconcile.Decision) reconcile.Outcome {
	return reconcile.Outcome{RecordID: id, ExternalID: "pi_" + id, Local: "pending", External: "succeeded", Decision: d, Verified: true}
}

// laneMissing is a reverse scan's outcome for an external object no row refers to, flagged as
// the engine flags it.
func laneMissing(ext string) reconcile.Outcome {
	return reconcile.Outcome{RecordID: ext, ExternalID: ext, External: "succeeded", NotARow: true, Once: true,
		Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: reconcile.KindMissingLocally, Detail: "no local row has this external id"}}
}

func TestMatchFindsRowsByExternalID(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	laneExec(t, pool, `INSERT INTO payments (id, external_id, status, updated_at) VALUES
		(1, 'pi_1', 'pending', now() - interval '1 hour'),
		(2, 'pi_2', 'paid',    now() - interval '1 hour'),
		(3, 'pi_2', 'failed',  now() - interval '1 hour'),
		(4, 'pi_4', 'paid',    now() - interval '1 hour')`)
	tests := []struct {
		name string
		ids  []string
		want []string // row ids
	}{
		{"one id", []string{"pi_1"}, []string{"1"}},
		{"several ids", []string{"pi_1", "pi_4"}, []string{"1", "4"}},
		{"an unknown id finds nothing", []string{"pi_404"}, nil},
		{"unknown ids among known ones are left out", []string{"pi_404", "pi_4", "pi_405"}, []string{"4"}},
		{"two rows sharing an id both come back", []string{"pi_2"}, []string{"2", "3"}},
		{"an id that only looks like one does not match", []string{"PI_1", "pi_1 ", "pi_"}, nil},
		{"no ids find nothing", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := laneMatch(t, s, reconcile.MatchRequest{ExternalIDs: tt.ids, Grace: time.Minute})
			if got := laneIDs(recs); !slices.Equal(got, tt.want) {
				t.Fatalf("rows %v; want %v", got, tt.want)
			}
		})
	}
	t.Run("a record carries the row's key, id, external id, state and creation time", func(t *testing.T) {
		recs := laneMatch(t, s, reconcile.MatchRequest{ExternalIDs: []string{"pi_1"}, Grace: time.Minute})
		if len(recs) != 1 {
			t.Fatalf("%d records; want 1", len(recs))
		}
		r := recs[0]
		if r.Key != "[1]" || r.ID != "1" || r.ExternalID != "pi_1" || r.Local != "pending" || r.Recent {
			t.Errorf("record %+v; want key [1], id 1, pi_1, pending, not recent", r)
		}
		if age := time.Since(r.CreatedAt); age < 23*time.Hour || age > 25*time.Hour {
			t.Errorf("CreatedAt %v; want about a day ago", r.CreatedAt)
		}
	})
	t.Run("Since of another length than the ids is refused", func(t *testing.T) {
		_, err := s.Match(context.Background(), reconcile.MatchRequest{Job: "payments", ExternalIDs: []string{"pi_1", "pi_2"},
			Since: []time.Time{time.Now()}})
		if err == nil || !strings.Contains(err.Error(), "pgstore: ") {
			t.Fatalf("Match = %v; want a pgstore error", err)
		}
	})
}

func TestMatchSeesOnlyTheRowsOfTheStoresFilter(t *testing.T) {
	t.Parallel()
	pool, _ := newStore(t, pgstore.Config{})
	laneExec(t, pool, `INSERT INTO payments (id, external_id, status, created_at, updated_at) VALUES
		(1, 'pi_1', 'pending', now() - interval '2 days',   now() - interval '1 hour'),
		(2, 'pi_2', 'paid',    now() - interval '200 days', now() - interval '1 hour'),
		(3, 'pi_3', 'archived', now() - interval '2 days',  now() - interval '1 hour'),
		(4, 'pi_1', 'paid',    now() - interval '300 days', now() - interval '1 hour')`)
	// Two conditions in one group and one in another: several placeholders after Match's own.
	recent := pgstore.Filter{AnyOf: [][]pgstore.Cond{
		{{Column: "status", Op: pgstore.In, Value: []string{"pending", "paid"}}, {Column: "created_at", Op: pgstore.Within, Value: 90 * 24 * time.Hour}},
		{{Column: "status", Op: pgstore.Eq, Value: "disputed"}},
	}}
	old := recent
	old.Not = true
	tests := []struct {
		name   string
		filter pgstore.Filter
		want   []string
	}{
		{"the zero filter sees every row", pgstore.Filter{}, []string{"1", "2", "3", "4"}},
		{"a filter sees its rows only", recent, []string{"1"}},
		{"its Not twin sees the others", old, []string{"2", "3", "4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := pgstore.New(pool, pgstore.Config{Table: "payments", Filter: tt.filter})
			if err != nil {
				t.Fatal(err)
			}
			recs := laneMatch(t, s, reconcile.MatchRequest{ExternalIDs: []string{"pi_1", "pi_2", "pi_3"}, Grace: time.Minute,
				Since: []time.Time{{}, time.Now().Add(-48 * time.Hour), {}}})
			if got := laneIDs(recs); !slices.Equal(got, tt.want) {
				t.Fatalf("rows %v; want %v", got, tt.want)
			}
		})
	}
}

func TestMatchMarksRowsRecentByGraceAndBySince(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	laneExec(t, pool, `INSERT INTO payments (id, external_id, status, updated_at) VALUES
		(1, 'pi_1', 'pending', now() - interval '10 seconds'),
		(2, 'pi_2', 'pending', now() - interval '1 hour')`)
	var updated2 time.Time
	if err := pool.QueryRow(context.Background(), `SELECT updated_at FROM payments WHERE id = 2`).Scan(&updated2); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tests := []struct {
		name  string
		ext   string
		grace time.Duration
		since []time.Time // nil: none
		want  bool
	}{
		{"a row changed within the grace is recent", "pi_1", time.Minute, nil, true},
		{"a row changed before the grace is not", "pi_2", time.Minute, nil, false},
		{"no grace makes no row recent", "pi_1", 0, nil, false},
		{"a row changed after Since is recent", "pi_2", time.Minute, []time.Time{now.Add(-2 * time.Hour)}, true},
		{"a row changed exactly at Since is recent", "pi_2", 0, []time.Time{updated2}, true},
		{"a row changed a microsecond before Since is not", "pi_2", 0, []time.Time{updated2.Add(time.Microsecond)}, false},
		{"a row changed before Since is not", "pi_2", time.Minute, []time.Time{now.Add(-30 * time.Minute)}, false},
		{"a zero Since adds nothing", "pi_2", time.Minute, []time.Time{{}}, false},
		{"a Since after the change does not undo the grace", "pi_1", time.Minute, []time.Time{now.Add(time.Hour)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := laneMatch(t, s, reconcile.MatchRequest{ExternalIDs: []string{tt.ext}, Since: tt.since, Grace: tt.grace})
			if len(recs) != 1 || recs[0].Recent != tt.want {
				t.Fatalf("records %+v; want one with Recent %v", recs, tt.want)
			}
		})
	}
	t.Run("each id is judged against its own Since", func(t *testing.T) {
		recs := laneMatch(t, s, reconcile.MatchRequest{ExternalIDs: []string{"pi_1", "pi_2"}, Grace: 0,
			Since: []time.Time{now.Add(time.Hour), now.Add(-2 * time.Hour)}})
		if len(recs) != 2 || recs[0].Recent || !recs[1].Recent {
			t.Fatalf("records %+v; want pi_1 not recent (changed before its Since) and pi_2 recent", recs)
		}
	})
}

func TestMatchComparesExternalIDColumnsOfAnyType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		colType string
		value   string // SQL literal of row 1's external id
		ask     []string
		wantExt string
	}{
		{"varchar(64)", "varchar(64)", "'pi_1'", []string{"pi_1", "pi_2"}, "pi_1"},
		{"char(8), padded", "char(8)", "'pi_1'", []string{"pi_1", "pi_2"}, "pi_1"},
		{"bigint, compared as text", "bigint", "42", []string{"42", "pi_x", "042"}, "42"},
		{"uuid, compared as text", "uuid", "'6f1c2a3e-0d4b-4f4e-9a51-2b7c1d0e9f10'",
			[]string{"6f1c2a3e-0d4b-4f4e-9a51-2b7c1d0e9f10", "not-a-uuid"}, "6f1c2a3e-0d4b-4f4e-9a51-2b7c1d0e9f10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool, s := newStore(t, pgstore.Config{}, `CREATE TABLE payments (
				id          bigint PRIMARY KEY,
				external_id `+tt.colType+`,
				status      text NOT NULL,
				created_at  timestamptz NOT NULL DEFAULT now() - interval '1 day',
				updated_at  timestamptz NOT NULL DEFAULT now() - interval '1 hour')`)
			laneExec(t, pool, `INSERT INTO payments (id, external_id, status) VALUES (1, `+tt.value+`, 'pending'), (2, NULL, 'pending')`)
			recs := laneMatch(t, s, reconcile.MatchRequest{ExternalIDs: tt.ask, Grace: time.Minute})
			if len(recs) != 1 || recs[0].ID != "1" || recs[0].ExternalID != tt.wantExt {
				t.Fatalf("records %+v; want row 1 with external id %q", recs, tt.wantExt)
			}
		})
	}
}

func TestMatchWithHostColumnObservationsIgnoresTheReconcilersOwnWrite(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{Observations: pgstore.ObserveInHostColumns}, paymentsDDL,
		`ALTER TABLE payments ADD COLUMN observed_external_status text, ADD COLUMN last_reconciled_at timestamptz`)
	laneExec(t, pool, `INSERT INTO payments (id, external_id, status, updated_at, last_reconciled_at) VALUES
		(1, 'pi_1', 'pending', now(), now()),
		(2, 'pi_2', 'pending', now(), now() - interval '1 hour'),
		(3, 'pi_3', 'pending', now() - interval '1 hour', NULL),
		(4, 'pi_4', 'pending', now() - interval '1 hour', now() - interval '1 hour')`)
	since := time.Now().Add(-2 * time.Hour)
	recs := laneMatch(t, s, reconcile.MatchRequest{ExternalIDs: []string{"pi_1", "pi_2", "pi_3", "pi_4"}, Grace: time.Minute,
		Since: []time.Time{{}, {}, since, since}})
	var got []bool
	for _, r := range recs {
		got = append(got, r.Recent)
	}
	// 1: changed only by our verification; 2: changed after it; 3: changed after Since, never
	// verified; 4: its last change after Since was our verification.
	if want := []bool{false, true, true, false}; !slices.Equal(got, want) {
		t.Fatalf("Recent of rows 1-4: %v; want %v", got, want)
	}
}

func TestCommitLaneCreatesTheLaneOnItsFirstStep(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	insertPayments(t, pool, 1, 2) // outcomes about rows that do not exist would write nothing
	ctx := context.Background()
	if c := laneRead(t, s, "payments", "reverse"); c != (reconcile.Cursor{}) {
		t.Fatalf("ReadLane of a lane never committed = %+v; want the zero cursor", c)
	}
	if l, ok := laneStatusOf(t, s, "payments", "reverse"); ok {
		t.Fatalf("Status lists a lane never committed: %+v", l)
	}
	res, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "payments", Lane: "reverse", Next: "pi_100",
		Outcomes: []reconcile.Outcome{laneVerified("1", laneSynced), laneVerified("2", laneMissedSuccess)}})
	if err != nil {
		t.Fatal(err)
	}
	if res != (reconcile.CommitResult{Findings: 1, Commands: 1}) {
		t.Errorf("CommitLane = %+v; want one finding and one command", res)
	}
	if c := laneRead(t, s, "payments", "reverse"); c != (reconcile.Cursor{Position: "pi_100", Version: 1}) {
		t.Errorf("ReadLane = %+v; want position pi_100 at version 1", c)
	}
	if f, o, c := laneWritten(t, pool, "payments"); f != 1 || o != 2 || c != 1 {
		t.Errorf("%d findings, %d observations, %d commands; want 1, 2, 1", f, o, c)
	}
	if _, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "payments", Lane: "events", Next: "evt_1"}); err != nil {
		t.Fatal(err)
	}
	st, err := s.Status(ctx, "payments")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range st.Lanes {
		names = append(names, l.Lane)
	}
	if !slices.Equal(names, []string{"events", "reverse"}) {
		t.Fatalf("Status lanes %q; want events and reverse, sorted", names)
	}
	l := st.Lanes[1]
	if l.CreatedAt.IsZero() || l.LastRunAt.IsZero() || st.Now.Sub(l.LastRunAt) > time.Minute {
		t.Errorf("lane %+v; want it created and run just now", l)
	}
	if l.PassesCompleted != 0 || !l.LastEndAt.IsZero() || !l.GapAt.IsZero() || l.GapReason != "" || l.GapOpen {
		t.Errorf("lane %+v; want no pass completed and no gap", l)
	}
	if _, ok := laneStatusOf(t, s, "other", "reverse"); ok {
		t.Error("another job's Status lists this job's lane")
	}
}

func TestCommitLaneRefusesInvalidCommits(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	tests := []struct {
		name string
		c    reconcile.LaneCommit
		want string
	}{
		{"a position longer than 4096 bytes", reconcile.LaneCommit{Job: "payments", Lane: "events", Next: strings.Repeat("x", 4097),
			Outcomes: []reconcile.Outcome{laneVerified("1", laneMissedSuccess)}}, "4096"},
		{"no job", reconcile.LaneCommit{Lane: "events", Next: "evt_1", Outcomes: []reconcile.Outcome{laneVerified("1", laneMissedSuccess)}}, "job"},
		{"no lane", reconcile.LaneCommit{Job: "payments", Next: "evt_1", Outcomes: []reconcile.Outcome{laneVerified("1", laneMissedSuccess)}}, "lane"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.CommitLane(context.Background(), tt.c)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "pgstore: ") {
				t.Fatalf("CommitLane = %v; want a pgstore error mentioning %q", err, tt.want)
			}
		})
	}
	if c := laneRead(t, s, "payments", "events"); c != (reconcile.Cursor{}) {
		t.Errorf("ReadLane = %+v after refused commits; want the zero cursor", c)
	}
	if f, o, c := laneWritten(t, pool, "payments"); f+o+c != 0 {
		t.Errorf("refused commits wrote %d findings, %d observations, %d commands", f, o, c)
	}
	t.Run("a position of exactly 4096 bytes is kept", func(t *testing.T) {
		pos := strings.Repeat("y", 4096)
		if _, err := s.CommitLane(context.Background(), reconcile.LaneCommit{Job: "payments", Lane: "long", Next: pos}); err != nil {
			t.Fatal(err)
		}
		if c := laneRead(t, s, "payments", "long"); c.Position != pos || c.Version != 1 {
			t.Fatalf("ReadLane = %d bytes at version %d; want the 4096 bytes at version 1", len(c.Position), c.Version)
		}
	})
}

func TestCommitLaneAppliesOnlyAtTheVersionRead(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	insertPayments(t, pool, 1, 2) // outcomes about rows that do not exist would write nothing
	ctx := context.Background()
	if _, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "payments", Lane: "events", Next: "evt_1"}); err != nil {
		t.Fatal(err)
	}
	stale := []struct {
		name    string
		version int64
	}{
		{"a second first step (version 0)", 0},
		{"a version ahead of the stored one", 2},
		{"a version far behind", -1},
	}
	for _, tt := range stale {
		t.Run(tt.name+" is a lost race that writes nothing", func(t *testing.T) {
			res, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "payments", Lane: "events",
				Cursor: reconcile.Cursor{Position: "evt_0", Version: tt.version}, Next: "evt_stale", End: true, Gap: "lost",
				Outcomes: []reconcile.Outcome{laneVerified("1", laneMissedSuccess), laneMissing("pi_9")}})
			if !errors.Is(err, reconcile.ErrConcurrentRun) {
				t.Fatalf("CommitLane = %v; want ErrConcurrentRun", err)
			}
			if f, o, c := laneWritten(t, pool, "payments"); f+o+c != 0 {
				t.Errorf("a lost race wrote %d findings, %d observations, %d commands", f, o, c)
			}
			if c := laneRead(t, s, "payments", "events"); c != (reconcile.Cursor{Position: "evt_1", Version: 1}) {
				t.Errorf("ReadLane = %+v; want evt_1 at version 1, unchanged", c)
			}
			if l, _ := laneStatusOf(t, s, "payments", "events"); l.PassesCompleted != 0 || !l.GapAt.IsZero() {
				t.Errorf("lane %+v; want the lost race's End and Gap unrecorded", l)
			}
			if res != (reconcile.CommitResult{}) {
				t.Errorf("CommitLane returned %+v with ErrConcurrentRun; want the zero result, as Commit returns", res)
			}
		})
	}
	t.Run("the version read advances the lane", func(t *testing.T) {
		res, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "payments", Lane: "events",
			Cursor: reconcile.Cursor{Position: "evt_1", Version: 1}, Next: "evt_2",
			Outcomes: []reconcile.Outcome{laneVerified("1", laneMissedSuccess)}})
		if err != nil {
			t.Fatalf("CommitLane at the stored version 1: %v", err)
		}
		if res != (reconcile.CommitResult{Findings: 1, Commands: 1}) {
			t.Errorf("CommitLane = %+v; want one finding and one command", res)
		}
		if c := laneRead(t, s, "payments", "events"); c != (reconcile.Cursor{Position: "evt_2", Version: 2}) {
			t.Errorf("ReadLane = %+v; want evt_2 at version 2", c)
		}
		if _, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "payments", Lane: "events",
			Cursor: reconcile.Cursor{Position: "evt_1", Version: 1}, Next: "evt_3"}); !errors.Is(err, reconcile.ErrConcurrentRun) {
			t.Errorf("a second commit from version 1 = %v; want ErrConcurrentRun", err)
		}
	})
}

func TestCommitLaneRacingFirstStepsLetExactlyOneThrough(t *testing.T) {
	t.Parallel()
	_, s := newStore(t, pgstore.Config{})
	const n = 8
	var (
		wg   sync.WaitGroup
		errs [n]error
	)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = s.CommitLane(context.Background(), reconcile.LaneCommit{Job: "payments", Lane: "reverse",
				Next: "pos_" + string(rune('a'+i)), Outcomes: []reconcile.Outcome{laneMissing("pi_" + string(rune('a'+i)))}})
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("steps %d and %d both committed", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, reconcile.ErrConcurrentRun):
			t.Fatalf("step %d: %v; want success or ErrConcurrentRun", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no step committed")
	}
	w := string(rune('a' + winner))
	if c := laneRead(t, s, "payments", "reverse"); c != (reconcile.Cursor{Position: "pos_" + w, Version: 1}) {
		t.Errorf("ReadLane = %+v; want the winner's pos_%s at version 1", c, w)
	}
	fs, err := s.ListFindings(context.Background(), reconcile.FindingQuery{Job: "payments", State: reconcile.FindingsAll})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].RecordID != "pi_"+w {
		t.Fatalf("findings %+v; want only the winner's pi_%s", fs, w)
	}
}

func TestCommitLaneAndTheSweepShareOneFindingAndOneCommand(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	insertPayments(t, pool, 1, 2) // outcomes about rows that do not exist would write nothing
	ctx := context.Background()
	sweep := func(t *testing.T, o reconcile.Outcome) reconcile.CommitResult {
		t.Helper()
		b, err := s.Read(ctx, reconcile.ReadRequest{Job: "payments", Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Commit(ctx, reconcile.Commit{Job: "payments", Cursor: b.Cursor, Next: "[" + o.RecordID + "]", Outcomes: []reconcile.Outcome{o}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	lane := func(t *testing.T, name string, o reconcile.Outcome) reconcile.CommitResult {
		t.Helper()
		res, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "payments", Lane: name, Cursor: laneRead(t, s, "payments", name),
			Next: "p", Outcomes: []reconcile.Outcome{o}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	commandsFor := func(record string) int {
		return laneCount(t, pool, `SELECT count(*) FROM reconcile_outbox WHERE aggregate_id = $1`, record)
	}
	openFor := func(record string) int {
		return laneCount(t, pool, `SELECT count(*) FROM reconcile_findings WHERE job = 'payments' AND record_id = $1 AND resolved_at IS NULL`, record)
	}
	t.Run("a drift the sweep found is not opened again by a lane", func(t *testing.T) {
		if res := sweep(t, laneVerified("1", laneMissedSuccess)); res != (reconcile.CommitResult{Findings: 1, Commands: 1}) {
			t.Fatalf("sweep commit = %+v; want one finding and one command", res)
		}
		if res := lane(t, "events", laneVerified("1", laneMissedSuccess)); res != (reconcile.CommitResult{}) {
			t.Errorf("lane commit = %+v; want nothing new", res)
		}
		if f, c := openFor("1"), commandsFor("1"); f != 1 || c != 1 {
			t.Errorf("%d open findings and %d commands for row 1; want 1 and 1", f, c)
		}
	})
	t.Run("a drift a lane found is not opened again by the sweep", func(t *testing.T) {
		if res := lane(t, "reverse", laneVerified("2", laneMissedSuccess)); res != (reconcile.CommitResult{Findings: 1, Commands: 1}) {
			t.Fatalf("lane commit = %+v; want one finding and one command", res)
		}
		if res := sweep(t, laneVerified("2", laneMissedSuccess)); res != (reconcile.CommitResult{}) {
			t.Errorf("sweep commit = %+v; want nothing new", res)
		}
		if f, c := openFor("2"), commandsFor("2"); f != 1 || c != 1 {
			t.Errorf("%d open findings and %d commands for row 2; want 1 and 1", f, c)
		}
	})
	t.Run("a lane of another job opens its own finding", func(t *testing.T) {
		res, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "refunds", Lane: "events", Next: "p",
			Outcomes: []reconcile.Outcome{laneVerified("1", laneMissedSuccess)}})
		if err != nil {
			t.Fatal(err)
		}
		if res != (reconcile.CommitResult{Findings: 1, Commands: 1}) {
			t.Errorf("another job's lane commit = %+v; want its own finding and command", res)
		}
	})
}

func TestCommitLaneRecordsAMissingObjectAsAFindingWithoutAnObservation(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	insertPayments(t, pool, 1, 2) // outcomes about rows that do not exist would write nothing
	res, err := s.CommitLane(context.Background(), reconcile.LaneCommit{Job: "payments", Lane: "reverse", Next: "pi_9",
		Outcomes: []reconcile.Outcome{laneMissing("pi_9"), laneVerified("1", laneSynced)}})
	if err != nil {
		t.Fatal(err)
	}
	if res != (reconcile.CommitResult{Findings: 1}) {
		t.Errorf("CommitLane = %+v; want one finding and no command", res)
	}
	fs, err := s.ListFindings(context.Background(), reconcile.FindingQuery{Job: "payments", State: reconcile.FindingsAll})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].RecordID != "pi_9" || fs[0].Kind != reconcile.KindMissingLocally || fs[0].External != "succeeded" ||
		fs[0].Command != "" || !strings.Contains(fs[0].Detail, "no local row") {
		t.Fatalf("findings %+v; want one missing_locally review of pi_9", fs)
	}
	if n := laneCount(t, pool, `SELECT count(*) FROM reconcile_observations WHERE record_id = 'pi_9'`); n != 0 {
		t.Errorf("%d observations of the missing object; want none", n)
	}
	if n := laneCount(t, pool, `SELECT count(*) FROM reconcile_observations WHERE job = 'payments' AND record_id = '1'`); n != 1 {
		t.Errorf("%d observations of the verified row; want 1", n)
	}
	if _, _, c := laneWritten(t, pool, "payments"); c != 0 {
		t.Errorf("%d commands for a review; want none", c)
	}
}

func TestCommitLaneCountsThePassesThatReachTheFeedsEnd(t *testing.T) {
	t.Parallel()
	_, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	step := func(t *testing.T, next string, end bool) {
		t.Helper()
		if _, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "payments", Lane: "reverse", Cursor: laneRead(t, s, "payments", "reverse"),
			Next: next, End: end}); err != nil {
			t.Fatalf("step to %q (end %v): %v", next, end, err)
		}
	}
	step(t, "pi_50", false)
	if l, _ := laneStatusOf(t, s, "payments", "reverse"); l.PassesCompleted != 0 || !l.LastEndAt.IsZero() {
		t.Fatalf("after a step in the middle: %+v; want no pass completed", l)
	}
	step(t, "", true)
	first, _ := laneStatusOf(t, s, "payments", "reverse")
	if first.PassesCompleted != 1 || first.LastEndAt.IsZero() {
		t.Fatalf("after the end of a pass: %+v; want one pass and its time", first)
	}
	step(t, "pi_50", false)
	if l, _ := laneStatusOf(t, s, "payments", "reverse"); l.PassesCompleted != 1 || !l.LastEndAt.Equal(first.LastEndAt) {
		t.Fatalf("after a step of the next pass: %+v; want one pass, ended at %v", l, first.LastEndAt)
	}
	step(t, "", true)
	if l, _ := laneStatusOf(t, s, "payments", "reverse"); l.PassesCompleted != 2 || l.LastEndAt.Before(first.LastEndAt) {
		t.Fatalf("after the end of the second pass: %+v; want two passes", l)
	}
	if c := laneRead(t, s, "payments", "reverse"); c.Version != 4 {
		t.Errorf("version %d after four steps; want 4", c.Version)
	}
}

func TestCommitLaneFirstStepAtTheEndCountsAPass(t *testing.T) {
	t.Parallel()
	_, s := newStore(t, pgstore.Config{})
	if _, err := s.CommitLane(context.Background(), reconcile.LaneCommit{Job: "payments", Lane: "events", Next: "evt_9", End: true}); err != nil {
		t.Fatal(err)
	}
	l, ok := laneStatusOf(t, s, "payments", "events")
	if !ok || l.PassesCompleted != 1 || l.LastEndAt.IsZero() || l.LastEndAt.Before(l.CreatedAt) {
		t.Fatalf("lane %+v; want one pass completed just now", l)
	}
}

func TestCommitLaneGapStaysOpenUntilASweepCycleStartedAfterItCompletes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		wrapsBefore int // sweep cycles completed before the gap
	}{
		{"a gap before the sweep ever ran", 0},
		{"a gap during the sweep's second cycle", 1},
		{"a gap during a later cycle", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, s := newStore(t, pgstore.Config{})
			for range tt.wrapsBefore {
				laneWrap(t, s, "payments")
			}
			if _, err := s.CommitLane(context.Background(), reconcile.LaneCommit{Job: "payments", Lane: "events", Next: "evt_500",
				Gap: "checkpoint evt_1 is older than 25 days"}); err != nil {
				t.Fatal(err)
			}
			l, ok := laneStatusOf(t, s, "payments", "events")
			if !ok || l.GapAt.IsZero() || l.GapReason != "checkpoint evt_1 is older than 25 days" || !l.GapOpen {
				t.Fatalf("lane %+v; want an open gap with its reason", l)
			}
			// The cycle under way at the gap started before it: completing it covers nothing.
			laneWrap(t, s, "payments")
			if l, _ := laneStatusOf(t, s, "payments", "events"); !l.GapOpen {
				t.Fatalf("the gap closed when the cycle under way at it completed: %+v", l)
			}
			// The next cycle started after the gap: completing it covers every row.
			laneWrap(t, s, "payments")
			l, _ = laneStatusOf(t, s, "payments", "events")
			if l.GapOpen || l.GapAt.IsZero() || l.GapReason == "" {
				t.Fatalf("after a whole cycle since the gap: %+v; want it closed, still described", l)
			}
			h := reconcile.EvaluateHealth(reconcile.Status{Now: time.Now(), Lanes: []reconcile.LaneStatus{l}}, reconcile.HealthPolicy{})
			for _, c := range h.Checks {
				if c.Name == "lane:events" && !c.OK {
					t.Errorf("lane check %+v fails after the gap closed", c)
				}
			}
		})
	}
}

func TestCommitLaneKeepsTheLastGapAcrossLaterSteps(t *testing.T) {
	t.Parallel()
	_, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	step := func(t *testing.T, gap string) {
		t.Helper()
		if _, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "payments", Lane: "events", Cursor: laneRead(t, s, "payments", "events"),
			Next: "evt", Gap: gap}); err != nil {
			t.Fatalf("step (gap %q): %v", gap, err)
		}
	}
	step(t, "")
	if l, _ := laneStatusOf(t, s, "payments", "events"); !l.GapAt.IsZero() || l.GapOpen {
		t.Fatalf("lane %+v; want no gap", l)
	}
	laneWrap(t, s, "payments")
	step(t, "checkpoint lost")
	step(t, "")
	l, _ := laneStatusOf(t, s, "payments", "events")
	if l.GapReason != "checkpoint lost" || !l.GapOpen {
		t.Fatalf("lane %+v after a step without a gap; want the gap kept, open", l)
	}
	// Counted from the cycles at the gap (1), not from the lane's first step (0).
	laneWrap(t, s, "payments")
	if l, _ := laneStatusOf(t, s, "payments", "events"); !l.GapOpen {
		t.Fatalf("lane %+v; want the gap open until the second cycle after it", l)
	}
	laneWrap(t, s, "payments")
	if l, _ := laneStatusOf(t, s, "payments", "events"); l.GapOpen {
		t.Fatalf("lane %+v; want the gap closed", l)
	}
}

// laneScript is a Feed that answers each position with a page.
type laneScript map[string]reconcile.FeedPage[string]

func (f laneScript) Next(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[string], error) {
	if err := wait(ctx); err != nil {
		return reconcile.FeedPage[string]{}, err
	}
	return f[pos], nil
}

func TestALaneOverTheStoreFindsAMissedWebhookOnceAcrossSteps(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	laneExec(t, pool, `INSERT INTO payments (id, external_id, status, updated_at) VALUES
		(1, 'pi_1', 'pending', now() - interval '1 hour'),
		(2, 'pi_2', 'paid',    now() - interval '1 hour'),
		(3, 'pi_3', 'pending', now())`)
	succeeded := func(ids ...string) []reconcile.FeedObject[string] {
		var out []reconcile.FeedObject[string]
		for _, id := range ids {
			out = append(out, reconcile.FeedObject[string]{ExternalID: id, Object: "succeeded", CreatedAt: time.Now().Add(-time.Hour)})
		}
		return out
	}
	feed := laneScript{
		"":      {Objects: succeeded("pi_1", "pi_3"), Next: "page2"},
		"page2": {Objects: succeeded("pi_1", "pi_2", "pi_7"), Next: "", End: true},
	}
	lane, err := reconcile.NewLane(reconcile.LaneConfig[string, string]{Job: "payments", Lane: "reverse", Feed: feed, Matcher: s, Sink: s,
		Classifier: reconciletest.Classifier(), ReportMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rep, err := lane.RunBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.NewFindings != 1 || rep.NewCommands != 1 || rep.Verdicts[reconcile.InFlight] != 1 || rep.Wrapped {
		t.Fatalf("first step %+v; want pi_1's missed success found and pi_3 in flight", rep)
	}
	rep, err = lane.RunBatch(ctx)
	if err != nil {
		t.Fatalf("second step: %v", err)
	}
	if rep.NewFindings != 1 || rep.NewCommands != 0 || !rep.Wrapped || rep.Verdicts[reconcile.NeedsReview] != 1 {
		t.Fatalf("second step %+v; want only pi_7 missing locally, and the end of the pass", rep)
	}
	fs, err := s.ListFindings(ctx, reconcile.FindingQuery{Job: "payments", State: reconcile.FindingsAll})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, f.RecordID+" "+f.Kind)
	}
	slices.Sort(got)
	if want := []string{"1 missed_success", "pi_7 missing_locally"}; !slices.Equal(got, want) {
		t.Fatalf("findings %q; want %q", got, want)
	}
	if c := laneRead(t, s, "payments", "reverse"); c != (reconcile.Cursor{Position: "", Version: 2}) {
		t.Errorf("ReadLane = %+v; want a new pass at version 2", c)
	}
	// The sweep then finds row 1's drift already open and adds nothing.
	gw := reconciletest.NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "succeeded", "pi_3": "succeeded"})
	reconciletest.Cycle(t, reconcile.Config[string, string]{Job: "payments", Source: s, Sink: s, Gateway: gw,
		Classifier: reconciletest.Classifier(), Grace: -1}, 5)
	if n := laneCount(t, pool, `SELECT count(*) FROM reconcile_outbox WHERE aggregate_id = '1'`); n != 1 {
		t.Errorf("%d commands for row 1 after the lane and a sweep; want 1", n)
	}
}
