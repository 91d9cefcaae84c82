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
	// OutboxID is the command's outbox row, unique per command within its outbox: River
	// refuses a second job with the same OutboxID, Schema and Prefix while the first is kept
	// (unique by args, these fields alone).
	OutboxID int64 `json:"outbox_id" river:"unique"`
	// Schema and Prefix name the reconciler's tables whose outbox holds the row (the store's
	// Tables, Prefix resolved): stores with different tables number their rows alike, and the
	// Worker applies the job against these tables. Empty Prefix means the Worker's own tables.
	Schema string `json:"schema,omitempty" river:"unique"`
	Prefix string `json:"prefix,omitempty" river:"unique"`
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
