package reconcile

import (
	"context"
	"errors"
)

// After is what follows a batch (or a lane step), as AfterBatch decides it from what the batch
// returned. Every scheduler in this module acts on it (RunTick, Runner, FanOut), failure
// recorders are told by it, and prommetrics counts batches by it; a host that schedules batches
// itself (cron, a job queue) switches on it too. A scheduler never runs the job again sooner
// than Report.RetryAfter, whatever the After.
type After uint8

const (
	// AfterProgress: the batch judged and committed rows, and the cycle goes on. Run the next
	// batch, within the tick's budget.
	AfterProgress After = iota
	// AfterCycle: the batch completed the cycle (Report.Wrapped): wait for the next one.
	AfterCycle
	// AfterRateLimit: the batch committed rows, then the external system (or the limiter)
	// refused further calls (Report.RateLimited) before the cycle's end. Wait
	// Report.RetryAfter, then go on. Not a failure.
	AfterRateLimit
	// AfterOutage: the batch committed rows, then found the external system down
	// (Report.Unavailable). Back off as after a failure; a sweep's is recorded as one.
	AfterOutage
	// AfterDeferred: the batch learned nothing and wrote nothing, because the external system
	// refused its first call (Report.Deferred with RateLimited) or was down (with Unavailable).
	// Back off as after a failure, for at least Report.RetryAfter; a sweep's is recorded as
	// one.
	AfterDeferred
	// AfterIdle: the BatchRunner had nothing it could do now (Report.Deferred alone): every shard
	// of a sharded job is leased by another worker or waits for the others, or the next cycle
	// is not due. Run it again at the next tick, no sooner than Report.RetryAfter. Not a
	// failure.
	AfterIdle
	// AfterConflict: another reconciler moved the cursor (ErrConcurrentRun, or the batch's
	// context cancelled with that cause, as a lost shard lease cancels it): the batch wrote
	// nothing, and the other did the work. Run the job again at the next tick. Not a failure:
	// two schedulers of one job are a normal, safe configuration.
	AfterConflict
	// AfterFailure: the batch failed and wrote nothing; a batch that missed its context's
	// deadline is one (whatever held it up holds up the next). Back off; it is recorded.
	AfterFailure
	// AfterStop: the batch's context was cancelled (the host, or a Runner's Stop, ending the
	// work) and the batch returned an error: nothing was written, nothing is to be retried or
	// recorded.
	AfterStop
)

// String names a in logs: "progress", "cycle", "rate_limit", "outage", "deferred", "idle",
// "conflict", "failure" or "stop".
func (a After) String() string {
	switch a {
	case AfterProgress:
		return "progress"
	case AfterCycle:
		return "cycle"
	case AfterRateLimit:
		return "rate_limit"
	case AfterOutage:
		return "outage"
	case AfterDeferred:
		return "deferred"
	case AfterIdle:
		return "idle"
	case AfterConflict:
		return "conflict"
	case AfterFailure:
		return "failure"
	case AfterStop:
		return "stop"
	}
	return "unknown"
}

// AfterBatch decides what follows a batch that returned rep and err under ctx, the context it
// ran under. With an error: ErrConcurrentRun is AfterConflict; a cancelled ctx is AfterStop
// (AfterConflict if its cause is an ErrConcurrentRun); any other error, a missed deadline
// included, is AfterFailure. Without one, the Report decides, in this order: Deferred
// (AfterDeferred with RateLimited or Unavailable, else AfterIdle), Unavailable (AfterOutage),
// Wrapped (AfterCycle), RateLimited (AfterRateLimit), else AfterProgress. A context cancelled
// after a batch that succeeded does not change what the batch did; the scheduler's own loop
// sees it.
func AfterBatch(ctx context.Context, rep Report, err error) After {
	if err != nil {
		switch {
		case errors.Is(err, ErrConcurrentRun):
			return AfterConflict
		case ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded):
			return AfterFailure
		case errors.Is(context.Cause(ctx), ErrConcurrentRun):
			return AfterConflict
		}
		return AfterStop
	}
	switch {
	case rep.Deferred && (rep.RateLimited || rep.Unavailable):
		return AfterDeferred
	case rep.Deferred:
		return AfterIdle
	case rep.Unavailable:
		return AfterOutage
	case rep.Wrapped:
		return AfterCycle
	case rep.RateLimited:
		return AfterRateLimit
	}
	return AfterProgress
}
