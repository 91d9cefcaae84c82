package riverdelivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// WorkerConfig configures a Worker. The zero value works.
type WorkerConfig struct {
	// Logger receives a line for every job that applies nothing because its outbox row does
	// not wait for it (a job retried after it applied its command, enqueued again, naming the
	// tables another way, or forged). Nil means slog.Default().
	Logger *slog.Logger
}

// Worker is the River worker of repair commands. A job names an outbox row (Args); the Worker
// applies the command that row holds only while the row waits for that very job: handed over
// to River, pending, and naming the job as its delivery (the Deliverer names it when it
// enqueues the job, Redrive when it enqueues another). In one transaction it locks the row,
// applies the command through the writer registered for its name (pgoutbox.ApplyCommand), marks
// the row done and completes the job (river.JobCompleteTx): a command applies once, whatever
// River or anyone who can insert River jobs does. Any other job completes having applied
// nothing, logged and recorded as its output. Register it with river.AddWorker.
type Worker struct {
	river.WorkerDefaults[Args]
	db  pgstore.DB
	log *slog.Logger

	mu      sync.RWMutex
	writers map[string]pgoutbox.CommandWriter
}

// NewWorker returns a Worker with no writers. db is the database of the store and of River's
// client (River's tables and the reconciler's in one database: the completion shares the
// repair's transaction). A job names the tables of the store that queued it and is applied
// against those, so one Worker serves stores whose tables differ.
func NewWorker(db pgstore.DB, cfg WorkerConfig) (*Worker, error) {
	if db == nil {
		return nil, errors.New("riverdelivery: db is nil")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Worker{db: db, log: cfg.Logger, writers: map[string]pgoutbox.CommandWriter{}}, nil
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

// undefinedTable is PostgreSQL's SQLSTATE for a table that does not exist.
const undefinedTable = "42P01"

// output is what a job records as its output (river.RecordOutput), so that River's UI tells a
// job that delivered its command from one that did nothing.
type output struct {
	Delivered bool   `json:"delivered"`
	Refused   string `json:"refused,omitempty"`
}

// Work applies the command of the job's outbox row if the row waits for this job, as
// pgoutbox's Dispatcher does (pgoutbox.ApplyCommand: a command whose finding is already
// resolved is marked done without calling the writer). A writer's error fails the attempt and
// River retries it with its backoff, until it discards the job after MaxAttempts;
// pgoutbox.Permanent cancels the job at once, and pgoutbox.RetryLater snoozes it without
// spending an attempt. A crash after the writer ran but before the commit leaves nothing: River
// rescues the job and runs it again. Jobs of one row are serialized by the row's lock, so a
// second attempt of the job (River's rescuer running it while the first still runs) waits and
// then finds the row done.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	id := job.Args.OutboxID
	q, err := newOutboxSQL(pgstore.Tables{Schema: job.Args.Schema, Prefix: job.Args.Prefix})
	if err != nil {
		return river.JobCancel(fmt.Errorf("riverdelivery: command %d: %w", id, err))
	}
	var refused string
	err = pgx.BeginFunc(ctx, w.db, func(tx pgx.Tx) error {
		var name, status string
		var payload []byte
		var handed bool
		var owner *string
		err := tx.QueryRow(ctx, q.claim, id).Scan(&name, &payload, &status, &handed, &owner)
		if refused = refusal(err, job.ID, status, handed, owner); refused != "" {
			return nil
		}
		if err != nil {
			if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == undefinedTable {
				return pgoutbox.Permanent(err) // tables that do not exist: forged, or a misconfiguration
			}
			return fmt.Errorf("read the outbox row: %w", err)
		}
		cmd, err := reconcile.DecodeCommand(name, payload)
		if err != nil {
			return pgoutbox.Permanent(err)
		}
		w.mu.RLock()
		writer := w.writers[cmd.Name]
		w.mu.RUnlock()
		if writer == nil {
			return pgoutbox.Permanent(fmt.Errorf("no writer is registered for command %q", cmd.Name))
		}
		if err := pgoutbox.ApplyCommand(ctx, tx, q.tables, cmd, writer); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, q.done, id, fence(job.ID))
		switch {
		case err != nil:
			return fmt.Errorf("mark the outbox row done: %w", err)
		case tag.RowsAffected() != 1:
			// The row is locked: only a writer that changed it gets here.
			return errors.New("mark the outbox row done: the writer changed the row")
		}
		// Best effort: outside a River client (a test calling Work) there is nowhere to record.
		_ = river.RecordOutput(ctx, output{Delivered: true})
		if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
			return fmt.Errorf("complete job %d: %w", job.ID, err)
		}
		return nil
	})
	if err != nil {
		// Nothing was delivered, whatever the rolled-back transaction recorded.
		_ = river.RecordOutput(ctx, output{})
		if after, later := pgoutbox.IsRetryLater(err); later {
			return river.JobSnooze(after)
		}
		if pgoutbox.IsPermanent(err) {
			return river.JobCancel(fmt.Errorf("riverdelivery: command %d: %w", id, err))
		}
		return fmt.Errorf("riverdelivery: command %d: %w", id, err)
	}
	if refused != "" {
		w.log.LogAttrs(ctx, slog.LevelWarn, "riverdelivery: the outbox row does not wait for this job; nothing applied",
			slog.Int64("job", job.ID), slog.Int64("command", id), slog.String("schema", q.tables.Schema),
			slog.String("prefix", q.tables.Prefix), slog.String("reason", refused))
		_ = river.RecordOutput(ctx, output{Refused: refused})
	}
	return nil
}

// refusal says why job may not apply the outbox row read with err, status, handed and owner;
// empty if it may (or err is another error).
func refusal(err error, job int64, status string, handed bool, owner *string) string {
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "the outbox row does not exist"
	case err != nil:
		return ""
	case !handed:
		return "the command was not handed over to River (a pgoutbox Dispatcher applies it)"
	case status != "pending":
		return "the command is " + status
	case owner == nil:
		return "the outbox row names no job (re-drive it with Deliverer.Redrive)"
	case *owner != fence(job):
		return "the outbox row waits for " + *owner
	}
	return ""
}
