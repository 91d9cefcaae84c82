package reconcile_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// stopWays are the ways a step's context can end while its gateway call waits: a deadline the
// host or a Runner gave the step, which is the step's failure (whatever held it up holds up
// every step), and a cancellation, which is the host stopping and no failure of the job.
var stopWays = []struct {
	name   string
	failed bool
	// stop returns the step's context; the gateway calls end() when asked, then waits for the
	// context to end.
	stop func() (ctx context.Context, end func(), release func())
}{
	{"the step's deadline", true, func() (context.Context, func(), func()) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		return ctx, func() {}, cancel
	}},
	{"a deadline with a cause", true, func() (context.Context, func(), func()) {
		ctx, cancel := context.WithDeadlineCause(context.Background(), time.Now().Add(50*time.Millisecond), errors.New("tick over"))
		return ctx, func() {}, cancel
	}},
	{"the host cancelling", false, func() (context.Context, func(), func()) {
		ctx, cancel := context.WithCancel(context.Background())
		return ctx, cancel, cancel
	}},
	{"the host cancelling with a cause", false, func() (context.Context, func(), func()) {
		ctx, cancel := context.WithCancelCause(context.Background())
		return ctx, func() { cancel(errors.New("shutting down")) }, func() { cancel(nil) }
	}},
	{"the host cancelling a context that also has a deadline", false, func() (context.Context, func(), func()) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		return ctx, cancel, cancel
	}},
}

// waitingGateway calls end when asked, then waits for ctx to end.
func waitingGateway(end func()) reconcile.Gateway[string] {
	return reconcile.GatewayFunc[string](func(ctx context.Context, _ string) (string, error) {
		end()
		<-ctx.Done()
		return "", ctx.Err()
	})
}

func TestASweepBatchThatMissesItsDeadlineIsAFailureAndACancelledOneIsNot(t *testing.T) {
	for _, way := range stopWays {
		t.Run(way.name, func(t *testing.T) {
			s := newStore(newClock(), 3, always("paid"))
			ctx, end, release := way.stop()
			defer release()
			if _, err := reconcile.RunBatch(ctx, config(s, waitingGateway(end))); err == nil {
				t.Fatal("RunBatch succeeded; want its context's error")
			}
			st, err := s.Status(context.Background(), job)
			if err != nil {
				t.Fatal(err)
			}
			h := reconcile.EvaluateHealth(st, reconcile.HealthPolicy{})
			if failed := !st.LastFailureAt.IsZero(); failed != way.failed {
				t.Fatalf("failure recorded: %t (%q); want %t", failed, st.LastFailure, way.failed)
			}
			if check := lastAttempt(h); check.OK == way.failed {
				t.Fatalf("last_attempt %+v; want ok %t", check, !way.failed)
			}
		})
	}
}

func TestALaneStepThatMissesItsDeadlineIsAFailureAndACancelledOneIsNot(t *testing.T) {
	for _, way := range stopWays {
		t.Run(way.name, func(t *testing.T) {
			s := newStore(newClock(), 1, always("paid"))
			ctx, end, release := way.stop()
			defer release()
			feed := &laneFeed{next: func(ctx context.Context, _ string, wait func(context.Context) error) (reconcile.FeedPage[string], error) {
				end()
				<-ctx.Done()
				return reconcile.FeedPage[string]{}, ctx.Err()
			}}
			l := newLane(t, reconcile.LaneConfig[string, string]{Job: job, Lane: "events", Feed: feed, Matcher: s, Sink: s,
				Classifier: reconciletest.Classifier()})
			if _, err := l.RunBatch(ctx); err == nil {
				t.Fatal("the step succeeded; want its context's error")
			}
			st, err := s.Status(context.Background(), job)
			if err != nil {
				t.Fatal(err)
			}
			if failing := len(st.Lanes) == 1 && st.Lanes[0].Failing(); failing != way.failed {
				t.Fatalf("lanes %+v: failing %t; want %t", st.Lanes, failing, way.failed)
			}
		})
	}
}

// lastAttempt is h's last_attempt check.
func lastAttempt(h reconcile.Health) reconcile.Check {
	for _, c := range h.Checks {
		if c.Name == "last_attempt" {
			return c
		}
	}
	return reconcile.Check{}
}

// An account whose batch misses its deadline failed: it sits out, as after any failed batch,
// and the fan-out's batch does not return the error (a cancellation, the caller stopping, is
// returned and held against nobody: TestFanOutStopsWhenItsContextEnds).
func TestFanOutAccountThatMissesItsDeadlineSitsOut(t *testing.T) {
	w := newFanWorld(t, map[string][]int{"a": {1}, "b": {1}})
	f := w.fanOut()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	w.during = func(string) { <-ctx.Done() }
	if _, err := f.RunBatch(ctx); err != nil {
		t.Fatalf("err = %v; want a's failure kept to a", err)
	}
	w.during = nil
	for range 2 {
		if _, err := f.RunBatch(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.takeLog(); !slices.Equal(got, []string{"a/0", "b/0", "b/0"}) {
		t.Fatalf("turns %v; want a's failed turn, then b's alone while a sits out", got)
	}
}
