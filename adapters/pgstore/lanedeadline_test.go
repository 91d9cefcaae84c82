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
