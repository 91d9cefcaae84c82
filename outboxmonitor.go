package reconcile

import (
	"context"
	"time"
)

// What monitoring sees of the repair outbox. The types live in the core so that an exporter
// (adapters/prommetrics) reads them without importing the delivery that writes them
// (adapters/pgoutbox, which implements both interfaces).

// OutboxStats is what monitoring needs of the repair outbox.
type OutboxStats struct {
	// Now is the database clock when the stats were read.
	Now time.Time
	// Queued counts the commands not yet applied and not dead: due, waiting to retry, or
	// running.
	Queued int64
	// OldestQueuedAt is when the oldest of them was queued; zero if none is.
	OldestQueuedAt time.Time
	// Dead counts the dead commands by name, the ones waiting for a re-drive.
	Dead map[string]int64
}

// OldestQueuedAge is how long the oldest queued command has waited; zero if none is.
func (s OutboxStats) OldestQueuedAge() time.Duration {
	if s.OldestQueuedAt.IsZero() {
		return 0
	}
	return max(s.Now.Sub(s.OldestQueuedAt), 0)
}

// OutboxReader reads the outbox's backlog and dead commands; pgoutbox.Outbox is one.
type OutboxReader interface {
	Stats(ctx context.Context) (OutboxStats, error)
}

// CommandObserver receives the outcome of every attempt at applying a repair command, for
// metrics and tracing systems (adapters/prommetrics implements it; pgoutbox.Config.Observer
// takes one). It is called on the attempt's goroutine after the outcome is recorded,
// concurrently for concurrent attempts: it must be quick and safe for concurrent use.
type CommandObserver interface {
	CommandAttempted(a CommandAttempt)
}

// CommandAttempt is one attempt at applying a repair command, as a CommandObserver sees it.
type CommandAttempt struct {
	// Command is the command's name (Decision.Command), ID its outbox id.
	Command string
	ID      int64
	// Outcome is one of AttemptOutcomes.
	Outcome string
	// Duration runs from the start of the attempt to its outcome's record.
	Duration time.Duration
	// Err is why the command did not complete; nil when Outcome is AttemptDone.
	Err error
}

// Outcomes of a CommandAttempt.
const (
	// AttemptDone: the handler succeeded and the command is done.
	AttemptDone = "done"
	// AttemptRetry: the handler failed; the command is retried after a backoff.
	AttemptRetry = "retry"
	// AttemptDead: the command failed for good (a permanent error, or its attempts spent) and
	// waits for a re-drive.
	AttemptDead = "dead"
	// AttemptDeferred: the handler asked to retry later; the command waits without spending an
	// attempt.
	AttemptDeferred = "deferred"
	// AttemptReleased: the delivery stopped during the attempt; the command was given back
	// without counting a failure.
	AttemptReleased = "released"
	// AttemptLeaseLost: another dispatcher took the command over; this attempt kept nothing.
	AttemptLeaseLost = "lease_lost"
)

// AttemptOutcomes lists every outcome of a CommandAttempt, for exporters that create their
// series up front.
var AttemptOutcomes = []string{AttemptDone, AttemptRetry, AttemptDead, AttemptDeferred, AttemptReleased, AttemptLeaseLost}
