package pgoutbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// DeadCommand is a command that will not be tried again until re-driven.
type DeadCommand struct {
	ID            int64
	AggregateType string
	AggregateID   string
	Name          string
	FindingID     int64
	Failures      int
	LastError     string
	DeadAt        time.Time
	// Errors is the JSON array of the last errors, each with its attempt and time.
	Errors []byte
}

// DeadCommands lists dead commands, oldest first, after the given id (keyset pagination).
func (d *Dispatcher) DeadCommands(ctx context.Context, afterID int64, limit int) ([]DeadCommand, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("pgoutbox: dead commands: limit %d must be positive", limit)
	}
	rows, err := d.db.Query(ctx, d.sql.dead, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("pgoutbox: dead commands: %w", err)
	}
	cmds, err := pgx.CollectRows(rows, pgx.RowToStructByPos[DeadCommand])
	if err != nil {
		return nil, fmt.Errorf("pgoutbox: dead commands: %w", err)
	}
	return cmds, nil
}

// ErrNotDead is returned by Redrive for a command that is not dead.
var ErrNotDead = errors.New("pgoutbox: the command is not dead")

// ErrOutOfOrder is returned by Redrive when a younger command of the same aggregate has been
// applied or is queued: applying the dead one now would apply it out of order. Resolve its
// finding by hand instead (through the canonical writer), or re-drive after the younger ones
// are dead too.
var ErrOutOfOrder = errors.New("pgoutbox: a younger command of the same aggregate was applied or is queued")

// Redrive gives a dead command a new set of attempts, due now, and records who did it in its
// finding's history; its error history is kept.
func (d *Dispatcher) Redrive(ctx context.Context, id int64, actor string) error {
	if actor == "" {
		return errors.New("pgoutbox: redrive: the actor is empty")
	}
	var dead, younger, redriven bool
	err := d.db.QueryRow(ctx, d.sql.redrive, id, actor).
		Scan(&dead, &younger, &redriven)
	switch {
	case err != nil:
		return fmt.Errorf("pgoutbox: redrive command %d: %w", id, err)
	case !dead:
		return fmt.Errorf("%w: %d", ErrNotDead, id)
	case younger:
		return fmt.Errorf("pgoutbox: redrive command %d: %w", id, ErrOutOfOrder)
	case !redriven:
		return fmt.Errorf("pgoutbox: redrive command %d: it changed meanwhile", id)
	}
	return nil
}
