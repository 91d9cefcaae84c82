package riverdelivery

import (
	"encoding/json"

	"github.com/riverqueue/river"
)

// Kind is the River job kind of repair commands: one kind for every command name, so that one
// Worker, registered once, applies them all.
const Kind = "reconcile_repair"

// Args are a repair command as a River job's args.
type Args struct {
	// OutboxID is the command's outbox row, unique per command: River refuses a second job
	// with the same OutboxID while the first is kept (unique by args, this field alone).
	OutboxID int64 `json:"outbox_id" river:"unique"`
	// Name is the command, such as "ApplyPaymentSucceeded".
	Name string `json:"name"`
	// RecordID is the local row to repair, for people reading River's jobs.
	RecordID string `json:"record_id"`
	// Payload is the command as stored in the outbox; reconcile.DecodeCommand reads it.
	Payload json.RawMessage `json:"payload"`
}

// Kind is the job kind, Kind.
func (Args) Kind() string { return Kind }

// InsertOpts makes a command's job unique by its OutboxID, in every state River keeps
// (available, scheduled, running, retryable, completed, and so on until the cleaner removes it).
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}
