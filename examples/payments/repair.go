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
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// repairStats counts what the repair handlers' writer calls did: changed a payment, or found
// it already changed (by the webhook). A handler counts before its transaction commits, so a
// commit that then fails would be counted too; the run's checks count from the tables.
type repairStats struct {
	changed, unchanged atomic.Int64
}

// newDispatcher returns a dispatcher over the outbox in schema with a handler for each repair
// command the money policy queues. Each handler applies its command through the canonical
// writer, as the webhook does, as actor "reconciler": a cancel as the command says, a success,
// a refund or a dispute as Stripe holds the payment now, read again through gateway.
func newDispatcher(db pgstore.DB, schema string, store *pgstore.Store[paymentRow], gateway paymentReader, stats *repairStats, logger *slog.Logger) (*pgoutbox.Dispatcher, error) {
	d, err := pgoutbox.NewDispatcher(db, pgoutbox.Config{
		Tables: store.Tables(),
		// Workers: zero takes what the pool allows (each running handler holds a connection
		// and the dispatcher needs two more): 2 on pgxpool's default of four.
		Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	cancel := func(ctx context.Context, tx pgx.Tx, id int64) (bool, error) {
		return applyPaymentCanceled(ctx, tx, store, id, actorReconciler)
	}
	if err := pgoutbox.HandleCommand(d, stripepolicy.CommandApplyPaymentCanceled, repairWith(cancel, stats)); err != nil {
		return nil, err
	}
	for name, apply := range map[string]moneyWriter{
		stripepolicy.CommandApplyPaymentSucceeded: applyPaymentSucceeded,
		stripepolicy.CommandApplyRefund:           applyRefunds,
		stripepolicy.CommandApplyDisputeStatus:    applyDispute,
	} {
		run := func(ctx context.Context, tx pgx.Tx, id int64) (bool, error) {
			read := func(ctx context.Context) (*stripepolicy.Payment, error) {
				return readAtStripe(ctx, tx, schema, gateway, id)
			}
			// In a savepoint, whose rollback releases the row's lock before a second read.
			return applyFresh(ctx, tx, read, func(ctx context.Context, sp pgx.Tx, pay *stripepolicy.Payment) (bool, error) {
				return apply(ctx, sp, store, id, pay, actorReconciler)
			})
		}
		if err := pgoutbox.HandleCommand(d, name, repairWith(run, stats)); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// intentOf reads the PaymentIntent of a payment.
const intentOf = `SELECT external_id FROM reconcile_demo.payments WHERE id = $1`

// readAtStripe reads the payment paymentID as Stripe holds it now. The command's transaction
// is open meanwhile, holding its connection but no lock on the payment: one call, bounded by
// the gateway's timeout.
func readAtStripe(ctx context.Context, tx pgx.Tx, schema string, gateway paymentReader, paymentID int64) (*stripepolicy.Payment, error) {
	var intentID string
	err := tx.QueryRow(ctx, inSchema(schema, intentOf), paymentID).Scan(&intentID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %d", errNoPayment, paymentID)
	}
	if err != nil {
		return nil, fmt.Errorf("payments: read payment %d: %w", paymentID, err)
	}
	pay, err := gateway.Fetch(ctx, intentID)
	switch {
	case errors.Is(err, reconcile.ErrNotFound):
		// No retry can apply the command; the sweep reports the payment as missing_externally.
		return nil, pgoutbox.Permanent(fmt.Errorf("payments: read %s at Stripe: %w", intentID, err))
	case err != nil:
		// Retried with backoff: an outage ends.
		return nil, fmt.Errorf("payments: read %s at Stripe: %w", intentID, err)
	}
	return pay, nil
}

// repairWith returns the handler of a repair command that run carries out on the payment the
// command names.
func repairWith(run func(ctx context.Context, tx pgx.Tx, paymentID int64) (bool, error), stats *repairStats) func(context.Context, pgx.Tx, reconcile.Command) error {
	return func(ctx context.Context, tx pgx.Tx, cmd reconcile.Command) error {
		id, err := strconv.ParseInt(cmd.RecordID, 10, 64)
		if err != nil || id <= 0 {
			return pgoutbox.Permanent(fmt.Errorf("payments: %s: record id %q is not a payment id", cmd.Name, cmd.RecordID))
		}
		changed, err := run(ctx, tx, id)
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
