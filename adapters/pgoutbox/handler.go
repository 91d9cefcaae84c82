package pgoutbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shared/pgtables"
)

// Delivery is one claimed command, as a handler sees it.
type Delivery struct {
	ID            int64
	AggregateType string
	AggregateID   string
	// Name is the command (the outbox row's event type), such as "ApplyPaymentSucceeded".
	Name    string
	Payload []byte
	// FindingID is the finding the command repairs; zero for rows the reconciler did not queue.
	FindingID int64
	// Attempt is this claim's number, 1 for the first: the fencing token every finalize is
	// guarded by. A delivery with a higher attempt may exist if this one's lease expired.
	Attempt int64
	// Failures counts earlier attempts that failed and spent the retry budget.
	Failures  int
	CreatedAt time.Time
}

// Handler applies one command. Its database work goes through tx, in which the dispatcher then
// marks the command done, so the effect and the completion commit together or not at all. A
// handler must be idempotent in effect (a guarded update: a command can be delivered again
// after a crash), and should return Permanent for a command that can never succeed and
// RetryLater to wait without spending an attempt.
type Handler func(ctx context.Context, tx pgx.Tx, d Delivery) error

// HandleJSON registers a handler whose payload is decoded as JSON into T, rejecting unknown
// fields; if T has a Validate() error method it is called too. A payload that does not decode
// or validate makes the command dead at once with the reason: retrying cannot fix it.
func HandleJSON[T any](d *Dispatcher, name string, h func(ctx context.Context, tx pgx.Tx, payload T, del Delivery) error) error {
	return d.Handle(name, func(ctx context.Context, tx pgx.Tx, del Delivery) error {
		var v T
		dec := json.NewDecoder(bytes.NewReader(del.Payload))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			return Permanent(fmt.Errorf("decode %s payload: %w", name, err))
		}
		if dec.More() {
			return Permanent(fmt.Errorf("decode %s payload: data after the JSON value", name))
		}
		if val, ok := any(&v).(interface{ Validate() error }); ok {
			if err := val.Validate(); err != nil {
				return Permanent(fmt.Errorf("%s payload: %w", name, err))
			}
		}
		return h(ctx, tx, v, del)
	})
}

// CommandWriter applies one repair command through the host's canonical writer, in tx: the
// function HandleCommand registers, and the one adapters/riverdelivery's worker calls.
type CommandWriter func(ctx context.Context, tx pgx.Tx, cmd reconcile.Command) error

// HandleCommand registers a handler of a reconciler repair command, decoded and checked with
// reconcile.DecodeCommand, and applied with ApplyCommand.
func HandleCommand(d *Dispatcher, name string, h CommandWriter) error {
	return d.Handle(name, func(ctx context.Context, tx pgx.Tx, del Delivery) error {
		cmd, err := reconcile.DecodeCommand(del.Name, del.Payload)
		if err != nil {
			return Permanent(err)
		}
		return applyCommand(ctx, tx, d.sql, cmd, h)
	})
}

// ApplyCommand applies cmd through w in tx, as the Dispatcher does for HandleCommand: a
// command whose finding is already resolved is not applied (nil, without calling w): the
// webhook applied the change first, or a person decided (fixed, accepted, a false positive), or
// a newer judgment superseded it, and a repair must not overrule them. The check and w run
// under the record's lock that pgstore's commits take before they open or supersede its
// findings, and that pgstore.Store.ResolveFinding takes: a commit or a person closing the
// finding meanwhile is waited for, and the command is then not applied. A finding deleted by
// retention does not stop the command. tables names the reconciler's tables (store.Tables(),
// spelled as the store spells them: the lock is keyed by that name). Resolving the finding is
// w's part, in tx, as the canonical writer does for a webhook. A w that ends tx in its SQL (a
// COMMIT or ROLLBACK) makes an error: the command must not be completed outside it.
func ApplyCommand(ctx context.Context, tx pgx.Tx, tables pgstore.Tables, cmd reconcile.Command, w CommandWriter) error {
	prefix, err := pgtables.Resolve(tables.Prefix, tables.Schema)
	if err != nil {
		return Permanent(fmt.Errorf("tables: %w", err))
	}
	tables.Prefix = prefix
	return applyCommand(ctx, tx, newDispatchSQL(tables), cmd, w)
}

func applyCommand(ctx context.Context, tx pgx.Tx, q dispatchSQL, cmd reconcile.Command, w CommandWriter) error {
	// The lock first, then the read, in a statement of its own: it sees what a commit that
	// held the lock wrote.
	if _, err := tx.Exec(ctx, q.lockFinding, cmd.FindingID, q.findings); err != nil {
		return fmt.Errorf("lock finding %d: %w", cmd.FindingID, err)
	}
	var resolved bool
	err := tx.QueryRow(ctx, q.findingResolved, cmd.FindingID).Scan(&resolved)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// The finding is gone (deleted by retention): apply the command as asked.
	case err != nil:
		return fmt.Errorf("read finding %d: %w", cmd.FindingID, err)
	case resolved:
		return nil
	}
	if err := w(ctx, tx, cmd); err != nil {
		return err
	}
	return txEnded(tx)
}

// errTxEnded is the error of a handler or writer that ended its transaction in SQL.
var errTxEnded = errors.New("the handler ended its transaction (a COMMIT or ROLLBACK in its SQL); its work is not known to be kept")

// txEnded returns errTxEnded if tx's connection is no longer in a transaction: a ROLLBACK or
// COMMIT ran in the handler's SQL, and the completion that follows would run on its own,
// marking done a command whose repair may have been rolled back.
func txEnded(tx pgx.Tx) error {
	if c := tx.Conn(); c != nil && c.PgConn().TxStatus() == 'I' {
		return errTxEnded
	}
	return nil
}
