package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

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
	app := func(who string) string { return fmt.Sprintf("observeorder %s %p", who, t) }
	storeAs := func(who string) *pgstore.Store[string] {
		pc := base.Config()
		pc.ConnConfig.RuntimeParams["application_name"] = app(who)
		pc.ConnConfig.RuntimeParams["deadlock_timeout"] = "100ms"
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		s, err := pgstore.New(pool, pgstore.Config{Table: "payments"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sweep, lane := storeAs("sweep"), storeAs("lane")

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

	holder, err := base.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	if _, err := holder.Exec(ctx, `SELECT 1 FROM reconcile_observations WHERE job = 'sweep' AND record_id = '10' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	// waiting returns once who's session waits for a lock.
	waiting := func(who string) {
		t.Helper()
		for {
			var n int
			if err := base.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
				app(who)).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	sweepErr, laneErr := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := sweep.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Next: b.Records[len(b.Records)-1].Key, Outcomes: sweepOut})
		sweepErr <- err
	}()
	waiting("sweep")
	go func() {
		_, err := lane.CommitLane(ctx, reconcile.LaneCommit{Job: "sweep", Lane: "events", Next: "p1", Outcomes: laneOut})
		laneErr <- err
	}()
	waiting("lane")
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for who, ch := range map[string]chan error{"sweep": sweepErr, "lane": laneErr} {
		if err := <-ch; err != nil {
			var pe *pgconn.PgError
			t.Errorf("the %s's commit: %v (deadlock: %v); want both to commit in turn", who, err, errors.As(err, &pe) && pe.Code == "40P01")
		}
	}
	var fresh int
	if err := base.QueryRow(ctx, `SELECT count(*) FROM reconcile_observations WHERE job = 'sweep' AND verified_at > now() - interval '1 hour'`).
		Scan(&fresh); err != nil || fresh != 38 {
		t.Fatalf("%d observations written (%v); want 38, the batch's 20 and the lane's 18 others", fresh, err)
	}
}
