package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// A lane step that misses its own deadline is a failure, for health too, even when what held
// it up is the lane's row, locked by another session (a step of the same lane stuck in its
// commit, say): the failure is recorded all the same, and health's lane check fails. A step
// stopped by the host's shutdown is not a failure.
func TestALaneStepThatMissesItsDeadlineOnALockedLaneRowFailsHealth(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	insertPayments(t, pool, 1, 2)
	ctx := context.Background()
	feed := reconciletest.NewFeed(map[string]reconcile.FeedPage[string]{
		"":   {Objects: reconciletest.Objects("pi_1", "succeeded"), Next: "p1"},
		"p1": {Objects: reconciletest.Objects("pi_2", "succeeded"), Next: "p2", End: true},
	})
	lane, err := reconcile.NewLane(reconcile.LaneConfig[string, string]{Job: "sweep", Lane: "events", Feed: feed,
		Matcher: s, Sink: s, Classifier: reconciletest.Classifier()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lane.RunBatch(ctx); err != nil {
		t.Fatal(err)
	}
	laneHealth := func() reconcile.Check {
		t.Helper()
		st, err := s.Status(ctx, "sweep")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range reconcile.EvaluateHealth(st, reconcile.HealthPolicy{}).Checks {
			if c.Name == "lane:events" {
				return c
			}
		}
		t.Fatalf("status %+v: no check of lane events", st)
		return reconcile.Check{}
	}
	if c := laneHealth(); !c.OK {
		t.Fatalf("after a step: %+v", c)
	}

	// Another session holds the lane's row: every commit of the lane waits for it.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM reconcile_lanes WHERE job = 'sweep' AND lane = 'events' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	// The host shuts down while a step waits: a cancellation, not a failure.
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(200*time.Millisecond, cancel)
	if _, err := lane.RunBatch(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("step cancelled by the host: %v; want context.Canceled", err)
	}
	if c := laneHealth(); !c.OK {
		t.Fatalf("after a step cancelled by the host's shutdown: %+v; want healthy", c)
	}

	// The host gives each step a fifth of a second: the step misses its deadline at its commit.
	dctx, cancelStep := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelStep()
	if _, err := lane.RunBatch(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("step over a locked lane row: %v; want context.DeadlineExceeded", err)
	}
	if c := laneHealth(); c.OK || !strings.Contains(c.Reason, "failed") {
		t.Fatalf("after a step that missed its deadline: %+v; want the lane failing", c)
	}
}

// Lane failures are recorded apart from the lanes' rows: a lane that has only failed is listed
// all the same, failing since its first failure, and a failure that an older release wrote on
// the lane's row is reported when it is the later one.
func TestLaneFailuresRecordedApartAreReadWithThoseOnTheLanesRows(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	if err := s.RecordLaneFailure(ctx, "sweep", "reverse", errors.New("stripe: unavailable")); err != nil {
		t.Fatal(err)
	}
	// An older release recorded its failure on the row of the events lane, after this one's.
	if err := s.RecordLaneFailure(ctx, "sweep", "events", errors.New("new release: first")); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO reconcile_lanes (job, lane, last_run_at, last_failure_at, last_failure)
		VALUES ('sweep', 'events', now() - interval '1 hour', clock_timestamp() + interval '1 second', 'old release: later')`); err != nil {
		t.Fatal(err)
	}
	st, err := s.Status(ctx, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Lanes) != 2 || st.Lanes[0].Lane != "events" || st.Lanes[1].Lane != "reverse" {
		t.Fatalf("lanes %+v; want events and reverse", st.Lanes)
	}
	ev, rev := st.Lanes[0], st.Lanes[1]
	if !rev.Failing() || rev.LastFailure != "stripe: unavailable" || rev.CreatedAt.IsZero() || !rev.LastRunAt.IsZero() {
		t.Errorf("reverse lane %+v; want it failing since its first failure, never run", rev)
	}
	if !ev.Failing() || ev.LastFailure != "old release: later" {
		t.Errorf("events lane %+v; want the older release's later failure", ev)
	}
	if err := s.RecordLaneFailure(ctx, "sweep", "events", errors.New("new release: latest")); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE reconcile_lane_failures SET failed_at = clock_timestamp() + interval '2 seconds' WHERE lane = 'events'`); err != nil {
		t.Fatal(err)
	}
	if st, err = s.Status(ctx, "sweep"); err != nil || st.Lanes[0].LastFailure != "new release: latest" {
		t.Errorf("lanes %+v, %v; want the events lane's latest failure, this release's", st.Lanes, err)
	}
}
