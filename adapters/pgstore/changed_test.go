package pgstore_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// Rows changed between a batch's read and its commit, by writers of their own: the commit
// judges only rows that are as they were read.

// layouts are the two places observations are kept, each with its host table: with
// observations in host columns, an updated_at trigger stamps every update that does not set
// updated_at itself, the reconciler's own writes included.
var layouts = []struct {
	name string
	cfg  pgstore.Config
	ddl  []string
}{
	{"own table", pgstore.Config{}, []string{paymentsDDL}},
	{"host columns", pgstore.Config{Observations: pgstore.ObserveInHostColumns}, shardtest.HostColumnsDDL},
}

// verifiedAt is row id's last-verified time in either layout; zero if never.
func verifiedAt(t testing.TB, pool *pgxpool.Pool, hostColumns bool, id int64) time.Time {
	t.Helper()
	q := `SELECT max(verified_at) FROM reconcile_observations WHERE record_id = $1`
	if hostColumns {
		q = `SELECT last_reconciled_at FROM payments WHERE id::text = $1`
	}
	var at *time.Time
	if err := pool.QueryRow(context.Background(), q, strconv.FormatInt(id, 10)).Scan(&at); err != nil && err != pgx.ErrNoRows {
		t.Fatal(err)
	}
	if at == nil {
		return time.Time{}
	}
	return *at
}

// blockedBy waits until some session waits on a lock that backend pid holds, or done is closed.
func blockedBy(t testing.TB, pool *pgxpool.Pool, pid int, done <-chan struct{}) {
	t.Helper()
	for {
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		select {
		case <-done:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// A repair commits while the next batch's commit runs: it changed the row and is resolving its
// finding when the commit gets there. The commit waits for it, then sees the row changed: no
// second finding, no second command, no verification.
func TestARepairCommittingDuringTheCommitLeavesOneFindingAndOneCommand(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			pool, s := newStore(t, l.cfg, l.ddl...)
			ctx := context.Background()
			exec(t, pool, `INSERT INTO payments (id, external_id, status, updated_at) VALUES (1, 'pi_1', 'pending', now() - interval '1 hour')`)
			gw := reconciletest.NewGateway(map[string]string{"pi_1": "succeeded"})
			cfg := reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Gateway: gw, Classifier: reconciletest.Classifier(), BatchSize: 10}
			reconciletest.Cycle(t, cfg, 3)
			first := reconciletest.Findings(t, s, "sweep")
			if len(first) != 1 {
				t.Fatalf("findings %+v; want row 1's missed success", first)
			}
			before := verifiedAt(t, pool, l.cfg.Observations == pgstore.ObserveInHostColumns, 1)

			// While the next batch asks the gateway, the repair begins: it marks the row paid
			// and resolves the finding, and commits once the batch's commit waits on it.
			repair, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer repair.Rollback(ctx)
			pids := make(chan int, 1)
			cfg.Gateway = reconcile.GatewayFunc[string](func(ctx context.Context, id string) (string, error) {
				var pid int
				if err := repair.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
					return "", err
				}
				pids <- pid
				if _, err := repair.Exec(ctx, `UPDATE payments SET status = 'paid', updated_at = now() - interval '1 hour' WHERE id = 1`); err != nil {
					return "", err
				}
				if err := s.ResolveFindingIn(ctx, repair, first[0].ID, reconcile.Resolution{As: reconcile.ResolutionRepaired, By: reconcile.ResolvedByReconciler}); err != nil {
					return "", err
				}
				return gw.Fetch(ctx, id)
			})
			done := make(chan struct{})
			var rep reconcile.Report
			var runErr error
			go func() {
				defer close(done)
				rep, runErr = reconcile.RunBatch(ctx, cfg)
			}()
			select {
			case pid := <-pids:
				blockedBy(t, pool, pid, done)
			case <-done:
				t.Fatalf("the batch ended before its gateway call: %v", runErr)
			}
			if err := repair.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			<-done
			if runErr != nil {
				t.Fatal(runErr)
			}
			fs := reconciletest.Findings(t, s, "sweep")
			if len(fs) != 1 || fs[0].Open() || rep.NewFindings != 0 || rep.Changed != 1 {
				t.Fatalf("findings %+v, report %+v; want the repaired one alone, the row counted as changed", fs, rep)
			}
			if cmds := commands(t, pool, "sweep"); len(cmds) != 1 {
				t.Fatalf("commands %+v; want the first one alone", cmds)
			}
			if at := verifiedAt(t, pool, l.cfg.Observations == pgstore.ObserveInHostColumns, 1); !at.Equal(before) {
				t.Fatalf("row 1 changed before the commit, yet its last-verified time moved from %v to %v", before, at)
			}
		})
	}
}

// readHook is a Source that runs fn once after its first read.
type readHook struct {
	reconcile.Source[string]
	once sync.Once
	fn   func()
}

func (r *readHook) Read(ctx context.Context, req reconcile.ReadRequest) (reconcile.Batch[string], error) {
	b, err := r.Source.Read(ctx, req)
	r.once.Do(r.fn)
	return b, err
}

// With observations in host columns, the reconciler's own write is not a change: a lane that
// verifies a row after the sweep's batch read it, and before the batch asks the gateway, leaves
// the sweep's judgment of that row (on a newer answer) standing. A host's write is a change.
func TestTheReconcilersOwnWriteIsNotAChange(t *testing.T) {
	t.Parallel()
	l := layouts[1]
	pool, s := newStore(t, l.cfg, l.ddl...)
	ctx := context.Background()
	exec(t, pool, `INSERT INTO payments (id, external_id, status, updated_at)
		SELECT i, 'pi_' || i, 'pending', now() - interval '1 hour' FROM generate_series(1, 3) i`)
	gw := reconciletest.NewGateway(states(3, "succeeded"))
	feed := reconciletest.NewFeed(map[string]reconcile.FeedPage[string]{"": {Objects: reconciletest.Objects("pi_1", "succeeded", "pi_2", "succeeded"), Next: "p1"}})
	lane := reconciletest.LaneConfig(t, fixture{pool, s}, "sweep", "reverse", feed)
	lane.Grace = -1
	src := &readHook{Source: s, fn: func() {
		// Rows 1 and 2 verified by the lane, which opens their findings; row 3 changed by the host.
		reconciletest.Step(t, lane)
		exec(t, pool, `UPDATE payments SET status = 'paid', updated_at = now() - interval '1 hour' WHERE id = 3`)
	}}
	cfg := reconcile.Config[string, string]{Job: "sweep", Source: src, Sink: s, BatchSize: 10, Classifier: reconciletest.Classifier(),
		Gateway: gw}
	rep, err := reconcile.RunBatch(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Changed != 1 {
		t.Fatalf("report %+v; want row 3 alone changed: the lane's own writes of rows 1 and 2 are not changes", rep)
	}
	var swept int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE id IN (1, 2) AND last_reconciled_at > (SELECT max(detected_at) FROM reconcile_findings)`).Scan(&swept); err != nil || swept != 2 {
		t.Fatalf("%d of rows 1 and 2 verified by the sweep after the lane (%v); want both", swept, err)
	}
	if fs, cmds := reconciletest.Findings(t, s, "sweep"), commands(t, pool, "sweep"); len(fs) != 2 || len(cmds) != 2 {
		t.Fatalf("findings %+v, commands %+v; want the lane's two, the sweep's judgments of the same drifts deduplicated", fs, cmds)
	}
}

// Status's lag counts a row the commit left unverified because it changed since its read:
// its lag mark's floor is that row's older time, not the commit's. Batches of 2,048 rows make a
// mark each, more than Status reads exactly.
func TestStatusCountsARowChangedBeforeItsCommitAsUnverified(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{}, paymentsDDL, `CREATE INDEX ON payments (created_at)`)
	const batch = 2048
	insertPayments(t, pool, ids(1, 5*batch)...)
	for !sweepStep(t, s, "sweep", batch, nil) {
	}
	shiftBack(t, pool, 10*time.Hour)
	exec(t, pool, `UPDATE reconcile_observations SET verified_at = verified_at - interval '10 hours' WHERE record_id = '5'`)

	// The next cycle's first batch: row 5 changes between its read and the commit.
	ctx := context.Background()
	b, err := s.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: batch})
	if err != nil {
		t.Fatal(err)
	}
	exec(t, pool, `UPDATE payments SET status = 'failed' WHERE id = 5`)
	c := reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Next: b.Records[len(b.Records)-1].Key}
	for _, r := range b.Records {
		c.Outcomes = append(c.Outcomes, reconcile.Outcome{RecordID: r.ID, ExternalID: r.ExternalID, Local: r.Local, External: "succeeded",
			Version: r.Version, Verified: true, Decision: reconcile.Decision{Verdict: reconcile.InSync}})
	}
	res, err := s.Commit(ctx, c)
	if err != nil || res.Changed != 1 {
		t.Fatalf("commit: %+v, %v; want row 5 changed", res, err)
	}
	if st := (sweeper{t: t, pool: pool, store: s, job: "sweep", batch: batch}).agree("row 5 left unverified"); st.Lag < 19*time.Hour {
		t.Fatalf("Status lag %v; row 5, left unverified, was verified 20 hours ago", st.Lag)
	}
}

// A shard's commit judges only rows that are as they were read, like the store's.
func TestAShardCommitLeavesARowChangedSinceItsReadAlone(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	exec(t, pool, `INSERT INTO payments (id, external_id, status, updated_at)
		SELECT i, 'pi_' || i, 'pending', now() - interval '1 hour' FROM generate_series(1, 8) i`)
	gw := reconciletest.NewGateway(states(8, "succeeded"))
	j := shardtest.NewJob(t, s, pgshard.Config{Job: "sweep", Shards: 2})
	shardtest.RunCycle(t, s, []*pgshard.Job[string]{j}, shardtest.EngineConfig(gw, 10), 1, 20)
	if fs := reconciletest.Findings(t, s, "sweep"); len(fs) != 8 {
		t.Fatalf("findings %+v; want one for each row", fs)
	}
	// In the next cycle, every row's repair is applied while its shard asks the gateway.
	cfg := shardtest.EngineConfig(reconcile.GatewayFunc[string](func(ctx context.Context, id string) (string, error) {
		n, _ := strconv.Atoi(id[len("pi_"):])
		exec(t, pool, `UPDATE payments SET status = 'paid' WHERE id = $1`, n)
		for _, f := range reconciletest.Findings(t, s, "sweep") {
			if f.RecordID == strconv.Itoa(n) && f.Open() {
				if err := s.ResolveFinding(ctx, f.ID, reconcile.Resolution{As: reconcile.ResolutionRepaired, By: reconcile.ResolvedByReconciler}); err != nil {
					return "", err
				}
			}
		}
		return gw.Fetch(ctx, id)
	}), 10)
	ticks := shardtest.RunCycle(t, s, []*pgshard.Job[string]{j}, cfg, 2, 20)
	changed := 0
	for _, tk := range ticks {
		changed += tk.Tick.Changed
	}
	if fs := reconciletest.Findings(t, s, "sweep"); len(fs) != 8 || changed != 8 {
		t.Fatalf("findings %+v, %d rows changed; want the first cycle's 8 alone, every row changed since its read", fs, changed)
	}
	if n := laneCount(t, pool, `SELECT count(*) FROM reconcile_outbox`); n != 8 {
		t.Fatalf("%d commands; want the first cycle's 8", n)
	}
}
