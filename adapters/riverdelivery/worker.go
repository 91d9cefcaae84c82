package riverdelivery

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shared/pgtables"
)

// Worker is the River worker of repair commands: it applies each job's command through the
// writer registered for its name, in a transaction in which it also marks the command done in
// the outbox and completes the River job (river.JobCompleteTx), so the repair, its record and
// the job's completion commit together or not at all. Register it with river.AddWorker.
type Worker struct {
	river.WorkerDefaults[Args]
	db     pgstore.DB
	tables pgstore.Tables // of jobs whose Args name none

	mu      sync.RWMutex
	writers map[string]pgoutbox.CommandWriter
}

// NewWorker returns a Worker with no writers. db is the database of the store and of River's
// client (River's tables and the reconciler's in one database: the completion shares the
// repair's transaction); tables names the reconciler's tables, as store.Tables() does
// (pgstore.Tables{Schema: s} for a store with Config.Schema s). A job names the tables of the
// store that queued it, and is applied against those: one Worker serves stores whose tables
// differ; tables is used only for jobs that name none.
func NewWorker(db pgstore.DB, tables pgstore.Tables) (*Worker, error) {
	if db == nil {
		return nil, errors.New("riverdelivery: db is nil")
	}
	prefix, err := pgtables.Resolve(tables.Prefix, tables.Schema)
	if err != nil {
		return nil, fmt.Errorf("riverdelivery: tables: %w", err)
	}
	tables.Prefix = prefix
	return &Worker{db: db, tables: tables, writers: map[string]pgoutbox.CommandWriter{}}, nil
}

// jobTables returns the tables a job's command belongs to: those its Args name (the store's
// that queued it), else the Worker's own.
func (w *Worker) jobTables(a Args) (pgstore.Tables, error) {
	if a.Prefix == "" {
		return w.tables, nil
	}
	if _, err := pgtables.Resolve(a.Prefix, a.Schema); err != nil {
		return pgstore.Tables{}, err
	}
	return pgstore.Tables{Prefix: a.Prefix, Schema: a.Schema}, nil
}

// Handle registers the canonical writer of one command name, the function a pgoutbox
// Dispatcher would be given with pgoutbox.HandleCommand. The writer resolves the command's
// finding (reconcile.ResolutionRepaired) in its transaction. Register every writer before the
// client starts; a command nobody handles is cancelled.
func (w *Worker) Handle(name string, writer pgoutbox.CommandWriter) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case name == "" || writer == nil:
		return errors.New("riverdelivery: Handle needs a name and a writer")
	case w.writers[name] != nil:
		return fmt.Errorf("riverdelivery: %q already has a writer", name)
	}
	w.writers[name] = writer
	return nil
}

// Work applies one command as pgoutbox's Dispatcher does (pgoutbox.ApplyCommand: a command
// whose finding is already resolved is completed without calling the writer). A writer's error
// fails the attempt and River retries it with its backoff, until it discards the job after
// MaxAttempts; pgoutbox.Permanent cancels the job at once, and pgoutbox.RetryLater snoozes it
// without spending an attempt. A crash after the writer ran but before the commit leaves
// nothing: River rescues the job and runs it again.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	cmd, err := reconcile.DecodeCommand(job.Args.Name, job.Args.Payload)
	if err != nil {
		return river.JobCancel(fmt.Errorf("riverdelivery: command %d: %w", job.Args.OutboxID, err))
	}
	tables, err := w.jobTables(job.Args)
	if err != nil {
		return river.JobCancel(fmt.Errorf("riverdelivery: command %d: tables: %w", job.Args.OutboxID, err))
	}
	done := `UPDATE ` + pgtables.Name(tables.Prefix, tables.Schema, "outbox") +
		` SET status = 'done', processed_at = now(), last_error = NULL WHERE id = $1`
	w.mu.RLock()
	writer := w.writers[cmd.Name]
	w.mu.RUnlock()
	if writer == nil {
		return river.JobCancel(fmt.Errorf("riverdelivery: no writer is registered for command %q", cmd.Name))
	}
	err = pgx.BeginFunc(ctx, w.db, func(tx pgx.Tx) error {
		if err := pgoutbox.ApplyCommand(ctx, tx, tables, cmd, writer); err != nil {
			return err
		}
		// The outbox row may be gone (retention): the job completes all the same.
		if _, err := tx.Exec(ctx, done, job.Args.OutboxID); err != nil {
			return fmt.Errorf("mark command %d done: %w", job.Args.OutboxID, err)
		}
		if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
			return fmt.Errorf("complete job %d: %w", job.ID, err)
		}
		return nil
	})
	if after, later := pgoutbox.IsRetryLater(err); later {
		return river.JobSnooze(after)
	}
	if pgoutbox.IsPermanent(err) {
		return river.JobCancel(fmt.Errorf("riverdelivery: command %d: %w", job.Args.OutboxID, err))
	}
	if err != nil {
		return fmt.Errorf("riverdelivery: command %d: %w", job.Args.OutboxID, err)
	}
	return nil
}
