package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/leaktest"
)

// A Runner waits after a tick as AfterBatch decided about its last batch: a batch that learned
// nothing backs off like a failure (as a FanOut's account does), one with nothing to do waits
// the interval or its RetryAfter, a rate limit after progress waits what it asked.
func TestARunnerWaitsAsAfterBatchDecides(t *testing.T) {
	defer leaktest.VerifyNone(t)
	const ms = time.Millisecond
	tests := []struct {
		name  string
		rep   reconcile.Report
		after reconcile.After
		want  []time.Duration // the waits after the first ticks, in ms
	}{
		{"deferred by a rate limit", reconcile.Report{Deferred: true, RateLimited: true}, reconcile.AfterDeferred,
			[]time.Duration{1, 2, 4, 8, 16, 32, 32}},
		{"deferred by a rate limit that asked for longer", reconcile.Report{Deferred: true, RateLimited: true, RetryAfter: 5 * ms},
			reconcile.AfterDeferred, []time.Duration{5, 5, 5, 8, 16, 32}},
		{"deferred by an outage", reconcile.Report{Deferred: true, Unavailable: true}, reconcile.AfterDeferred,
			[]time.Duration{1, 2, 4, 8}},
		{"an outage after some rows", reconcile.Report{Scanned: 2, Unavailable: true}, reconcile.AfterOutage,
			[]time.Duration{1, 2, 4, 8}},
		{"nothing to do now", reconcile.Report{Deferred: true}, reconcile.AfterIdle, []time.Duration{1, 1, 1}},
		{"nothing to do until the next cycle is due", reconcile.Report{Deferred: true, RetryAfter: 3 * ms}, reconcile.AfterIdle,
			[]time.Duration{3, 3, 3}},
		{"a rate limit after some rows", reconcile.Report{Scanned: 2, RateLimited: true, RetryAfter: 2 * ms}, reconcile.AfterRateLimit,
			[]time.Duration{2, 2, 2}},
		{"a wrap", reconcile.Report{Scanned: 2, Wrapped: true}, reconcile.AfterCycle, []time.Duration{4, 4, 4}},
		{"a wrap whose last answer asked for longer than the idle time", reconcile.Report{Scanned: 2, Wrapped: true, RateLimited: true,
			RetryAfter: 6 * ms}, reconcile.AfterCycle, []time.Duration{6, 6, 6}},
	}
	var jobs []reconcile.RunnerJob
	for _, tt := range tests {
		rep := tt.rep
		jobs = append(jobs, reconcile.RunnerJob{Name: tt.name, Interval: ms, Jitter: -1, IdleAfterWrap: 4 * ms, Budget: reconcile.TickBudget{MaxRows: 1},
			Batches: &scripted{next: func(context.Context, int) (reconcile.Report, error) { return rep, nil }}})
	}
	k := newTicks(func(k *ticks) bool {
		for _, tt := range tests {
			if countJob(k.ticks, tt.name) < len(tt.want) {
				return false
			}
		}
		return true
	})
	k.runUntil(t, reconcile.RunnerConfig{Jobs: jobs, OnTick: k.onTick})
	for _, tt := range tests {
		for i, e := range k.of(tt.name) {
			if e.Next == 0 || i >= len(tt.want) {
				continue // the tick the stop ended
			}
			if e.Err != nil || e.Report.After != tt.after || e.Next != tt.want[i]*ms {
				t.Errorf("%s: tick %d: after %v, waits %v (error %v); want %v, %v", tt.name, i+1, e.Report.After, e.Next, e.Err, tt.after, tt.want[i]*ms)
			}
		}
	}
}

// A batch cancelled because another worker took its work over (a shard's lease lost: its
// context's cause is an ErrConcurrentRun) lost a race: RunTick reports a Conflict, no error.
func TestRunTickReportsABatchCancelledByALostRaceAsAConflict(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	b := &scripted{next: func(_ context.Context, n int) (reconcile.Report, error) {
		if n == 2 {
			cancel(fmt.Errorf("pgshard: shard lease lost: %w", reconcile.ErrConcurrentRun))
			return reconcile.Report{}, errors.New("pgstore: commit: context canceled")
		}
		return batchOf(10), nil
	}}
	tick, err := reconcile.RunTick(ctx, b, reconcile.TickBudget{})
	if err != nil || !tick.Conflict || tick.After != reconcile.AfterConflict || tick.Batches != 1 {
		t.Fatalf("tick %+v, %v; want a conflict after one batch, no error", tick, err)
	}
}

// A tick its context ends between batches says so: AfterStop, without an error.
func TestRunTickStoppedBetweenBatchesIsAStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := &scripted{next: func(_ context.Context, n int) (reconcile.Report, error) {
		if n == 2 {
			cancel()
		}
		return batchOf(10), nil
	}}
	tick, err := reconcile.RunTick(ctx, b, reconcile.TickBudget{})
	if err != nil || tick.After != reconcile.AfterStop || tick.Batches != 2 {
		t.Fatalf("tick %+v, %v; want two batches, then a stop", tick, err)
	}
}

// A tick whose context a lost race cancels between batches (a shard's lease lost while no
// batch ran) ends as a conflict, not as the host stopping.
func TestRunTickCancelledBetweenBatchesByALostRaceIsAConflict(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	b := &scripted{next: func(_ context.Context, n int) (reconcile.Report, error) {
		if n == 1 {
			cancel(fmt.Errorf("pgshard: shard lease lost: %w", reconcile.ErrConcurrentRun))
		}
		return batchOf(10), nil
	}}
	tick, err := reconcile.RunTick(ctx, b, reconcile.TickBudget{})
	if err != nil || !tick.Conflict || tick.After != reconcile.AfterConflict || tick.Batches != 1 {
		t.Fatalf("tick %+v, %v; want one batch, then a conflict", tick, err)
	}
}
