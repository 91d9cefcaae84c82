package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

// A finding changed by a transaction that commits after a commit's findings statement took its
// snapshot and before it locked the finding, and left open (a person resolves it and reopens
// it): the statement locks the finding's newest version, which its snapshot cannot see, so a
// close by that version's ctid alone finds nothing. The row in sync, the finding is closed by
// that commit all the same, once. (The lever, for the test only: the statement waits in its
// insert of another record's finding for a conflicting insert, rolled back meanwhile.)
func TestAFindingChangedWhileTheFindingsStatementRunsIsStillClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, s, jc, gw := raceSetup(t, 2)
	runCycle(t, jc) // both rows in sync: both findings cleared
	gw.Set("pi_2", "canceled")
	runCycle(t, jc)
	f2 := openFindings(t, s, jc.Job)["2"]
	if f2.ID == 0 {
		t.Fatal("no finding of row 2 open")
	}
	// Row 1 drifts (a finding to open), row 2 is in sync again (its finding to close).
	gw.Set("pi_1", "canceled")
	gw.Set("pi_2", "succeeded")
	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx) //nolint:errcheck // rolled back below
	if _, err := blocker.Exec(ctx, `INSERT INTO reconcile_findings (job, record_id, kind, local_state)
		VALUES ($1, '1', 'paid_locally_not_externally', 'paid')`, jc.Job); err != nil {
		t.Fatal(err)
	}
	var pid uint32
	if err := blocker.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	done := make(chan int)
	go func() { done <- runCycleErr(jc) }()
	for waiting := false; !waiting; {
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid)))`, pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-done:
			t.Fatalf("the cycle ended (changed %d) without waiting for the conflicting insert", c)
		case <-time.After(10 * time.Millisecond):
		}
	}
	// Bounded: were the finding locked already, the person would wait on the commit, which
	// waits on the blocker, which waits on the test.
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.ResolveFinding(rctx, f2.ID, reconcile.Resolution{As: reconcile.ResolutionFixed, By: "alice"}); err != nil {
		blocker.Rollback(ctx) //nolint:errcheck // the test fails either way
		<-done
		t.Fatalf("the person's resolution: %v; the commit held the finding before it waited", err)
	}
	if err := s.ReopenFinding(rctx, f2.ID, "alice", "not fixed after all"); err != nil {
		t.Fatal(err)
	}
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if c := <-done; c != 0 {
		t.Fatalf("the cycle counted %d rows changed (-1: it failed); want none", c)
	}
	got, err := s.Finding(ctx, f2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Open() || got.Resolution != reconcile.ResolutionCleared || got.ResolvedBy != reconcile.ResolvedByReconciler {
		t.Errorf("row 2's finding after the cycle: open %v, %q by %q; want cleared by the reconciler", got.Open(), got.Resolution, got.ResolvedBy)
	}
	if open := openFindings(t, s, jc.Job); len(open) != 1 || open["1"].ID == 0 {
		t.Errorf("open findings %v; want row 1's only", open)
	}
	resolvedOnce(t, pool, jc.Job)
}
