package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// deletingGateway answers "succeeded" for every id, and deletes the row of each id in del
// while it is asked, as a host deleting rows between a batch's read and its commit would.
func deletingGateway(pool *pgxpool.Pool, del ...string) reconcile.GatewayFunc[string] {
	return func(ctx context.Context, id string) (string, error) {
		for _, d := range del {
			if d == id {
				if _, err := pool.Exec(ctx, `DELETE FROM payments WHERE external_id = $1`, id); err != nil {
					return "", err
				}
			}
		}
		return "succeeded", nil
	}
}

func openFindingIDs(t *testing.T, s *pgstore.Store[string], job string) map[string]reconcile.Finding {
	t.Helper()
	fs, err := s.ListFindings(context.Background(), reconcile.FindingQuery{Job: job})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]reconcile.Finding{}
	for _, f := range fs {
		out[f.RecordID] = f
	}
	return out
}

func TestARowDeletedBetweenReadAndCommitLeavesNoFindingCommandOrObservation(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	// Rows 1 and 2 missed their success (a finding and a command each); row 3 is in sync (an
	// observation). Rows 2 and 3 are deleted while the gateway is asked.
	if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, updated_at) VALUES
		(1, 'pi_1', 'pending', now() - interval '1 hour'), (2, 'pi_2', 'pending', now() - interval '1 hour'),
		(3, 'pi_3', 'paid', now() - interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	rep, err := reconcile.RunBatch(ctx, reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s,
		Gateway: deletingGateway(pool, "pi_2", "pi_3"), Classifier: reconciletest.Classifier(), BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if rep.NewFindings != 1 || rep.NewCommands != 1 {
		t.Fatalf("report: %d findings, %d commands; want 1 and 1 (row 1 only)", rep.NewFindings, rep.NewCommands)
	}
	if f := openFindingIDs(t, s, "sweep"); len(f) != 1 || f["1"].ID == 0 {
		t.Fatalf("open findings %v; want row 1's only", f)
	}
	if n := laneCount(t, pool, `SELECT count(*) FROM reconcile_outbox WHERE aggregate_id <> '1'`); n != 0 {
		t.Fatalf("%d commands for deleted rows, want 0", n)
	}
	if n := laneCount(t, pool, `SELECT count(*) FROM reconcile_observations WHERE record_id IN ('2', '3')`); n != 0 {
		t.Fatalf("%d observations of deleted rows, want 0", n)
	}

	// A lane's commit does the same, and still records an object no row refers to.
	res, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "sweep", Lane: "events", Next: "p1", Outcomes: []reconcile.Outcome{
		laneVerified("99", laneMissedSuccess), laneMissing("pi_nowhere")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Findings != 1 || res.Commands != 0 {
		t.Fatalf("lane commit: %+v; want only the missing_locally finding", res)
	}
}

func TestFindingsOfADeletedRowAreResolvedWhenTheCycleWraps(t *testing.T) {
	t.Parallel()
	for _, sharded := range []bool{false, true} {
		name := "unsharded"
		if sharded {
			name = "sharded"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool, s := newStore(t, pgstore.Config{StaleAfter: time.Millisecond})
			ctx := context.Background()
			if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, updated_at)
				SELECT i, 'pi_' || i, 'pending', now() - interval '1 hour' FROM generate_series(1, 4) i`); err != nil {
				t.Fatal(err)
			}
			gw := reconciletest.NewGateway(states(4, "succeeded"))
			cycles := int64(0)
			cycle := func() {
				t.Helper()
				cycles++
				if sharded {
					j := shardtest.NewJob(t, s, pgshard.Config{Job: "sweep", Shards: 2})
					shardtest.RunCycle(t, s, []*pgshard.Job[string]{j}, shardtest.EngineConfig(gw, 2), cycles, 40)
					return
				}
				reconciletest.Cycle(t, reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Gateway: gw,
					Classifier: reconciletest.Classifier(), BatchSize: 2}, 10)
			}
			cycle()
			if _, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "sweep", Lane: "events", Next: "p1",
				Outcomes: []reconcile.Outcome{laneMissing("pi_nowhere")}}); err != nil {
				t.Fatal(err)
			}
			before := openFindingIDs(t, s, "sweep")
			if len(before) != 5 {
				t.Fatalf("open findings %v; want rows 1-4 and pi_nowhere", before)
			}
			if _, err := pool.Exec(ctx, `DELETE FROM payments WHERE id IN (2, 3)`); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
			st, err := s.Status(ctx, "sweep")
			if err != nil {
				t.Fatal(err)
			}
			if st.OpenFindings["missed_success"] != 2 || st.StaleFindings != 3 {
				t.Fatalf("status after deleting rows 2 and 3: open %v, stale %d; want 2 missed_success and 3 stale (rows 1, 4, pi_nowhere)",
					st.OpenFindings, st.StaleFindings)
			}

			cycle()
			after := openFindingIDs(t, s, "sweep")
			if len(after) != 3 || after["1"].ID == 0 || after["4"].ID == 0 || after["pi_nowhere"].ID == 0 {
				t.Fatalf("open findings after the next cycle: %v; want rows 1 and 4 and pi_nowhere", after)
			}
			for _, id := range []string{"2", "3"} {
				d, err := s.Finding(ctx, before[id].ID)
				if err != nil {
					t.Fatal(err)
				}
				last := d.History[len(d.History)-1]
				if d.Resolution != reconcile.ResolutionRowDeleted || d.ResolvedBy != reconcile.ResolvedByReconciler ||
					last.Action != "resolved" || last.Resolution != reconcile.ResolutionRowDeleted || last.Actor != reconcile.ResolvedByReconciler {
					t.Fatalf("finding of deleted row %s: %+v; want resolved as %s by %s, in its history", id, d, reconcile.ResolutionRowDeleted, reconcile.ResolvedByReconciler)
				}
			}
			if n := laneCount(t, pool, `SELECT count(*) FROM reconcile_observations WHERE record_id IN ('2', '3')`); n != 0 {
				t.Fatalf("%d observations of deleted rows after the cycle, want 0", n)
			}
			if n := laneCount(t, pool, `SELECT count(*) FROM reconcile_observations WHERE record_id IN ('1', '4')`); n != 2 {
				t.Fatalf("%d observations of rows 1 and 4, want 2", n)
			}
		})
	}
}
