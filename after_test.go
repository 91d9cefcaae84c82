package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

// ctxOf makes the contexts AfterBatch is asked about.
var (
	live      = func() context.Context { return context.Background() }
	cancelled = func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	stoppedWithCause = func() context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(errors.New("reconcile: runner stopped"))
		return ctx
	}
	leaseLost = func() context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(fmt.Errorf("pgshard: shard lease lost: %w", reconcile.ErrConcurrentRun))
		return ctx
	}
	pastDeadline = func() context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		_ = cancel // the context is done already; cancelling it changes nothing
		return ctx
	}
)

func TestAfterBatchDecidesWhatFollowsEveryBatch(t *testing.T) {
	boom := errors.New("pgstore: commit: connection reset")
	tests := []struct {
		name string
		ctx  func() context.Context
		rep  reconcile.Report
		err  error
		want reconcile.After
	}{
		{"rows judged and more to come: progress", live, reconcile.Report{Scanned: 200}, nil, reconcile.AfterProgress},
		{"an empty report: progress", live, reconcile.Report{}, nil, reconcile.AfterProgress},
		{"a wrap: the cycle is done", live, reconcile.Report{Scanned: 3, Wrapped: true}, nil, reconcile.AfterCycle},
		{"an empty read that wraps: the cycle is done", live, reconcile.Report{Wrapped: true}, nil, reconcile.AfterCycle},
		{"a wrap whose last answer was a 429: the cycle is done, RetryAfter still honoured", live,
			reconcile.Report{Scanned: 3, Wrapped: true, RateLimited: true, RetryAfter: time.Minute}, nil, reconcile.AfterCycle},
		{"a 429 with Retry-After after some rows: wait, not a failure", live,
			reconcile.Report{Scanned: 6, RateLimited: true, RetryAfter: 30 * time.Second}, nil, reconcile.AfterRateLimit},
		{"a 429 without Retry-After after some rows", live, reconcile.Report{Scanned: 6, RateLimited: true}, nil, reconcile.AfterRateLimit},
		{"a 429 with Retry-After on the first row: deferred", live,
			reconcile.Report{Deferred: true, RateLimited: true, RetryAfter: 30 * time.Second}, nil, reconcile.AfterDeferred},
		{"the limiter refusing the first call: deferred", live, reconcile.Report{Deferred: true, RateLimited: true}, nil, reconcile.AfterDeferred},
		{"an outage after the first calls: back off", live, reconcile.Report{Scanned: 2, Unavailable: true}, nil, reconcile.AfterOutage},
		{"an outage with nothing written: deferred", live, reconcile.Report{Deferred: true, Unavailable: true}, nil, reconcile.AfterDeferred},
		{"an outage is not a wrap", live, reconcile.Report{Scanned: 2, Unavailable: true, Wrapped: true}, nil, reconcile.AfterOutage},
		{"an outage outranks a rate limit", live, reconcile.Report{Scanned: 2, Unavailable: true, RateLimited: true}, nil, reconcile.AfterOutage},
		{"Deferred alone: nothing to do now (no shard free)", live, reconcile.Report{Deferred: true}, nil, reconcile.AfterIdle},
		{"Deferred alone with RetryAfter: the next cycle not due", live,
			reconcile.Report{Deferred: true, RetryAfter: time.Hour}, nil, reconcile.AfterIdle},
		{"ErrConcurrentRun: a conflict, not a failure", live, reconcile.Report{}, reconcile.ErrConcurrentRun, reconcile.AfterConflict},
		{"ErrConcurrentRun wrapped by the layers", live, reconcile.Report{Scanned: 5},
			fmt.Errorf("reconcile: job sweep: pgstore: commit: %w", reconcile.ErrConcurrentRun), reconcile.AfterConflict},
		{"ErrConcurrentRun under a cancelled context: still a conflict", cancelled, reconcile.Report{}, reconcile.ErrConcurrentRun, reconcile.AfterConflict},
		{"an error under a context a lost lease cancelled: a conflict", leaseLost, reconcile.Report{}, boom, reconcile.AfterConflict},
		{"an error under a cancelled parent context: stop", cancelled, reconcile.Report{}, context.Canceled, reconcile.AfterStop},
		{"a driver's error under a cancelled parent context: stop", cancelled, reconcile.Report{}, boom, reconcile.AfterStop},
		{"an error under a context a Runner's Stop cancelled: stop", stoppedWithCause, reconcile.Report{}, boom, reconcile.AfterStop},
		{"a missed deadline: a failure", pastDeadline, reconcile.Report{}, context.DeadlineExceeded, reconcile.AfterFailure},
		{"a missed deadline, as the driver says it: a failure", pastDeadline, reconcile.Report{}, boom, reconcile.AfterFailure},
		{"a database error: a failure", live, reconcile.Report{}, boom, reconcile.AfterFailure},
		{"a rejected key: a failure", live, reconcile.Report{}, fmt.Errorf("stripe: 401: %w", reconcile.ErrAbortBatch), reconcile.AfterFailure},
		{"context.Canceled from below while ours is live: a failure", live, reconcile.Report{}, context.Canceled, reconcile.AfterFailure},
		{"an error outranks what the report says", live, reconcile.Report{Wrapped: true, Deferred: true}, boom, reconcile.AfterFailure},
		{"a batch that succeeded before its context was cancelled: what it did", cancelled,
			reconcile.Report{Scanned: 3, Wrapped: true}, nil, reconcile.AfterCycle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := reconcile.AfterBatch(tt.ctx(), tt.rep, tt.err); got != tt.want {
				t.Fatalf("AfterBatch = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAfterNamesAreDistinct(t *testing.T) {
	seen := map[string]reconcile.After{}
	for a := reconcile.AfterProgress; a <= reconcile.AfterStop; a++ {
		name := a.String()
		if prev, dup := seen[name]; dup || name == "unknown" {
			t.Fatalf("%d is named %q, as %d is", a, name, prev)
		}
		seen[name] = a
	}
	if got := (reconcile.AfterStop + 1).String(); got != "unknown" {
		t.Fatalf("an After past the last is named %q", got)
	}
}

// conflictSink fails every commit as a sink does when another reconciler moved the cursor.
type conflictSink struct{ *store }

func (s conflictSink) Commit(context.Context, reconcile.Commit) (reconcile.CommitResult, error) {
	return reconcile.CommitResult{}, fmt.Errorf("memstore: %w", reconcile.ErrConcurrentRun)
}

// The engine's own batches, as each ends, decide as the table says; and a sweep batch's
// failure is recorded exactly when AfterBatch calls for it: a failure, a deferred batch or an
// outage.
func TestAfterBatchOfTheEnginesOwnBatches(t *testing.T) {
	limited := func(after int) reconcile.Gateway[string] {
		return newFakeGateway(0, func(_ context.Context, call int, _ string) (string, error) {
			if call > after {
				return "", &reconcile.RateLimitError{RetryAfter: 30 * time.Second}
			}
			return "paid", nil
		})
	}
	answer := func(state string, err error) reconcile.Gateway[string] {
		return newFakeGateway(0, func(context.Context, int, string) (string, error) { return state, err })
	}
	tests := []struct {
		name  string
		batch int // BatchSize; zero means 10, more than the 3 rows
		gw    func(end func()) reconcile.Gateway[string]
		sink  func(s *store) reconcile.Sink
		stop  func() (ctx context.Context, end func(), release func())
		want  reconcile.After
		retry time.Duration
	}{
		{name: "every row answered: a wrap", gw: func(func()) reconcile.Gateway[string] { return answer("paid", nil) },
			want: reconcile.AfterCycle},
		{name: "a full batch answered: progress", batch: 2, gw: func(func()) reconcile.Gateway[string] { return answer("paid", nil) },
			want: reconcile.AfterProgress},
		{name: "a 429 with Retry-After after the first row", gw: func(func()) reconcile.Gateway[string] { return limited(1) },
			want: reconcile.AfterRateLimit, retry: 30 * time.Second},
		{name: "a 429 with Retry-After on the first row", gw: func(func()) reconcile.Gateway[string] { return limited(0) },
			want: reconcile.AfterDeferred, retry: 30 * time.Second},
		{name: "an outage: the first two calls fail", gw: func(func()) reconcile.Gateway[string] {
			return answer("", fmt.Errorf("stripe: 503: %w", reconcile.ErrUnavailable))
		}, want: reconcile.AfterOutage},
		{name: "a rejected key", gw: func(func()) reconcile.Gateway[string] {
			return answer("", fmt.Errorf("stripe: 401: %w", reconcile.ErrAbortBatch))
		}, want: reconcile.AfterFailure},
		{name: "another reconciler moved the cursor", gw: func(func()) reconcile.Gateway[string] { return answer("paid", nil) },
			sink: func(s *store) reconcile.Sink { return conflictSink{s} }, want: reconcile.AfterConflict},
		{name: "a missed deadline", gw: waitingGateway, stop: stopWays[0].stop, want: reconcile.AfterFailure},
		{name: "a cancelled parent context", gw: waitingGateway, stop: stopWays[2].stop, want: reconcile.AfterStop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(newClock(), 3, always("paid"))
			ctx, end, release := context.Context(context.Background()), func() {}, func() {}
			if tt.stop != nil {
				ctx, end, release = tt.stop()
			}
			defer release()
			cfg := config(s, tt.gw(end))
			cfg.Concurrency, cfg.BatchSize = 1, tt.batch
			if tt.sink != nil {
				cfg.Sink = tt.sink(s)
			}
			rep, err := reconcile.RunBatch(ctx, cfg)
			if got := reconcile.AfterBatch(ctx, rep, err); got != tt.want || rep.RetryAfter != tt.retry {
				t.Fatalf("AfterBatch = %v with RetryAfter %v (report %+v, error %v); want %v with %v", got, rep.RetryAfter, rep, err, tt.want, tt.retry)
			}
			st, err := s.Status(context.Background(), job)
			if err != nil {
				t.Fatal(err)
			}
			recorded := !st.LastFailureAt.IsZero()
			want := tt.want == reconcile.AfterFailure || tt.want == reconcile.AfterDeferred || tt.want == reconcile.AfterOutage
			if recorded != want {
				t.Fatalf("failure recorded %t (%q) after %v; want %t", recorded, st.LastFailure, tt.want, want)
			}
		})
	}
}
