package reconcile

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// pacer paces, counts and stops one batch's (or one lane step's) external calls. Its state is
// its own: callers use its methods, and read it whole with state.
type pacer struct {
	limiter Limiter
	calls   atomic.Int64
	stop    atomic.Bool           // a 429, or a limiter out of time: ask no more
	abort   atomic.Pointer[error] // the limiter's ErrAbortBatch: the batch must fail

	// An outage: the first two calls failed and none answered. Then no more calls are made.
	failures, answers atomic.Int64
	down              atomic.Bool
	warned            atomic.Bool // a gateway failure was logged at Warn

	mu         sync.Mutex
	retryAfter time.Duration // the longest wait a rate limit asked for
}

// paceState is a pacer's state at one moment.
type paceState struct {
	calls      int
	stopped    bool          // a rate limit (or the limiter) stopped the calls
	down       bool          // an outage stopped the calls
	retryAfter time.Duration // the longest wait a rate limit asked for
}

// state returns the pacer's state now.
func (p *pacer) state() paceState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return paceState{calls: int(p.calls.Load()), stopped: p.stop.Load(), down: p.down.Load(), retryAfter: p.retryAfter}
}

// aborted returns the limiter's ErrAbortBatch error, if it failed so.
func (p *pacer) aborted() error {
	if e := p.abort.Load(); e != nil {
		return *e
	}
	return nil
}

// firstFailure reports whether this is the batch's first gateway failure to be logged, which is
// logged at Warn (the rest, often the same, at Debug). A nil pacer (no call yet) says yes.
func (p *pacer) firstFailure() bool {
	return p == nil || p.warned.CompareAndSwap(false, true)
}

// failed reports whether a call has failed already (a bulk call, say).
func (p *pacer) failed() bool { return p.failures.Load() > 0 }

// errDown is wait's refusal after an outage.
var errDown = errors.New("reconcile: calls stopped: the external system is unavailable")

// paceError is wait's refusal: calls were stopped by a rate limit or by a limiter that cannot
// grant a call in time. It is an ErrRateLimited, but not an answer from the external system.
type paceError struct{ cause error }

func (e *paceError) Error() string {
	if e.cause == nil {
		return "reconcile: calls stopped after a rate limit"
	}
	return "reconcile: limiter cannot grant a call in time: " + e.cause.Error()
}

func (e *paceError) Is(target error) bool { return target == ErrRateLimited }

// outageAfter is the number of failed calls, with no answer among them, after which a batch
// takes the external system for down and asks nothing more: during an outage a batch spends
// two calls, not one per row.
const outageAfter = 2

// answered records the result of a call: an answer, or a failure to get one.
func (p *pacer) answered(ok bool) {
	if ok {
		p.answers.Add(1)
	} else if p.failures.Add(1) >= outageAfter && p.answers.Load() == 0 {
		p.down.Store(true)
	}
}

// wait is called before every external call: it refuses once the batch is stopped, waits for
// the limiter, and counts the call. A limiter error that is ErrAbortBatch is returned as it is,
// and again to every later call: the batch must fail, not stop as after a rate limit.
func (p *pacer) wait(ctx context.Context) error {
	if err := p.aborted(); err != nil {
		return err
	}
	if p.stop.Load() {
		return &paceError{}
	}
	if p.down.Load() {
		return errDown
	}
	if p.limiter != nil {
		if err := p.limiter.Wait(ctx); err != nil {
			if ctx.Err() != nil {
				return err
			}
			if errors.Is(err, ErrAbortBatch) {
				p.abort.CompareAndSwap(nil, &err)
				return err
			}
			// The limiter cannot grant a call before our deadline: stop asking, keep what was
			// learned, and let the rest be Unverifiable.
			pe := &paceError{cause: err}
			p.limited(pe)
			return pe
		}
		if p.stop.Load() { // a 429 arrived while we waited our turn
			return &paceError{}
		}
	}
	p.calls.Add(1)
	return nil
}

// limited is what a rate limit does, whether an answer of the external system or wait's own
// refusal: no more calls this batch; the wait it asked for (or the pause of a limiter paused by
// one) is remembered for the scheduler; and a Throttler limiter is told of an answer, but not
// of our own limiter's refusal, which is not news to it. The row that got the answer is not
// asked: the caller leaves it for the next batch.
func (p *pacer) limited(err error) {
	p.stop.Store(true)
	var (
		retry time.Duration
		rl    *RateLimitError
		pe    *paceError
	)
	own := errors.As(err, &pe)
	if own {
		err = pe.cause
	}
	if err != nil && errors.As(err, &rl) {
		retry = rl.RetryAfter
		p.mu.Lock()
		p.retryAfter = max(p.retryAfter, retry)
		p.mu.Unlock()
	}
	if t, ok := p.limiter.(Throttler); ok && !own {
		t.Throttle(retry)
	}
}
