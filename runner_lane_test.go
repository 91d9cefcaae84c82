package reconcile_test

import (
	"context"
	"errors"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/leaktest"
)

// A host told of a lane's tick must be able to tell which lane it was, as a batch's Report
// can: the events lane and the reverse scan record under the sweep's job.
func TestATickOfALaneNamesTheLane(t *testing.T) {
	t.Parallel()
	lane := func(feed reconcile.Feed[string], sink *laneSink) *reconcile.Lane[string, string] {
		return newLane(t, laneConfig(feed, &laneMatcher{}, sink))
	}
	tests := []struct {
		name    string
		lane    *reconcile.Lane[string, string]
		wantErr bool
	}{
		{"a step that reaches the feed's end", lane(lanePage(1, reconcile.FeedPage[string]{End: true}), &laneSink{}), false},
		{"a step that fails", lane(laneFailing(errors.New("stripe: boom")), &laneSink{}), true},
		{"a step that lost the race", lane(lanePage(1, reconcile.FeedPage[string]{End: true}), &laneSink{commitErr: reconcile.ErrConcurrentRun}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tick, err := reconcile.RunTick(context.Background(), tt.lane, reconcile.TickBudget{})
			if (err != nil) != tt.wantErr || tick.Job != "payments" || tick.Lane != "events" {
				t.Fatalf("RunTick = %+v, %v; want job payments, lane events", tick, err)
			}
		})
	}
}

func TestTheRunnerTellsOnTickTheLaneOfItsTick(t *testing.T) {
	defer leaktest.VerifyNone(t)
	events := newLane(t, laneConfig(lanePage(1, reconcile.FeedPage[string]{End: true}), &laneMatcher{}, &laneSink{}))
	k := newTicks(func(k *ticks) bool { return len(k.ticks) > 0 })
	k.runUntil(t, reconcile.RunnerConfig{OnTick: k.onTick, Jobs: []reconcile.RunnerJob{
		{Name: "payments-events", Batches: events, Jitter: -1, Interval: 1}}})
	e := k.of("payments-events")[0]
	if e.Report.Job != "payments" || e.Report.Lane != "events" || !e.Report.Wrapped {
		t.Fatalf("OnTick was told %+v; want the report of lane events of job payments, wrapped", e.Report)
	}
}
