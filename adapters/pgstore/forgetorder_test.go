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
	app := func(who string) string { return fmt.Sprintf("forgetorder %s %p", who, t) }
	var key int64
	if err := base.QueryRow(ctx, `SELECT hashtext(current_schema())`).Scan(&key); err != nil {
		t.Fatal(err)
	}
	exec(t, base, fmt.Sprintf(`CREATE FUNCTION hold_lane() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF current_setting('application_name') = %s AND NEW.record_id = '9' THEN
				PERFORM pg_advisory_lock(%d); PERFORM pg_advisory_unlock(%d);
			END IF;
			RETURN NEW;
		END $$`, quoteLiteral(app("lane")), key, key))
	exec(t, base, `CREATE TRIGGER hold_lane BEFORE INSERT ON reconcile_observations FOR EACH ROW EXECUTE FUNCTION hold_lane()`)
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

	m, err := lane.Match(ctx, reconcile.MatchRequest{Job: "sweep", ExternalIDs: []string{"pi_9", "pi_10"}})
	if err != nil || len(m.Rows) != 2 {
		t.Fatalf("matched %d rows (%v); want 2", len(m.Rows), err)
	}
	var laneOut []reconcile.Outcome
	for _, r := range m.Rows {
		laneOut = append(laneOut, reconcile.Outcome{RecordID: r.ID, ExternalID: r.ExternalID, Local: "paid", External: "succeeded",
			Verified: true, Version: r.Version, Decision: reconcile.Decision{Verdict: reconcile.InSync}})
	}
	b, err := sweep.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}

	holder, err := base.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		t.Fatal(err)
	}
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
	laneErr, sweepErr := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := lane.CommitLane(ctx, reconcile.LaneCommit{Job: "sweep", Lane: "events", Next: "p1", Outcomes: laneOut})
		laneErr <- err
	}()
	waiting("lane")
	exec(t, base, `DELETE FROM payments WHERE id IN (9, 10)`)
	go func() {
		// The cycle's last batch: its rows were all asked; those it committed do not matter here.
		_, err := sweep.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true})
		sweepErr <- err
	}()
	waiting("sweep")
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
		t.Fatal(err)
	}
	for who, ch := range map[string]chan error{"lane": laneErr, "sweep": sweepErr} {
		if err := <-ch; err != nil {
			var pe *pgconn.PgError
			t.Errorf("the %s's commit: %v (deadlock: %v); want both to commit in turn", who, err, errors.As(err, &pe) && pe.Code == "40P01")
		}
	}
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
	app := func(who string) string { return fmt.Sprintf("forgetorder findings %s %p", who, t) }
	var key int64
	if err := base.QueryRow(ctx, `SELECT hashtext(current_schema())`).Scan(&key); err != nil {
		t.Fatal(err)
	}
	exec(t, base, fmt.Sprintf(`CREATE FUNCTION hold_wrap() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF current_setting('application_name') = %s AND OLD.record_id = '9' THEN
				PERFORM pg_advisory_lock(%d); PERFORM pg_advisory_unlock(%d);
			END IF;
			RETURN NEW;
		END $$`, quoteLiteral(app("sweep")), key, key))
	exec(t, base, `CREATE TRIGGER hold_wrap BEFORE UPDATE ON reconcile_findings FOR EACH ROW EXECUTE FUNCTION hold_wrap()`)
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

	m, err := lane.Match(ctx, reconcile.MatchRequest{Job: "sweep", ExternalIDs: []string{"pi_9", "pi_10"}})
	if err != nil || len(m.Rows) != 2 {
		t.Fatalf("matched %d rows (%v); want 2", len(m.Rows), err)
	}
	var laneOut []reconcile.Outcome
	for _, r := range m.Rows {
		laneOut = append(laneOut, reconcile.Outcome{RecordID: r.ID, ExternalID: r.ExternalID, Local: "paid", External: "failed",
			Verified: true, Version: r.Version, Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "c_new"}})
	}
	b, err := sweep.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	exec(t, base, `DELETE FROM payments WHERE id IN (9, 10)`)

	holder, err := base.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		t.Fatal(err)
	}
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
	laneErr, sweepErr := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := sweep.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true})
		sweepErr <- err
	}()
	waiting("sweep")
	go func() {
		_, err := lane.CommitLane(ctx, reconcile.LaneCommit{Job: "sweep", Lane: "events", Next: "p1", Outcomes: laneOut})
		laneErr <- err
	}()
	waiting("lane")
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
		t.Fatal(err)
	}
	for who, ch := range map[string]chan error{"lane": laneErr, "sweep": sweepErr} {
		if err := <-ch; err != nil {
			var pe *pgconn.PgError
			t.Errorf("the %s's commit: %v (deadlock: %v); want both to commit in turn", who, err, errors.As(err, &pe) && pe.Code == "40P01")
		}
	}
	var open int
	if err := base.QueryRow(ctx, `SELECT count(*) FROM reconcile_findings WHERE record_id IN ('9', '10') AND resolved_at IS NULL`).Scan(&open); err != nil || open != 0 {
		t.Fatalf("%d open findings of the deleted rows (%v); want none", open, err)
	}
}
