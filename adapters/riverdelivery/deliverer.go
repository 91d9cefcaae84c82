package riverdelivery

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// Config configures a Deliverer. The zero value works.
type Config struct {
	// Queue is the River queue the jobs go to. Empty means river.QueueDefault.
	Queue string
	// MaxAttempts is how many attempts River makes before it discards a job. Zero means the
	// client's (River's default: 25, over about three weeks of backoff).
	MaxAttempts int
	// Priority is the jobs' River priority, 1 (first) to 4. Zero means River's default, 1.
	Priority int
}

// Deliverer enqueues repair commands as River jobs: give it to pgstore.Config.Deliver.
type Deliverer struct {
	client *river.Client[pgx.Tx]
	cfg    Config
}

var _ pgstore.Deliverer = (*Deliverer)(nil)

// New returns a Deliverer inserting with client, which needs no workers (an insert-only client
// will do) and must use the same database as the store.
func New(client *river.Client[pgx.Tx], cfg Config) (*Deliverer, error) {
	switch {
	case client == nil:
		return nil, errors.New("riverdelivery: client is nil")
	case cfg.MaxAttempts < 0:
		return nil, fmt.Errorf("riverdelivery: config: MaxAttempts %d is negative", cfg.MaxAttempts)
	case cfg.Priority < 0 || cfg.Priority > 4:
		return nil, fmt.Errorf("riverdelivery: config: Priority %d is not 0 to 4", cfg.Priority)
	}
	return &Deliverer{client: client, cfg: cfg}, nil
}

// Deliver inserts one job per command with InsertManyTx in tx, the commit's transaction: the
// jobs exist exactly when the findings and their commands do. A command whose job River
// already holds (the same OutboxID in the same tables) is skipped as a duplicate.
func (d *Deliverer) Deliver(ctx context.Context, tx pgx.Tx, cmds []pgstore.QueuedCommand) error {
	if len(cmds) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(cmds))
	for i, c := range cmds {
		opts := Args{}.InsertOpts()
		opts.Queue, opts.MaxAttempts, opts.Priority = d.cfg.Queue, d.cfg.MaxAttempts, d.cfg.Priority
		params[i] = river.InsertManyParams{
			Args: Args{OutboxID: c.OutboxID, Schema: c.Tables.Schema, Prefix: c.Tables.Prefix,
				Name: c.Command.Name, RecordID: c.Command.RecordID, Payload: c.Payload},
			InsertOpts: &opts,
		}
	}
	if _, err := d.client.InsertManyTx(ctx, tx, params); err != nil {
		return fmt.Errorf("riverdelivery: insert %d jobs: %w", len(params), err)
	}
	return nil
}
