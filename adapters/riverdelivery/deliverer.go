package riverdelivery

import (
	"context"
	"encoding/json"
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

// Deliver inserts one job per command with InsertManyTx in tx, the commit's transaction, and
// names each job on its command's outbox row as the one job that may apply it: the jobs exist
// exactly when the findings and their commands do. Any other job naming the same row (one
// inserted ahead of it, or by an earlier call) can no longer apply it.
func (d *Deliverer) Deliver(ctx context.Context, tx pgx.Tx, cmds []pgstore.QueuedCommand) error {
	if len(cmds) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(cmds))
	byTables := map[pgstore.Tables]outboxSQL{}
	for i, c := range cmds {
		q, err := newOutboxSQL(c.Tables)
		if err != nil {
			return fmt.Errorf("riverdelivery: command %d: %w", c.OutboxID, err)
		}
		byTables[q.tables] = q
		params[i] = river.InsertManyParams{Args: Args{OutboxID: c.OutboxID, Schema: q.tables.Schema, Prefix: q.tables.Prefix},
			InsertOpts: d.insertOpts()}
	}
	res, err := d.client.InsertManyTx(ctx, tx, params)
	if err != nil {
		return fmt.Errorf("riverdelivery: insert %d jobs: %w", len(params), err)
	}
	// Each job's own args say which row it is for, whatever the order of the results.
	type hand struct {
		ids    []int64
		fences []string
	}
	hands := map[pgstore.Tables]*hand{}
	for _, r := range res {
		var a Args
		if err := json.Unmarshal(r.Job.EncodedArgs, &a); err != nil {
			return fmt.Errorf("riverdelivery: job %d: args: %w", r.Job.ID, err)
		}
		t := pgstore.Tables{Schema: a.Schema, Prefix: a.Prefix}
		if hands[t] == nil {
			hands[t] = &hand{}
		}
		hands[t].ids, hands[t].fences = append(hands[t].ids, a.OutboxID), append(hands[t].fences, fence(r.Job.ID))
	}
	for t, h := range hands {
		if _, err := tx.Exec(ctx, byTables[t].hand, h.ids, h.fences); err != nil {
			return fmt.Errorf("riverdelivery: name %d jobs on their outbox rows: %w", len(h.ids), err)
		}
	}
	return nil
}

func (d *Deliverer) insertOpts() *river.InsertOpts {
	return &river.InsertOpts{Queue: d.cfg.Queue, MaxAttempts: d.cfg.MaxAttempts, Priority: d.cfg.Priority}
}

// ErrNotWaiting is returned by Redrive for a command that does not wait for River: it does
// not exist, it is done, or it was queued for a pgoutbox Dispatcher (whose Redrive re-drives
// it).
var ErrNotWaiting = errors.New("riverdelivery: the command does not wait for River")

// Redrive enqueues a new job for a command that waits for River (its outbox row pending and
// handed over) and names it on the row as the one job that may apply it, in one transaction in
// db (the store's database, or a transaction of the caller's); it records who did it in the
// finding's history, and returns the job's id. The command's earlier jobs can no longer apply
// it. Use it when the command's job is gone (River's cleaner removes discarded and cancelled
// jobs, by default after a week), when the row names none, or when its job waits where no
// worker takes it (a queue no longer served); while a discarded or cancelled job is kept,
// retrying it with River (Client.JobRetry) does the same. A job of the command running
// meanwhile either applied it first (Redrive then returns ErrNotWaiting) or applies nothing.
// tables are the store's tables (Store.Tables). A command that is done is not applied again:
// Redrive returns ErrNotWaiting.
func (d *Deliverer) Redrive(ctx context.Context, db pgstore.DB, tables pgstore.Tables, outboxID int64, actor string) (int64, error) {
	if actor == "" {
		return 0, errors.New("riverdelivery: redrive: the actor is empty")
	}
	if db == nil {
		return 0, errors.New("riverdelivery: redrive: db is nil")
	}
	q, err := newOutboxSQL(tables)
	if err != nil {
		return 0, fmt.Errorf("riverdelivery: redrive command %d: %w", outboxID, err)
	}
	var jobID int64
	var notWaiting string
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var status string
		var handed bool
		var findingID *int64
		err := tx.QueryRow(ctx, q.lock, outboxID).Scan(&status, &handed, &findingID)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			notWaiting = "does not exist"
		case err != nil:
			return fmt.Errorf("read the outbox row: %w", err)
		case !handed:
			notWaiting = "was queued for a pgoutbox Dispatcher"
		case status != "pending":
			notWaiting = "is " + status
		}
		if notWaiting != "" {
			return nil
		}
		res, err := d.client.InsertTx(ctx, tx, Args{OutboxID: outboxID, Schema: q.tables.Schema, Prefix: q.tables.Prefix}, d.insertOpts())
		if err != nil {
			return fmt.Errorf("insert the job: %w", err)
		}
		jobID = res.Job.ID
		if _, err := tx.Exec(ctx, q.hand, []int64{outboxID}, []string{fence(jobID)}); err != nil {
			return fmt.Errorf("name the job on the outbox row: %w", err)
		}
		if _, err := tx.Exec(ctx, q.event, findingID, actor, fmt.Sprintf("command %d, as %s", outboxID, fence(jobID))); err != nil {
			return fmt.Errorf("record it in the finding's history: %w", err)
		}
		return nil
	})
	switch {
	case err != nil:
		return 0, fmt.Errorf("riverdelivery: redrive command %d: %w", outboxID, err)
	case notWaiting != "":
		return 0, fmt.Errorf("%w: command %d %s", ErrNotWaiting, outboxID, notWaiting)
	}
	return jobID, nil
}
