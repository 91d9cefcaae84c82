package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// dispatchSQL holds the dispatcher's statements for one set of tables. Every statement that
// changes a claimed row is guarded by id AND attempt AND status = 'running': a dispatcher whose
// lease was taken over changes nothing.
type dispatchSQL struct {
	claim, complete, renew, release, snooze, retry, bury string
}

func newDispatchSQL(t Tables) dispatchSQL {
	outbox := t.table("outbox")
	// appendError keeps the last 20 errors with their attempt and time ($3 is the error).
	const appendError = `errors = (SELECT coalesce(jsonb_agg(e ORDER BY n), '[]') FROM (
			SELECT e, n FROM jsonb_array_elements(errors || jsonb_build_array(jsonb_build_object(
				'attempt', attempt, 'at', now(), 'error', $3::text))) WITH ORDINALITY AS x(e, n)
			ORDER BY n DESC LIMIT 20) last), last_error = $3`
	const fence = ` WHERE id = $1 AND attempt = $2 AND status = 'running'`
	return dispatchSQL{
		// Ready rows: pending and due, or running with an expired lease (available_at is the
		// lease expiry then). A row waits while an older row of its aggregate is unfinished.
		claim: `WITH c AS (
				SELECT o.id FROM ` + outbox + ` AS o
				WHERE o.status IN ('pending', 'running') AND o.available_at <= now()
					AND NOT EXISTS (SELECT 1 FROM ` + outbox + ` AS p
						WHERE p.status IN ('pending', 'running') AND p.aggregate_type = o.aggregate_type
							AND p.aggregate_id = o.aggregate_id AND p.id < o.id)
				ORDER BY o.available_at, o.id
				LIMIT $3
				FOR UPDATE SKIP LOCKED
			)
			UPDATE ` + outbox + ` AS o SET status = 'running', attempt = o.attempt + 1, lease_owner = $1,
				lease_expires_at = now() + $2::interval, available_at = now() + $2::interval
			FROM c WHERE o.id = c.id
			RETURNING o.id, o.aggregate_type, o.aggregate_id, o.event_type, o.payload, coalesce(o.finding_id, 0),
				o.attempt, o.failures, o.created_at`,
		complete: `UPDATE ` + outbox + ` SET status = 'done', processed_at = now(), lease_owner = NULL,
			lease_expires_at = NULL` + fence,
		renew: `UPDATE ` + outbox + ` SET lease_expires_at = now() + $3::interval, available_at = now() + $3::interval` + fence,
		release: `UPDATE ` + outbox + ` SET status = 'pending', available_at = now(), lease_owner = NULL,
			lease_expires_at = NULL, last_error = $3` + fence,
		snooze: `UPDATE ` + outbox + ` SET status = 'pending', available_at = now() + $4::interval, lease_owner = NULL,
			lease_expires_at = NULL, ` + appendError + fence,
		retry: `UPDATE ` + outbox + ` SET status = 'pending', failures = failures + 1, available_at = now() + $4::interval,
			lease_owner = NULL, lease_expires_at = NULL, ` + appendError + fence,
		bury: `UPDATE ` + outbox + ` SET status = 'dead', failures = failures + 1, dead_at = now(), lease_owner = NULL,
			lease_expires_at = NULL, ` + appendError + fence,
	}
}

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
		return nil, fmt.Errorf("pgstore: dead commands: limit %d must be positive", limit)
	}
	rows, err := d.db.Query(ctx, `SELECT id, aggregate_type, aggregate_id, event_type, coalesce(finding_id, 0), failures,
			coalesce(last_error, ''), dead_at, errors
		FROM `+d.cfg.Tables.table("outbox")+` WHERE status = 'dead' AND id > $1 ORDER BY id LIMIT $2`, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("pgstore: dead commands: %w", err)
	}
	cmds, err := pgx.CollectRows(rows, pgx.RowToStructByPos[DeadCommand])
	if err != nil {
		return nil, fmt.Errorf("pgstore: dead commands: %w", err)
	}
	return cmds, nil
}

// ErrNotDead is returned by Redrive for a command that is not dead.
var ErrNotDead = errors.New("pgstore: the command is not dead")

// Redrive gives a dead command a new set of attempts, due now; its error history is kept.
func (d *Dispatcher) Redrive(ctx context.Context, id int64) error {
	tag, err := d.db.Exec(ctx, `UPDATE `+d.cfg.Tables.table("outbox")+` SET status = 'pending', failures = 0,
		available_at = now(), dead_at = NULL WHERE id = $1 AND status = 'dead'`, id)
	if err != nil {
		return fmt.Errorf("pgstore: redrive command %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %d", ErrNotDead, id)
	}
	return nil
}
