package riverdelivery

import (
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Kind is the River job kind of repair commands: one kind for every command name, so that one
// Worker, registered once, applies them all.
const Kind = "reconcile_repair"

// Args name a repair command's outbox row as a River job's args. They carry nothing else: the
// Worker reads the command, its finding and its record from the row, so a job cannot ask for
// anything the reconciler did not queue.
type Args struct {
	// OutboxID is the command's outbox row.
	OutboxID int64 `json:"outbox_id" river:"unique"`
	// Schema and Prefix name the reconciler's tables whose outbox holds the row, as
	// pgstore.Tables does (the Deliverer writes the store's, Prefix resolved; empty means the
	// defaults): stores with different tables number their rows alike.
	Schema string `json:"schema,omitempty" river:"unique"`
	Prefix string `json:"prefix,omitempty" river:"unique"`
}

// Kind is the job kind, Kind.
func (Args) Kind() string { return Kind }

// InsertOpts makes a command's job unique by its Args while it waits or runs (available,
// scheduled, running, retryable): enqueueing the same command again then is skipped as a
// duplicate. A finished job (completed, cancelled, discarded) does not stop a new one, so that
// Deliverer.Redrive can always enqueue one; which job may apply the command is the outbox
// row's to say, not River's uniqueness.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
		rivertype.JobStateRunning, rivertype.JobStateScheduled}}}
}
