package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// A sweep's commit on an older answer and a lane's on a newer one, of the same record, the
// first held after its observations statement while the second waits on it, in both orders,
// with and without a finding open before: the newer answer's judgment stands (its observation
// recorded, the older's finding never opened or left open; a finding the older commit held
// locked closed by the next verified judgment), each finding resolved once.
func TestAnOlderAnswerNeverOverturnsANewerOneWhicheverCommitsFirst(t *testing.T) {
	t.Parallel()
	for _, sweepFirst := range []bool{true, false} {
		for _, open := range []bool{true, false} {
			name := map[bool]string{true: "sweep first", false: "lane first"}[sweepFirst] +
				map[bool]string{true: ", a finding open", false: ""}[open]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				pool, s := newStore(t, pgstore.Config{})
				ctx := context.Background()
				var b reconcile.Batch[string]
				if open {
					b, _ = openDrift(t, pool, s)
				} else {
					b = readOne(t, pool, s)
				}
				v := b.Records[0].Version
				// After the first cycle's verification (its commit's time); the lane's answer,
				// capped by its commit's clock, is later still.
				older := time.Now()
				sweep := func() (reconcile.CommitResult, error) {
					return s.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true, Outcomes: []reconcile.Outcome{
						{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "canceled", Verified: true, VerifiedAt: older, Version: v,
							Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "canceled_externally"}}}})
				}
				lane := func() (reconcile.CommitResult, error) {
					return s.CommitLane(ctx, reconcile.LaneCommit{Job: "sweep", Lane: "events", Next: "p1", Outcomes: []reconcile.Outcome{
						{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "pending", Verified: true, VerifiedAt: older.Add(30 * time.Second),
							Version: v, Decision: reconcile.Decision{Verdict: reconcile.InSync}}}})
				}
				first, second := sweep, lane
				if !sweepFirst {
					first, second = lane, sweep
				}
				holder, release := pauseAfterObserve(t, pool)
				firstDone, secondDone := make(chan struct{}), make(chan struct{})
				var firstErr, secondErr error
				go func() { defer close(firstDone); _, firstErr = first() }()
				blockedBy(t, pool, holder, firstDone)
				var pid int
				if err := pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, holder).Scan(&pid); err != nil {
					t.Fatalf("the first commit does not wait after its observations statement: %v (%v)", err, firstErr)
				}
				go func() { defer close(secondDone); _, secondErr = second() }()
				blockedBy(t, pool, pid, secondDone)
				release()
				<-firstDone
				<-secondDone
				if firstErr != nil || secondErr != nil {
					t.Fatal(firstErr, secondErr)
				}
				fs := openFindings(t, s, "sweep")
				if !sweepFirst && open {
					// The sweep's commit, waiting to observe, had locked the open finding
					// (LockFindings) before the lane's findings statement came to it: the lane
					// left it to the next verified judgment (see reconcile.Sink), and the
					// sweep's older answer judged nothing.
					if len(fs) == 1 && fs["1"].Kind == obsDrift.Kind {
						cur, err := s.ReadLane(ctx, "sweep", "events")
						if err != nil {
							t.Fatal(err)
						}
						if _, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "sweep", Lane: "events", Cursor: cur, Next: "p2", Outcomes: []reconcile.Outcome{
							{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "pending", Verified: true, Version: v,
								Decision: reconcile.Decision{Verdict: reconcile.InSync}}}}); err != nil {
							t.Fatal(err)
						}
						fs = openFindings(t, s, "sweep")
					}
				}
				if len(fs) != 0 {
					t.Errorf("open findings %v; want none: the newer answer is in sync", fs)
				}
				if !observedAs(t, pool, "pending") {
					t.Error("the observation is not the newer answer's")
				}
				resolvedOnce(t, pool, "sweep")
			})
		}
	}
}
