package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
)

// The canonical writer: the one place a payment's status changes.
//
// The Stripe webhook handler (webhook.go) and the reconciler's repair commands (repair.go) both
// call it, and often for the same payment: a webhook that arrives after the reconciler found
// its drift, or a repair and Stripe's retry of that webhook at the same moment. Each transition
// is a guarded update (WHERE status = 'pending'), so whichever comes second changes nothing:
// one status change and one ledger row, however many times and by whichever path it is
// applied. Then, changed or not, the open findings about the payment are resolved in the same
// transaction, so a finding closes exactly when its fix commits, by the path that got there,
// and the other path's call is a no-op. Everything happens in the caller's transaction: the
// webhook's own, or the dispatcher's, which marks the command done in it.

// Actors, as recorded on ledger rows and finding resolutions.
const (
	actorWebhook    = "stripe-webhook"
	actorReconciler = "reconciler"
)

// writer is the signature of applyPaymentSucceeded and applyPaymentCanceled.
type writer func(ctx context.Context, tx pgx.Tx, store *pgstore.Store[string], paymentID int64, actor string) (changed bool, err error)

const (
	// markPaid moves a pending payment to paid and books it in the ledger, in one statement,
	// returning the number of payments changed: 0 or 1.
	markPaid = `
WITH paid AS (
	UPDATE reconcile_demo.payments SET status = 'paid', updated_at = now()
	WHERE id = $1 AND status = 'pending'
	RETURNING id, amount
), booked AS (
	INSERT INTO reconcile_demo.ledger (payment_id, entry, amount, applied_by)
	SELECT id, 'payment_succeeded', amount, $2 FROM paid
)
SELECT count(*) FROM paid`
	// markFailed moves a pending payment to failed; nothing moves money.
	markFailed = `
WITH failed AS (
	UPDATE reconcile_demo.payments SET status = 'failed', updated_at = now()
	WHERE id = $1 AND status = 'pending'
	RETURNING id
)
SELECT count(*) FROM failed`
	// paymentStatus reads a payment's status after a guarded update changed nothing. It is a
	// statement of its own, not part of the update's: under READ COMMITTED its snapshot is
	// taken after the update waited for a concurrent writer of the row to commit, so it sees
	// what that writer did.
	paymentStatus = `SELECT status FROM reconcile_demo.payments WHERE id = $1`
)

// applyPaymentSucceeded records that a payment's PaymentIntent succeeded: a pending payment
// becomes paid with one ledger row, and the open missed_success findings about it are resolved
// by actor. A payment already paid is left as it is, and its findings resolved all the same.
func applyPaymentSucceeded(ctx context.Context, tx pgx.Tx, store *pgstore.Store[string], paymentID int64, actor string) (bool, error) {
	var n int
	if err := tx.QueryRow(ctx, inSchema(store.Config().Schema, markPaid), paymentID, actor).Scan(&n); err != nil {
		return false, fmt.Errorf("payments: mark payment %d paid: %w", paymentID, err)
	}
	return settle(ctx, tx, store, paymentID, n == 1, stripeadapter.LocalPaid, stripeadapter.KindMissedSuccess, actor)
}

// applyPaymentCanceled records that a payment's PaymentIntent was canceled: a pending payment
// becomes failed, and the open missed_cancel findings about it are resolved by actor. A
// payment already failed is left as it is, and its findings resolved all the same.
func applyPaymentCanceled(ctx context.Context, tx pgx.Tx, store *pgstore.Store[string], paymentID int64, actor string) (bool, error) {
	var n int
	if err := tx.QueryRow(ctx, inSchema(store.Config().Schema, markFailed), paymentID).Scan(&n); err != nil {
		return false, fmt.Errorf("payments: mark payment %d failed: %w", paymentID, err)
	}
	return settle(ctx, tx, store, paymentID, n == 1, stripeadapter.LocalFailed, stripeadapter.KindMissedCancel, actor)
}

// settle finishes a transition to status to after its guarded update: if the update changed
// nothing, the payment must be in status to already (the other path got there first), or it
// is a conflict. Then it resolves the open findings of kind about the payment, as repaired by
// actor.
func settle(ctx context.Context, tx pgx.Tx, store *pgstore.Store[string], paymentID int64, changed bool, to, kind, actor string) (bool, error) {
	note := "pending -> " + to
	if !changed {
		var status string
		err := tx.QueryRow(ctx, inSchema(store.Config().Schema, paymentStatus), paymentID).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, fmt.Errorf("%w: %d", errNoPayment, paymentID)
		}
		if err != nil {
			return false, fmt.Errorf("payments: read payment %d: %w", paymentID, err)
		}
		if status != to {
			return false, &conflictError{PaymentID: paymentID, Status: status, Want: to}
		}
		note = "already " + to + "; nothing to change"
	}
	_, err := store.ResolveRecordFindings(ctx, tx, strconv.FormatInt(paymentID, 10), []string{kind},
		reconcile.Resolution{As: reconcile.ResolutionRepaired, By: actor, Note: note})
	if err != nil {
		return false, fmt.Errorf("payments: payment %d: %w", paymentID, err)
	}
	return changed, nil
}

// errNoPayment means the payment a command names does not exist.
var errNoPayment = errors.New("payments: no such payment")

// conflictError means a payment is neither in the state a transition starts from nor in the one
// it leads to: a success for a payment that failed here, a cancel for one already paid. Money
// may have been taken for an order we gave up on, or the other way round; only a person can
// decide, so the writer changes nothing and leaves the findings open.
type conflictError struct {
	PaymentID    int64
	Status, Want string
}

func (e *conflictError) Error() string {
	return fmt.Sprintf("payments: payment %d is %s, not pending or %s: a person must review it", e.PaymentID, e.Status, e.Want)
}
