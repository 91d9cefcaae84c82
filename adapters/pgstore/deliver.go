package pgstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
)

// Deliverer hands the repair commands a commit queued to a queue of the host's, such as River
// (adapters/riverdelivery), instead of a pgoutbox Dispatcher (Config.Deliver). Deliver runs in
// the commit's transaction, after the commands' outbox rows are written and before the commit:
// whatever it writes through tx commits with the findings or not at all. It is called only when
// the commit queued at least one command, at most once per commit attempt; a commit that fails
// afterwards rolls back what it wrote, and its retry queues new commands with new ids.
type Deliverer interface {
	Deliver(ctx context.Context, tx pgx.Tx, cmds []QueuedCommand) error
}

// QueuedCommand is a repair command a commit queued, as a Deliverer receives it.
type QueuedCommand struct {
	// OutboxID is the command's outbox row: unique within Tables' outbox (not across stores
	// whose Tables differ), a key, with Tables, under which a queue can refuse the same
	// command twice.
	OutboxID int64
	// Tables are the store's tables (Store.Tables), whose outbox holds the row.
	Tables Tables
	// Command is the command, decoded from Payload.
	Command reconcile.Command
	// Payload is the command as stored in the outbox, which reconcile.DecodeCommand reads with
	// Command.Name.
	Payload json.RawMessage
}

// delivery hands the commands a commit queued, as the findings statement returns them, to
// Config.Deliver: a hosttable.Handover.
type delivery struct {
	to     Deliverer
	tables Tables
}

// Hand decodes the queued commands (raw, a JSON array of {id, name, payload}) and delivers
// them in tx.
func (d *delivery) Hand(ctx context.Context, tx pgx.Tx, raw []byte) error {
	var rows []struct {
		ID      int64           `json:"id"`
		Name    string          `json:"name"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		return fmt.Errorf("read queued commands: %w", err)
	}
	if len(rows) == 0 {
		return nil
	}
	cmds := make([]QueuedCommand, len(rows))
	for i, r := range rows {
		c, err := reconcile.DecodeCommand(r.Name, r.Payload)
		if err != nil {
			return err
		}
		cmds[i] = QueuedCommand{OutboxID: r.ID, Tables: d.tables, Command: c, Payload: r.Payload}
	}
	if err := d.to.Deliver(ctx, tx, cmds); err != nil {
		return fmt.Errorf("deliver %d commands: %w", len(cmds), err)
	}
	return nil
}
