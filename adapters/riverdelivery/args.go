package riverdelivery

// Kind is the River job kind of repair commands: one kind for every command name, so that one
// Worker, registered once, applies them all.
const Kind = "reconcile_repair"

// Args name a repair command's outbox row as a River job's args. They carry nothing else: the
// Worker reads the command, its finding and its record from the row, so a job cannot ask for
// anything the reconciler did not queue.
//
// Jobs are not unique (River's UniqueOpts): which job may apply a command is the outbox row's
// to say. Were they unique by their args, a job inserted ahead for an outbox id not yet taken
// (in a queue nobody works, due in a year) would be the one the commit that takes the id got
// back as a duplicate and named, and Redrive would name it again.
type Args struct {
	// OutboxID is the command's outbox row.
	OutboxID int64 `json:"outbox_id"`
	// Schema and Prefix name the reconciler's tables whose outbox holds the row, as
	// pgstore.Tables does (the Deliverer writes the store's, Prefix resolved; empty means the
	// defaults): stores with different tables number their rows alike.
	Schema string `json:"schema,omitempty"`
	Prefix string `json:"prefix,omitempty"`
}

// Kind is the job kind, Kind.
func (Args) Kind() string { return Kind }
