package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// testClock is a clock a test moves.
type testClock struct{ now time.Time }

func (c *testClock) Now() time.Time { return c.now }

func TestStatusOfAJobOverTime(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	s := memstore.New[int64, string](memstore.Options{Now: clock.Now, StaleAfter: 48 * time.Hour})
	for i := int64(1); i <= 4; i++ {
		created := clock.now.Add(-10 * time.Hour)
		if i == 4 {
			created = clock.now.Add(-30 * time.Minute) // new this hour
		}
		s.Put(memstore.Row[int64, string]{Key: i, ExternalID: fmt.Sprint("pi_", i), Local: "paid", CreatedAt: created, UpdatedAt: created})
	}
	gw := reconciletest.NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "canceled", "pi_3": "succeeded", "pi_4": "succeeded"})
	cfg := reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Gateway: gw, Classifier: reconciletest.Classifier(), BatchSize: 10}

	st, err := s.Status(ctx, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	// Never verified: the lag counts from creation.
	if st.Lag != 10*time.Hour || st.Rows != 4 || st.NewRowsPerHour != 1 || !st.Now.Equal(clock.now) {
		t.Fatalf("before any batch: %+v; want lag 10h, 4 rows, 1 new", st)
	}

	clock.now = clock.now.Add(time.Hour)
	if _, err := reconcile.RunBatch(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	verified := clock.now
	clock.now = clock.now.Add(49 * time.Hour)
	st, err = s.Status(ctx, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	if st.Lag != 49*time.Hour || st.CyclesCompleted != 1 || !st.LastCycleCompletedAt.Equal(verified) || st.LastBatchScanned != 4 ||
		st.OpenFindings["paid_locally_not_externally"] != 1 || st.StaleFindings != 1 || !st.OldestOpenFinding.Equal(verified) {
		t.Fatalf("49h after a cycle: %+v; want lag 49h, one cycle, one finding, stale past 48h", st)
	}
	h := reconcile.EvaluateHealth(st, reconcile.HealthPolicy{LagSLO: 48 * time.Hour})
	if h.OK {
		t.Fatalf("health %s; want failing on lag, the cycle's age and the stale finding", h)
	}

	// Another job's view of the same rows is its own.
	if other, err := s.Status(ctx, "other"); err != nil || other.CyclesCompleted != 0 || len(other.OpenFindings) != 0 || other.Lag != 60*time.Hour {
		t.Fatalf("another job: %+v, %v; want nothing of sweep's", other, err)
	}
}

func TestStatusReportsLanesTheirGapsAndFailures(t *testing.T) {
	ctx := context.Background()
	clock := &testClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	s := memstore.New[int64, string](memstore.Options{Now: clock.Now})
	for i := int64(1); i <= 3; i++ {
		s.Put(memstore.Row[int64, string]{Key: i, ExternalID: fmt.Sprint("pi_", i), Local: "paid", UpdatedAt: clock.now.Add(-time.Hour)})
	}
	sweep := reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Classifier: reconciletest.Classifier(), BatchSize: 2,
		Gateway: reconciletest.NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "succeeded", "pi_3": "succeeded"})}
	// A sweep cycle has completed, and the next is under way when the lane restarts with a gap.
	reconciletest.Cycle(t, sweep, 3)
	if rep, err := reconcile.RunBatch(ctx, sweep); err != nil || rep.Wrapped {
		t.Fatalf("first sweep batch: %+v, %v; want it to leave the cycle under way", rep, err)
	}
	step := func(lane string, page reconcile.FeedPage[string]) error {
		l, err := reconcile.NewLane(reconcile.LaneConfig[string, string]{Job: "sweep", Lane: lane, Matcher: s, Sink: s,
			Classifier: reconciletest.Classifier(), Feed: reconciletest.NewFeed(map[string]reconcile.FeedPage[string]{"": page})})
		if err != nil {
			t.Fatal(err)
		}
		_, err = l.RunBatch(ctx)
		return err
	}
	lanes := func() map[string]reconcile.LaneStatus {
		st, err := s.Status(ctx, "sweep")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]reconcile.LaneStatus{}
		for i, l := range st.Lanes {
			if i > 0 && st.Lanes[i-1].Lane >= l.Lane {
				t.Fatalf("lanes %+v are not sorted by name", st.Lanes)
			}
			out[l.Lane] = l
		}
		return out
	}

	if err := step("events", reconcile.FeedPage[string]{Objects: reconciletest.Objects("pi_1", "succeeded"), Next: "e1", End: true, Gap: "the log was trimmed"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordLaneFailure(ctx, "sweep", "reverse", errors.New("stripe: unavailable")); err != nil {
		t.Fatal(err)
	}
	got := lanes()
	ev, rev := got["events"], got["reverse"]
	if len(got) != 2 || ev.PassesCompleted != 1 || !ev.LastEndAt.Equal(clock.now) || !ev.CreatedAt.Equal(clock.now) ||
		ev.GapReason != "the log was trimmed" || !ev.GapOpen || ev.Failing() {
		t.Fatalf("events lane %+v; want one pass and an open gap", ev)
	}
	if !rev.Failing() || rev.LastFailure != "stripe: unavailable" || rev.PassesCompleted != 0 {
		t.Fatalf("reverse lane %+v; want its failure", rev)
	}

	// The gap is covered once a sweep cycle that started after it completes: the cycle under
	// way at the gap does not count, the next one does.
	reconciletest.Cycle(t, sweep, 3)
	if ev := lanes()["events"]; !ev.GapOpen {
		t.Fatalf("after the cycle under way at the gap: %+v; want the gap still open", ev)
	}
	reconciletest.Cycle(t, sweep, 3)
	if ev := lanes()["events"]; ev.GapOpen {
		t.Fatalf("after a whole cycle since the gap: %+v; want it covered", ev)
	}
}
