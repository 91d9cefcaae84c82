package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// A sweep's commit and a lane's, both in sync (no record locks: no findings), upsert the
// observations of records 9 and 10 at once. The sweep writes its observations in the records'
// order ("10" before "9"); the lane's observations statement must write them in that order
// too, whatever plan the server makes of it: with the host table analyzed (1,000 rows), a lane
// step of 20 rows is planned, with the server's defaults, as a scan of the host table probing a
// hash of the step's rows, which writes in the table's order (9 before 10). In any order but
// the records' the two commits can wait on each other: a deadlock, one of them failed. A third
// session holds observation 10 until both wait, so that the sweep has taken 1 and waits at 10
// when the lane takes 9.
func TestASweepAndALaneObservingTheSameRecordsTakeTurnsWhateverTheLanesPlan(t *testing.T) {
	t.Parallel()
	base, _ := newStore(t, pgstore.Config{})
	ctx := context.Background()
	exec(t, base, `INSERT INTO payments (id, external_id, status, updated_at)
		SELECT i, 'pi_' || i, 'paid', now() - interval '1 hour' FROM generate_series(1, 1000) i`)
	exec(t, base, `ANALYZE payments`)
	exec(t, base, `INSERT INTO reconcile_observations (job, record_id, external_state, verified_at)
		SELECT 'sweep', i::text, 'succeeded', now() - interval '1 day' FROM generate_series(1, 1000) i`)
	tu := newTurns(t, base)
	sweep, lane := tu.store("sweep"), tu.store("lane")

	b, err := sweep.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 20})
	if err != nil || len(b.Records) != 20 {
		t.Fatalf("read %d rows (%v); want 20", len(b.Records), err)
	}
	inSync := func(r reconcile.Record[string]) reconcile.Outcome {
		return reconcile.Outcome{RecordID: r.ID, ExternalID: r.ExternalID, Local: "paid", External: "succeeded", Verified: true,
			Version: r.Version, Decision: reconcile.Decision{Verdict: reconcile.InSync}}
	}
	var sweepOut, laneOut []reconcile.Outcome
	for _, r := range b.Records {
		sweepOut = append(sweepOut, inSync(r))
	}
	// The lane's step: rows 9 and 10, and 18 rows the sweep's batch does not hold.
	ext := []string{"pi_9", "pi_10"}
	for i := 500; i < 518; i++ {
		ext = append(ext, fmt.Sprintf("pi_%d", i))
	}
	m, err := lane.Match(ctx, reconcile.MatchRequest{Job: "sweep", ExternalIDs: ext})
	if err != nil || len(m.Rows) != 20 {
		t.Fatalf("matched %d rows (%v); want 20", len(m.Rows), err)
	}
	for _, r := range m.Rows {
		laneOut = append(laneOut, inSync(r))
	}

	tu.lockWith(`SELECT 1 FROM reconcile_observations WHERE job = 'sweep' AND record_id = '10' FOR UPDATE`)
	tu.start("sweep", func() error {
		_, err := sweep.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Next: b.Records[len(b.Records)-1].Key, Outcomes: sweepOut})
		return err
	})
	tu.start("lane", func() error {
		_, err := lane.CommitLane(ctx, reconcile.LaneCommit{Job: "sweep", Lane: "events", Next: "p1", Outcomes: laneOut})
		return err
	})
	tu.unlock()
	tu.bothCommitted()
	var fresh int
	if err := base.QueryRow(ctx, `SELECT count(*) FROM reconcile_observations WHERE job = 'sweep' AND verified_at > now() - interval '1 hour'`).
		Scan(&fresh); err != nil || fresh != 38 {
		t.Fatalf("%d observations written (%v); want 38, the batch's 20 and the lane's 18 others", fresh, err)
	}
}
