package pgstore_test

import (
	"context"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// A lane step observes rows 9 and 10, which the host deletes while the step commits, as the
// sweep's wrap removes the observations of deleted rows. The lane writes its observations in
// the records' order ("10" before "9"); the wrap must remove them in that order too, whatever
// order its plan visits them in (here the table's, analyzed: 9 first): else it holds 9 and
// waits for 10 while the lane holds 10 and waits for 9, a deadlock, and one of them fails. A
// trigger holds the lane's statement before its write of 9, once it has written 10, until the
// wrap waits.
func TestAWrapRemovingDeletedRowsObservationsTakesTurnsWithALaneObservingThem(t *testing.T) {
	t.Parallel()
	base, _ := newStore(t, pgstore.Config{})
	ctx := context.Background()
	exec(t, base, `INSERT INTO payments (id, external_id, status, updated_at)
		SELECT i, 'pi_' || i, 'paid', now() - interval '1 hour' FROM generate_series(1, 200) i`)
	exec(t, base, `INSERT INTO reconcile_observations (job, record_id, external_state, verified_at)
		SELECT 'sweep', i::text, 'succeeded', now() - interval '1 day' FROM generate_series(1, 200) i`)
	exec(t, base, `ANALYZE reconcile_observations`)
	tu := newTurns(t, base)
	tu.hold("lane", "reconcile_observations", "INSERT", `NEW.record_id = '9'`)
	sweep, lane := tu.store("sweep"), tu.store("lane")

	laneOut := matchedOutcomes(t, lane, reconcile.Outcome{Local: "paid", External: "succeeded", Verified: true,
		Decision: reconcile.Decision{Verdict: reconcile.InSync}})
	b, err := sweep.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}

	tu.lock()
	tu.start("lane", func() error {
		_, err := lane.CommitLane(ctx, reconcile.LaneCommit{Job: "sweep", Lane: "events", Next: "p1", Outcomes: laneOut})
		return err
	})
	exec(t, base, `DELETE FROM payments WHERE id IN (9, 10)`)
	tu.start("sweep", func() error {
		// The cycle's last batch: its rows were all asked; those it committed do not matter here.
		_, err := sweep.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true})
		return err
	})
	tu.unlock()
	tu.bothCommitted()
	var left int
	if err := base.QueryRow(ctx, `SELECT count(*) FROM reconcile_observations WHERE record_id IN ('9', '10')`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d observations of the deleted rows left (%v); want none", left, err)
	}
}

// The wrap closes the open findings of rows 9 and 10, deleted, while a lane step opening
// findings of them (read before the rows were deleted) locks their open findings, in the
// records' order ("10" before "9"). The wrap must lock them in that order too, whatever order
// its plan visits them in (here the table's, analyzed: 9 first): else it holds 9's and waits for
// 10's while the lane holds 10's and waits for 9's, a deadlock. A trigger holds the wrap's
// update of 9's finding, once it is locked, until the lane waits.
func TestAWrapClosingDeletedRowsFindingsTakesTurnsWithALaneOpeningThem(t *testing.T) {
	t.Parallel()
	base, _ := newStore(t, pgstore.Config{})
	ctx := context.Background()
	exec(t, base, `INSERT INTO payments (id, external_id, status, updated_at)
		SELECT i, 'pi_' || i, 'paid', now() - interval '1 hour' FROM generate_series(1, 200) i`)
	exec(t, base, `INSERT INTO reconcile_findings (job, record_id, kind, local_state)
		SELECT 'sweep', i::text, 'a_old', 'paid' FROM generate_series(1, 200) i`)
	exec(t, base, `ANALYZE reconcile_findings`)
	tu := newTurns(t, base)
	tu.hold("sweep", "reconcile_findings", "UPDATE", `OLD.record_id = '9'`)
	sweep, lane := tu.store("sweep"), tu.store("lane")

	laneOut := matchedOutcomes(t, lane, reconcile.Outcome{Local: "paid", External: "failed", Verified: true,
		Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "c_new"}})
	b, err := sweep.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	exec(t, base, `DELETE FROM payments WHERE id IN (9, 10)`)

	tu.lock()
	tu.start("sweep", func() error {
		_, err := sweep.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true})
		return err
	})
	tu.start("lane", func() error {
		_, err := lane.CommitLane(ctx, reconcile.LaneCommit{Job: "sweep", Lane: "events", Next: "p1", Outcomes: laneOut})
		return err
	})
	tu.unlock()
	tu.bothCommitted()
	var open int
	if err := base.QueryRow(ctx, `SELECT count(*) FROM reconcile_findings WHERE record_id IN ('9', '10') AND resolved_at IS NULL`).Scan(&open); err != nil || open != 0 {
		t.Fatalf("%d open findings of the deleted rows (%v); want none", open, err)
	}
}

// matchedOutcomes matches rows 9 and 10 in lane and returns an outcome of each, as judged.
func matchedOutcomes(t *testing.T, lane *pgstore.Store[string], judged reconcile.Outcome) []reconcile.Outcome {
	t.Helper()
	m, err := lane.Match(context.Background(), reconcile.MatchRequest{Job: "sweep", ExternalIDs: []string{"pi_9", "pi_10"}})
	if err != nil || len(m.Rows) != 2 {
		t.Fatalf("matched %d rows (%v); want 2", len(m.Rows), err)
	}
	var out []reconcile.Outcome
	for _, r := range m.Rows {
		o := judged
		o.RecordID, o.ExternalID, o.Version = r.ID, r.ExternalID, r.Version
		out = append(out, o)
	}
	return out
}
