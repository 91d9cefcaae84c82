package pgoutbox

import "time"

// Observer receives the outcome of every attempt at a command, for metrics and tracing systems
// this package does not depend on (adapters/prommetrics implements it). It is called on the
// attempt's goroutine after the outcome is recorded, concurrently for concurrent attempts: it
// must be quick and safe for concurrent use.
type Observer interface {
	CommandAttempted(a Attempt)
}

// Attempt is one attempt at applying a command, as an Observer sees it.
type Attempt struct {
	// Command is the command's name (reconcile.Decision.Command), ID its outbox id.
	Command string
	ID      int64
	// Outcome is one of the Outcome constants.
	Outcome string
	// Duration runs from the start of the attempt to its outcome's record.
	Duration time.Duration
	// Err is why the command did not complete; nil when Outcome is OutcomeDone.
	Err error
}

// Outcomes of an attempt.
const (
	// OutcomeDone: the handler succeeded and the command is done.
	OutcomeDone = "done"
	// OutcomeRetry: the handler failed; the command is retried after a backoff.
	OutcomeRetry = "retry"
	// OutcomeDead: the command failed for good (Permanent, or MaxAttempts spent) and waits for
	// Redrive.
	OutcomeDead = "dead"
	// OutcomeDeferred: the handler returned RetryLater; the command waits without spending an
	// attempt.
	OutcomeDeferred = "deferred"
	// OutcomeReleased: the dispatcher stopped during the attempt; the command was given back
	// without counting a failure.
	OutcomeReleased = "released"
	// OutcomeLeaseLost: another dispatcher took the command over; this attempt kept nothing.
	OutcomeLeaseLost = "lease_lost"
)

// Outcomes lists every Outcome, for exporters that create their series up front.
var Outcomes = []string{OutcomeDone, OutcomeRetry, OutcomeDead, OutcomeDeferred, OutcomeReleased, OutcomeLeaseLost}

// observe reports one attempt to the configured Observer, if any.
func (d *Dispatcher) observe(del Delivery, start time.Time, outcome string, err error) {
	if d.cfg.Observer == nil {
		return
	}
	d.cfg.Observer.CommandAttempted(Attempt{Command: del.Name, ID: del.ID, Outcome: outcome, Duration: time.Since(start), Err: err})
}
