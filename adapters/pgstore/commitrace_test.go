package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// Commits racing other writers of the same rows and findings: a person resolving, a canonical
// writer repairing, a lane step, a table rewritten under the findings. Each finding is closed
// once, by one of them; none that no longer describes its row stays open after the next
// verified judgment; no row changed since its read is judged.

// raceSetup is n paid rows (ids 1..n, external ids pi_<id>) with a paid_locally_not_externally
// finding open each, from a cycle of the job returned (named for the test: record locks are
// the database's, and other tests' commits of job "sweep" must not take turns with these)
// whose gateway said canceled; the gateway returned says succeeded for every row (in sync).
func raceSetup(t *testing.T, n int) (*pgxpool.Pool, *pgstore.Store[string], reconcile.Config[string, string], *reconciletest.Gateway) {
	t.Helper()
	pool, s := newStore(t, pgstore.Config{})
	insertPayments(t, pool, ids(1, int64(n))...)
	gw := reconciletest.NewGateway(states(n, "canceled"))
	jc := reconcile.Config[string, string]{Job: raceJob(t), Source: s, Sink: s, Gateway: gw, Classifier: reconciletest.Classifier(), BatchSize: 7}
	reconciletest.Cycle(t, jc, n+2)
	if open := openFindings(t, s, jc.Job); len(open) != n {
		t.Fatalf("%d findings open after the first cycle; want %d", len(open), n)
	}
	for i := 1; i <= n; i++ {
		gw.Set(fmt.Sprintf("pi_%d", i), "succeeded")
	}
	return pool, s, jc, gw
}

// raceJob is the job of t: its name.
func raceJob(t *testing.T) string { return "race " + t.Name() }

// openFindings returns job's open findings by record id.
func openFindings(t *testing.T, s *pgstore.Store[string], job string) map[string]reconcile.Finding {
	t.Helper()
	open := map[string]reconcile.Finding{}
	for _, f := range reconciletest.Findings(t, s, job) {
		if f.Open() {
			if _, dup := open[f.RecordID]; dup {
				t.Fatalf("record %s has two open findings", f.RecordID)
			}
			open[f.RecordID] = f
		}
	}
	return open
}

// resolvedOnce fails unless every finding of job that is resolved has exactly one 'resolved'
// event in its history, and every open one none since it was last reopened.
func resolvedOnce(t *testing.T, pool *pgxpool.Pool, job string) {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT f.id, f.resolved_at IS NOT NULL,
			count(*) FILTER (WHERE e.action = 'resolved'), count(*) FILTER (WHERE e.action = 'reopened')
		FROM reconcile_findings AS f LEFT JOIN reconcile_finding_events AS e ON e.finding_id = f.id
		WHERE f.job = $1 GROUP BY f.id ORDER BY f.id`, job)
	if err != nil {
		t.Fatal(err)
	}
	var id, resolved, reopened int64
	var closed bool
	if _, err := pgx.ForEachRow(rows, []any{&id, &closed, &resolved, &reopened}, func() error {
		want := reopened
		if closed {
			want++
		}
		if resolved != want {
			return fmt.Errorf("finding %d (resolved %v, reopened %d times) has %d resolved events; want %d", id, closed, reopened, resolved, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// runCycle runs a cycle of jc within a deadline: a commit that waits on a lock it should skip
// fails the test rather than hanging it.
func runCycle(t *testing.T, jc reconcile.Config[string, string]) (changed int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := reconcile.New(jc)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		rep, err := r.RunBatch(ctx)
		if err != nil {
			t.Fatalf("RunBatch: %v", err)
		}
		changed += rep.Changed
		if rep.Wrapped {
			return changed
		}
	}
	t.Fatal("the cycle did not end")
	return 0
}

// A person resolving a finding (the transaction open) while a sweep judges its row in sync: the
// sweep neither waits for the person nor closes the finding, so the person's resolution is its
// only one; had the person given up, the next cycle closes it as cleared.
func TestACommitLeavesAFindingAPersonIsResolvingToThePerson(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprintf("the person commits: %v", commit), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool, s, jc, _ := raceSetup(t, 5)
			held := openFindings(t, s, jc.Job)["3"]
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck // no-op after Commit
			// As ResolveFinding does, in a transaction the person has not committed yet.
			if _, err := tx.Exec(ctx, `SELECT count(pg_advisory_xact_lock(hashtext('"reconcile_findings"'), hashtext(job || ' ' || record_id)))
				FROM reconcile_findings WHERE id = $1`, held.ID); err != nil {
				t.Fatal(err)
			}
			if err := s.ResolveFindingIn(ctx, tx, held.ID, reconcile.Resolution{As: reconcile.ResolutionFixed, By: "alice", Note: "by hand"}); err != nil {
				t.Fatal(err)
			}
			runCycle(t, jc)
			open := openFindings(t, s, jc.Job)
			if len(open) != 1 || open["3"].ID != held.ID {
				t.Fatalf("open findings %v after the cycle; want only the one the person holds (%d)", open, held.ID)
			}
			if commit {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			runCycle(t, jc)
			if open := openFindings(t, s, jc.Job); len(open) != 0 {
				t.Fatalf("open findings %v after the next cycle; want none", open)
			}
			f, err := s.Finding(ctx, held.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := map[bool]string{true: "alice", false: reconcile.ResolvedByReconciler}[commit]
			if f.ResolvedBy != want {
				t.Errorf("finding resolved by %q (%s); want %q", f.ResolvedBy, f.Resolution, want)
			}
			resolvedOnce(t, pool, jc.Job)
		})
	}
}

// A repair's canonical writer changes a row and resolves its finding while a sweep batch that
// read the row before judges the same drift again: the commit waits for the writer's record
// lock, then finds the row changed: no second finding, no second command, the row counted
// changed and not verified.
func TestACommitWaitingOnARepairFindsItsRowChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, s := newStore(t, pgstore.Config{})
	laneExec(t, pool, `INSERT INTO payments (id, external_id, status, updated_at) VALUES (1, 'pi_1', 'pending', now() - interval '1 hour'),
		(2, 'pi_2', 'paid', now() - interval '1 hour')`)
	gw := reconciletest.NewGateway(states(2, "succeeded"))
	jc := reconcile.Config[string, string]{Job: raceJob(t), Source: s, Sink: s, Gateway: gw, Classifier: reconciletest.Classifier(), BatchSize: 10}
	runCycle(t, jc)
	f := openFindings(t, s, jc.Job)["1"]
	if f.Kind != "missed_success" {
		t.Fatalf("finding %+v; want row 1's missed success", f)
	}
	var verified time.Time
	if err := pool.QueryRow(ctx, `SELECT verified_at FROM reconcile_observations WHERE job = $1 AND record_id = '1'`, jc.Job).Scan(&verified); err != nil {
		t.Fatal(err)
	}
	// The delivery takes the record's lock, the writer changes the row and resolves the finding.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // no-op after Commit
	if _, err := tx.Exec(ctx, `SELECT count(pg_advisory_xact_lock(hashtext('"reconcile_findings"'), hashtext(job || ' ' || record_id)))
		FROM reconcile_findings WHERE id = $1`, f.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE payments SET status = 'paid', updated_at = now() - interval '1 hour' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResolveRecordFindings(ctx, tx, "1", nil, reconcile.Resolution{As: reconcile.ResolutionRepaired, By: reconcile.ResolvedByReconciler}); err != nil {
		t.Fatal(err)
	}
	var pid uint32
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	done := make(chan int)
	go func() {
		defer close(done)
		done <- runCycleErr(jc)
	}()
	// Until the sweep's commit waits on the writer.
	for waiting := false; !waiting; {
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid)))`, pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case changed := <-done:
			t.Fatalf("the sweep's cycle ended (changed %d) without waiting for the repair's record lock", changed)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if changed := <-done; changed != 1 {
		t.Errorf("%d rows counted changed; want row 1", changed)
	}
	fs := reconciletest.Findings(t, s, jc.Job)
	if len(fs) != 1 || fs[0].Open() || fs[0].Resolution != reconcile.ResolutionRepaired {
		t.Errorf("findings %+v; want the one, repaired", fs)
	}
	if c := commands(t, pool, jc.Job); len(c) != 1 {
		t.Errorf("%d commands; want the first one only", len(c))
	}
	var again time.Time
	if err := pool.QueryRow(ctx, `SELECT verified_at FROM reconcile_observations WHERE job = $1 AND record_id = '1'`, jc.Job).Scan(&again); err != nil || !again.Equal(verified) {
		t.Errorf("row 1 verified at %v (%v); want still %v: it changed since its read", again, err, verified)
	}
	resolvedOnce(t, pool, jc.Job)
}

// runCycleErr runs a cycle of jc and returns the rows counted changed, -1 on an error.
func runCycleErr(jc reconcile.Config[string, string]) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := reconcile.New(jc)
	if err != nil {
		return -1
	}
	changed := 0
	for range 100 {
		rep, err := r.RunBatch(ctx)
		if err != nil {
			return -1
		}
		changed += rep.Changed
		if rep.Wrapped {
			return changed
		}
	}
	return -1
}

// hookGateway runs fn once, before its first answer: what happens to the tables while a batch
// waits on the external system.
type hookGateway struct {
	reconcile.Gateway[string]
	once sync.Once
	fn   func()
}

func (g *hookGateway) Fetch(ctx context.Context, id string) (string, error) {
	g.once.Do(g.fn)
	return g.Gateway.Fetch(ctx, id)
}

// The findings table rewritten while a batch waits on the external system (every finding
// updated in place, a HOT update that moves it; VACUUM FULL; CLUSTER): the commit's findings
// statement finds and locks the findings where they are then, and closes those, each once, and
// no other job's.
func TestACommitClosesTheFindingsWhereverARewriteMovedThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, s, jc, gw := raceSetup(t, 20)
	// Another job's findings of the same rows, interleaved with the sweep's, which stay open.
	other := jc
	other.Job, other.Gateway = jc.Job+" other", reconciletest.NewGateway(states(20, "canceled"))
	reconciletest.Cycle(t, other, 22)
	rewrite := func() {
		for _, q := range []string{
			`UPDATE reconcile_findings SET detail = detail WHERE id % 3 = 0`,
			`DELETE FROM reconcile_findings WHERE job = 'nobody'`,
			`VACUUM FULL reconcile_findings`,
			`UPDATE reconcile_findings SET detail = detail WHERE id % 2 = 0`,
			`CLUSTER reconcile_findings USING reconcile_findings_pkey`,
			`UPDATE reconcile_findings SET detail = detail WHERE id % 5 = 0`,
		} {
			if _, err := pool.Exec(ctx, q); err != nil {
				t.Error(q, err)
			}
		}
	}
	jc.Gateway = &hookGateway{Gateway: gw, fn: rewrite}
	if changed := runCycle(t, jc); changed != 0 {
		t.Fatalf("%d rows counted changed; want none", changed)
	}
	if open := openFindings(t, s, jc.Job); len(open) != 0 {
		t.Fatalf("%d of the sweep's findings still open; want none", len(open))
	}
	var otherOpen int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_findings WHERE job = $1 AND resolved_at IS NULL`, other.Job).Scan(&otherOpen); err != nil || otherOpen != 20 {
		t.Fatalf("%d of the other job's findings open (%v); want its 20", otherOpen, err)
	}
	resolvedOnce(t, pool, jc.Job)
}

// A sweep, a lane step judging the same rows from a feed, and a person resolving findings at
// the same time, again and again: each finding is resolved once (one event), no record has
// two open findings, no commit fails (a deadlock, say), and after a last sweep every row in
// sync has no finding open.
func TestSweepLaneAndPersonRacingOverTheSameFindings(t *testing.T) {
	t.Parallel()
	const n = 24
	ctx := context.Background()
	pool, s, jc, gw := raceSetup(t, n)
	objs := func(state string) []reconcile.FeedObject[string] {
		var out []reconcile.FeedObject[string]
		for i := n; i >= 1; i-- {
			out = append(out, reconcile.FeedObject[string]{ExternalID: fmt.Sprintf("pi_%d", i), Object: state, CreatedAt: time.Now().Add(-time.Hour)})
		}
		return out
	}
	for round := range 6 {
		// Odd rounds find the drift again (canceled), even ones see the rows in sync.
		state := map[bool]string{true: "canceled", false: "succeeded"}[round%2 == 1]
		for i := 1; i <= n; i++ {
			gw.Set(fmt.Sprintf("pi_%d", i), state)
		}
		lane, err := reconcile.NewLane(reconcile.LaneConfig[string, string]{Job: jc.Job, Lane: "reverse",
			Feed: laneScript{"": {Objects: objs(state), Next: "", End: true}}, Matcher: s, Sink: s, Classifier: reconciletest.Classifier()})
		if err != nil {
			t.Fatal(err)
		}
		open := openFindings(t, s, jc.Job)
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		wg.Add(3)
		go func() {
			defer wg.Done()
			if runCycleErr(jc) < 0 {
				errs <- errors.New("the sweep's cycle failed")
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := lane.RunBatch(ctx); err != nil {
				errs <- fmt.Errorf("lane: %w", err)
			}
		}()
		go func() {
			defer wg.Done()
			for id, f := range open {
				if id[len(id)-1]%3 != 0 {
					continue
				}
				err := s.ResolveFinding(ctx, f.ID, reconcile.Resolution{As: reconcile.ResolutionAccepted, By: "alice"})
				if err != nil && !errors.Is(err, reconcile.ErrAlreadyResolved) {
					errs <- fmt.Errorf("resolve %d: %w", f.ID, err)
				}
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		openFindings(t, s, jc.Job) // fails on two open findings of a record
		resolvedOnce(t, pool, jc.Job)
	}
	// The rows in sync again: one more sweep leaves nothing open.
	for i := 1; i <= n; i++ {
		gw.Set(fmt.Sprintf("pi_%d", i), "succeeded")
	}
	runCycle(t, jc)
	if open := openFindings(t, s, jc.Job); len(open) != 0 {
		t.Fatalf("%d findings open after a last cycle in sync; want none", len(open))
	}
	resolvedOnce(t, pool, jc.Job)
}
