package reconcile

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter paces external calls. *rate.Limiter from golang.org/x/time/rate satisfies it, as does
// *AdaptiveLimiter. One Limiter may be shared by any number of jobs and batches running at once;
// it is then their common budget.
type Limiter interface {
	// Wait blocks until one call may be made or ctx is done. It returns an error at once when
	// the call cannot be granted before ctx's deadline: RunBatch takes any error as "no call
	// can be granted in time", commits the rows before the first one not asked and leaves
	// the rest to the next batch. A Limiter that fails for another reason (its own store is down) returns an error
	// wrapping ErrAbortBatch instead, so that the batch fails and commits nothing and the
	// cursor does not move past rows never asked.
	Wait(ctx context.Context) error
}

// Throttler is an optional ability of a Limiter: being told that the external system answered
// "too many requests". RunBatch calls Throttle once per rate-limit answer, with the wait the
// answer asked for (zero if none).
type Throttler interface {
	Throttle(retryAfter time.Duration)
}

// DefaultRate is the budget of an AdaptiveLimiter built with a zero Rate: 5 requests per second.
// Stripe allows 100 requests per second in live mode (25 per second per endpoint) for the whole
// account, and that budget is shared with the payments the host takes; a reconciler should use a
// small, fixed share of it.
const DefaultRate rate.Limit = 5

// AdaptiveOptions configures an AdaptiveLimiter. The zero value is a 5 requests/s budget.
type AdaptiveOptions struct {
	// Rate is the budget in calls per second when nothing pushes back. Zero means DefaultRate.
	Rate rate.Limit
	// Burst is the number of calls that may be made at once after a quiet spell. Zero means 1.
	Burst int
	// Min is the floor the rate never halves below. Zero means Rate/16.
	Min rate.Limit
	// RecoverEvery is how often the rate grows back by a tenth of Rate after a slowdown, so a
	// halved rate is whole again after five periods. Zero means 30 seconds.
	RecoverEvery time.Duration
	// Now is the clock every decision is measured by; nil means time.Now. Tests set it to check
	// the rate; it must advance like a clock for Wait to return.
	Now func() time.Time
}

// AdaptiveLimiter is a token bucket that halves its rate when the external system says "too
// many requests", pauses for the Retry-After the answer named, and grows back gradually: additive
// increase, multiplicative decrease, as TCP does. It is safe for concurrent use; share one per
// external account.
type AdaptiveLimiter struct {
	lim          *rate.Limiter
	max, min     rate.Limit
	step         rate.Limit
	recoverEvery time.Duration
	now          func() time.Time

	mu          sync.Mutex
	changed     time.Time // last halving or recovery step
	throttled   time.Time // last halving
	pausedUntil time.Time
}

// throttleWindow merges the 429s of one burst: calls in flight when the first answer arrived
// get the same answer, and halving once per call would collapse the rate to its floor.
const throttleWindow = time.Second

// NewAdaptiveLimiter returns an AdaptiveLimiter running at opts.Rate.
func NewAdaptiveLimiter(opts AdaptiveOptions) (*AdaptiveLimiter, error) {
	if opts.Rate == 0 {
		opts.Rate = DefaultRate
	}
	if opts.Burst == 0 {
		opts.Burst = 1
	}
	if opts.Min == 0 {
		opts.Min = opts.Rate / 16
	}
	if opts.RecoverEvery == 0 {
		opts.RecoverEvery = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	switch {
	case opts.Rate < 0 || opts.Rate == rate.Inf:
		return nil, fmt.Errorf("reconcile: adaptive limiter: Rate %v must be positive and finite", opts.Rate)
	case opts.Burst < 0:
		return nil, fmt.Errorf("reconcile: adaptive limiter: Burst %d is negative", opts.Burst)
	case opts.Min < 0 || opts.Min > opts.Rate:
		return nil, fmt.Errorf("reconcile: adaptive limiter: Min %v must be between 0 and Rate %v", opts.Min, opts.Rate)
	case opts.RecoverEvery < 0:
		return nil, fmt.Errorf("reconcile: adaptive limiter: RecoverEvery %v is negative", opts.RecoverEvery)
	}
	return &AdaptiveLimiter{
		lim:          rate.NewLimiter(opts.Rate, opts.Burst),
		max:          opts.Rate,
		min:          opts.Min,
		step:         opts.Rate / 10,
		recoverEvery: opts.RecoverEvery,
		now:          opts.Now,
	}, nil
}

// Wait blocks until a call may be made: its turn at the current rate, and then the end of any
// pause a rate-limit answer asked for, also one that arrives while it waits. Like rate.Limiter,
// it fails at once when ctx's deadline comes first; when a pause is the reason, the error is a
// *RateLimitError saying how long the pause still lasts.
func (l *AdaptiveLimiter) Wait(ctx context.Context) error {
	l.mu.Lock()
	now := l.now()
	l.recoverLocked(now)
	res := l.lim.ReserveN(now, 1)
	turn := now.Add(res.DelayFrom(now))
	l.mu.Unlock()
	if !res.OK() {
		return errors.New("reconcile: adaptive limiter: a burst of 0 grants no call")
	}
	for {
		l.mu.Lock()
		now := l.now()
		until := turn
		if l.pausedUntil.After(until) {
			until = l.pausedUntil
		}
		l.mu.Unlock()
		wait := until.Sub(now)
		if wait <= 0 {
			return nil
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			res.CancelAt(now)
			if until.After(turn) {
				return &RateLimitError{RetryAfter: wait, Reason: "the limiter is paused by an earlier rate-limit answer"}
			}
			return fmt.Errorf("reconcile: adaptive limiter: the next call is %v away, past the context deadline", wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
			// Look again: a rate-limit answer may have paused everyone meanwhile.
		case <-ctx.Done():
			t.Stop()
			res.CancelAt(l.now())
			return ctx.Err()
		}
	}
}

// Throttle halves the rate (not below Min) and pauses every caller for retryAfter. Answers
// within a second of the last halving only extend the pause.
func (l *AdaptiveLimiter) Throttle(retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if until := now.Add(retryAfter); until.After(l.pausedUntil) {
		l.pausedUntil = until
	}
	if !l.throttled.IsZero() && now.Sub(l.throttled) < throttleWindow {
		return
	}
	l.throttled, l.changed = now, now
	l.lim.SetLimitAt(now, max(l.lim.Limit()/2, l.min))
}

// Limit returns the current rate in calls per second.
func (l *AdaptiveLimiter) Limit() rate.Limit {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recoverLocked(l.now())
	return l.lim.Limit()
}

// recoverLocked adds one step of rate per RecoverEvery elapsed since the last change.
func (l *AdaptiveLimiter) recoverLocked(now time.Time) {
	cur := l.lim.Limit()
	if cur >= l.max {
		return
	}
	periods := int(now.Sub(l.changed) / l.recoverEvery)
	if periods <= 0 {
		return
	}
	l.changed = l.changed.Add(time.Duration(periods) * l.recoverEvery)
	l.lim.SetLimitAt(now, min(l.max, cur+rate.Limit(periods)*l.step))
}

var (
	_ Limiter   = (*rate.Limiter)(nil)
	_ Limiter   = (*AdaptiveLimiter)(nil)
	_ Throttler = (*AdaptiveLimiter)(nil)
)

// isNilLimiter reports a Limiter that is a nil pointer behind a non-nil interface, which would
// otherwise pass New and panic at the first call.
func isNilLimiter(l Limiter) bool {
	if l == nil {
		return false
	}
	v := reflect.ValueOf(l)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
