package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// A commit held between its observations statement and its findings statement while another
// session changes the row: whatever the commit decides of the row, its observation and its
// judgment agree (both, or neither), as the findings statement takes the observations
// statement's decision.

// pauseKey is the advisory lock, one per test schema (a bigint key: no lock space of the
// store's, which takes two int4 keys), on which a commit's observations statement waits once
// it has written.
const pauseKey = `hashtext(current_schema())::bigint`

// pauseAfterObserve makes every later statement writing observations wait, once it has
// written them, until release is called; it returns the backend holding the lock.
func pauseAfterObserve(t *testing.T, pool *pgxpool.Pool) (pid int, release func()) {
	t.Helper()
	ctx := context.Background()
	exec(t, pool, `CREATE FUNCTION pause_observe() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_advisory_xact_lock(`+pauseKey+`); RETURN NULL; END $$`)
	exec(t, pool, `CREATE TRIGGER pause AFTER INSERT OR UPDATE ON reconcile_observations FOR EACH STATEMENT EXECUTE FUNCTION pause_observe()`)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid() FROM (SELECT pg_advisory_lock(`+pauseKey+`)) AS l`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	released := false
	release = func() {
		if !released {
			released = true
			if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(`+pauseKey+`)`); err != nil {
				t.Error(err)
			}
			conn.Release()
		}
	}
	t.Cleanup(release)
	return pid, release
}

// openDrift makes row 1 (pending) with a missed_success finding open in job sweep, and returns
// the store's read of it after.
func openDrift(t *testing.T, pool *pgxpool.Pool, s *pgstore.Store[string]) (reconcile.Batch[string], int64) {
	t.Helper()
	ctx := context.Background()
	b := readOne(t, pool, s)
	if _, err := s.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true, Outcomes: []reconcile.Outcome{
		{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "succeeded", Verified: true, Decision: obsDrift, Version: b.Records[0].Version}}}); err != nil {
		t.Fatal(err)
	}
	open := openFindings(t, s, "sweep")
	if open["1"].ID == 0 {
		t.Fatalf("open findings %v; want row 1's", open)
	}
	b, err := s.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	return b, open["1"].ID
}

// observedAs says whether job sweep holds an observation of row 1 with external state state.
func observedAs(t *testing.T, pool *pgxpool.Pool, state string) bool {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM reconcile_observations WHERE job = 'sweep' AND record_id = '1' AND external_state = $1`, state).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// commitPaused commits c while pid holds the pause, runs during once the commit waits there,
// then releases it.
func commitPaused(t *testing.T, pool *pgxpool.Pool, s *pgstore.Store[string], c reconcile.Commit, pid int, release func(), during func()) reconcile.CommitResult {
	t.Helper()
	done := make(chan struct{})
	var res reconcile.CommitResult
	var err error
	go func() {
		defer close(done)
		res, err = s.Commit(context.Background(), c)
	}()
	blockedBy(t, pool, pid, done)
	select {
	case <-done:
		t.Fatalf("the commit ended before its observations statement waited: %v", err)
	default:
	}
	during()
	release()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A host change of the row between the two statements: the in-sync judgment either closes the
// drift and records the answer, or does neither and counts the row as changed.
func TestARowChangedAfterItsObservationIsJudgedAsItsObservationSays(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	b, id := openDrift(t, pool, s)
	pid, release := pauseAfterObserve(t, pool)
	res := commitPaused(t, pool, s, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true, Outcomes: []reconcile.Outcome{
		{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "pending", Verified: true,
			Decision: reconcile.Decision{Verdict: reconcile.InSync}, Version: b.Records[0].Version}}}, pid, release, func() {
		exec(t, pool, `UPDATE payments SET status = 'failed' WHERE id = 1`)
	})
	obs, closed := observedAs(t, pool, "pending"), openFindings(t, s, "sweep")["1"].ID != id
	if obs != closed || obs == (res.Changed == 1) {
		t.Errorf("observed %v, drift closed %v, result %+v; want the observation and the judgment to agree, counted as changed if neither", obs, closed, res)
	}
	resolvedOnce(t, pool, "sweep")
}

// The canonical writer changes the row and resolves its finding between the two statements
// (nothing holds that finding: the commit opens none for the record): it is resolved once,
// by the writer, and nothing else is left open.
func TestARepairBetweenTheObservationAndTheJudgmentResolvesTheFindingOnce(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	b, id := openDrift(t, pool, s)
	pid, release := pauseAfterObserve(t, pool)
	res := commitPaused(t, pool, s, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true, Outcomes: []reconcile.Outcome{
		{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "pending", Verified: true,
			Decision: reconcile.Decision{Verdict: reconcile.InSync}, Version: b.Records[0].Version}}}, pid, release, func() {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `UPDATE payments SET status = 'paid' WHERE id = 1`); err != nil {
			t.Fatal(err)
		}
		if err := s.ResolveFindingIn(ctx, tx, id, reconcile.Resolution{As: reconcile.ResolutionRepaired, By: reconcile.ResolvedByReconciler}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if open := openFindings(t, s, "sweep"); len(open) != 0 || res.Findings != 0 {
		t.Errorf("open findings %v, result %+v; want none", open, res)
	}
	var resolution string
	if err := pool.QueryRow(ctx, `SELECT resolution FROM reconcile_findings WHERE id = $1`, id).Scan(&resolution); err != nil {
		t.Fatal(err)
	}
	if resolution != reconcile.ResolutionRepaired {
		t.Errorf("the finding resolved as %q; want the writer's %q", resolution, reconcile.ResolutionRepaired)
	}
	resolvedOnce(t, pool, "sweep")
}
