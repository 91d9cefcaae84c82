package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
)

// repairStats counts what the repair handlers' writer calls did: changed a payment, or found
// it already changed (by the webhook). A handler counts before its transaction commits, so a
// commit that then fails would be counted too; the run's checks count from the tables.
type repairStats struct {
	changed, unchanged atomic.Int64
}

// newDispatcher returns a dispatcher over the outbox in schema with a handler for each repair
// command the Stripe classifier queues. Each handler applies its command through the canonical
// writer, as the webhook does, as actor "reconciler".
func newDispatcher(db pgstore.DB, schema string, store *pgstore.Store[string], stats *repairStats, logger *slog.Logger) (*pgoutbox.Dispatcher, error) {
	d, err := pgoutbox.NewDispatcher(db, pgoutbox.Config{
		Tables: pgstore.Tables{Schema: schema},
		// Each running handler holds a connection, and the dispatcher needs two more: the
		// example's pool has pgxpool's default of four.
		Workers: 2,
		Logger:  logger,
	})
	if err != nil {
		return nil, err
	}
	for name, apply := range map[string]writer{
		stripeadapter.CommandApplyPaymentSucceeded: applyPaymentSucceeded,
		stripeadapter.CommandApplyPaymentCanceled:  applyPaymentCanceled,
	} {
		if err := pgoutbox.HandleCommand(d, name, repairWith(apply, store, stats)); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// repairWith returns the handler of a repair command that apply carries out.
func repairWith(apply writer, store *pgstore.Store[string], stats *repairStats) func(context.Context, pgx.Tx, reconcile.Command) error {
	return func(ctx context.Context, tx pgx.Tx, cmd reconcile.Command) error {
		id, err := strconv.ParseInt(cmd.RecordID, 10, 64)
		if err != nil || id <= 0 {
			return pgoutbox.Permanent(fmt.Errorf("payments: %s: record id %q is not a payment id", cmd.Name, cmd.RecordID))
		}
		changed, err := apply(ctx, tx, store, id, actorReconciler)
		var conflict *conflictError
		switch {
		case errors.Is(err, errNoPayment), errors.As(err, &conflict):
			// Retrying cannot help: the command goes dead with the reason, and its finding
			// stays open for a person.
			return pgoutbox.Permanent(err)
		case err != nil:
			return err
		case changed:
			stats.changed.Add(1)
		default:
			stats.unchanged.Add(1)
		}
		return nil
	}
}

// drain applies every command that is ready, a round of Work at a time, until a round finds
// none, and returns the rounds and commands claimed. A command that fails waits for its
// backoff and is left for the checks to report: the run stays short and deterministic. A host
// runs the dispatcher with Start and Stop instead.
func drain(ctx context.Context, d *pgoutbox.Dispatcher) (rounds, claimed int, err error) {
	for {
		n, err := d.Work(ctx)
		if err != nil {
			return rounds, claimed, err
		}
		if n == 0 {
			return rounds, claimed, nil
		}
		rounds++
		claimed += n
	}
}
