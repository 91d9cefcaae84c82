package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// The canonical writer: the one place a payment's status, refunds and dispute change.
//
// The Stripe webhook handler (webhook.go) and the reconciler's repair commands (repair.go) both
// call it, and often for the same payment: a webhook that arrives after the reconciler found
// its drift, or a repair and Stripe's retry of that webhook at the same moment. Each change is
// guarded (a status moves only from pending; a refunded amount only grows to Stripe's), so
// whichever comes second changes nothing: one change and one ledger row, however many times
// and by whichever path it is applied. Then, changed or not, the open findings about the
// payment that the change repairs are resolved in the same transaction, so a finding closes
// exactly when its fix commits, by the path that got there, and the other path's call is a
// no-op. Everything happens in the caller's transaction: the webhook's own, or the
// dispatcher's, which marks the command done in it. A person's decision on a dispute comes
// through the review console's reviewer (reviewer.go), which resolves the finding in it.
//
// Every change is recorded as Stripe holds the payment, which the caller passes in: the
// PaymentIntent a payment_intent.succeeded event carries, or the payment read again from
// Stripe (outside any lock) for a refund, a dispute or a repair command: the amount received,
// the amount refunded, the status of its latest dispute. Events and commands arrive late and
// out of order; the state Stripe holds now does not. A cancel alone follows from what
// happened: payment_intent.canceled moves no money.
//
// The amount refunded is Payment.AmountRefunded(), never the charge's amount_refunded: after
// a partial capture Stripe counts the released part there too, though no money went back, and
// the money policy compares the row with Payment.AmountRefunded(). A writer that booked the
// charge's field would record money that never went back, which the policy then reports as a
// refund that failed (refund_failed).

// Actors, as recorded on ledger rows and finding resolutions.
const (
	actorWebhook    = "stripe-webhook"
	actorReconciler = "reconciler"
)

// writer is the signature of applyPaymentCanceled.
type writer func(ctx context.Context, tx pgx.Tx, store *pgstore.Store[paymentRow], paymentID int64, actor string) (changed bool, err error)

// moneyWriter is the signature of applyPaymentSucceeded, applyRefunds and applyDispute: they
// record what pay, the payment as Stripe holds it, says.
type moneyWriter func(ctx context.Context, tx pgx.Tx, store *pgstore.Store[paymentRow], paymentID int64, pay *stripepolicy.Payment, actor string) (changed bool, err error)

const (
	// markPaid moves a locked pending payment to paid and books what Stripe received ($3) in
	// the ledger.
	markPaid = `
WITH paid AS (
	UPDATE reconcile_demo.payments SET status = 'paid', updated_at = now()
	WHERE id = $1 AND status = 'pending'
	RETURNING id
)
INSERT INTO reconcile_demo.ledger (payment_id, entry, amount, applied_by)
SELECT id, 'payment_succeeded', $3, $2 FROM paid`
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
	// lockPayment reads what a success, a refund or a dispute changes, and locks the row until
	// the transaction ends: a concurrent writer of the payment waits, then reads what this one did.
	lockPayment = `SELECT status, amount, currency, amount_refunded, dispute_status
		FROM reconcile_demo.payments WHERE id = $1 FOR UPDATE`
	// markRefunded sets a payment's refunded amount ($2) and books the difference ($3, negative).
	markRefunded = `
WITH refunded AS (
	UPDATE reconcile_demo.payments SET amount_refunded = $2, updated_at = now()
	WHERE id = $1
	RETURNING id
)
INSERT INTO reconcile_demo.ledger (payment_id, entry, amount, applied_by)
SELECT id, 'refund', $3, $4 FROM refunded`
	// markDisputed sets a payment's dispute status.
	markDisputed = `UPDATE reconcile_demo.payments SET dispute_status = $2, updated_at = now() WHERE id = $1`
)

// applyPaymentSucceeded records that a payment's PaymentIntent succeeded, as pay holds it: a
// pending payment becomes paid with one ledger row for what Stripe received, and the open
// missed_success findings about it are resolved by actor. A payment already paid is left as
// it is, and its findings resolved all the same. An intent in another currency or amount than
// the row's, or captured in part, is a conflict: the customer paid other than our books say,
// and whether to ship, charge again or refund is a person's decision (currency_mismatch,
// amount_mismatch, partial_capture). A host that captures in part records the capture here,
// and compares amount_received with it instead.
func applyPaymentSucceeded(ctx context.Context, tx pgx.Tx, store *pgstore.Store[paymentRow], paymentID int64, pay *stripepolicy.Payment, actor string) (bool, error) {
	schema := store.Config().Schema
	row, err := lock(ctx, tx, schema, paymentID)
	if err != nil {
		return false, err
	}
	pi := pay.Intent
	switch {
	case pi.Status != stripe.PaymentIntentStatusSucceeded:
		return false, &conflictError{PaymentID: paymentID, Reason: fmt.Sprintf("is %s, its PaymentIntent %s, not succeeded", row.Status, pi.Status)}
	case !strings.EqualFold(string(pi.Currency), row.Currency):
		return false, &conflictError{PaymentID: paymentID, Reason: fmt.Sprintf("is in %s, its payment at Stripe in %s",
			strings.ToUpper(row.Currency), strings.ToUpper(string(pi.Currency)))}
	case pi.Amount != row.Amount:
		return false, &conflictError{PaymentID: paymentID, Reason: fmt.Sprintf("charges %s, its PaymentIntent %s",
			reconcile.FormatAmount(row.Amount, row.Currency), reconcile.FormatAmount(pi.Amount, row.Currency))}
	case pi.AmountReceived != pi.Amount:
		return false, &conflictError{PaymentID: paymentID, Reason: fmt.Sprintf("charges %s, Stripe captured %s",
			reconcile.FormatAmount(row.Amount, row.Currency), reconcile.FormatAmount(pi.AmountReceived, row.Currency))}
	case row.Status == stripepolicy.LocalPaid:
		return false, resolve(ctx, tx, store, paymentID, succeededKinds, actor, "already paid; nothing to change")
	case row.Status != stripepolicy.LocalPending:
		return false, &conflictError{PaymentID: paymentID, Reason: fmt.Sprintf("is %s, not pending or paid", row.Status)}
	}
	if _, err := tx.Exec(ctx, inSchema(schema, markPaid), paymentID, actor, pi.AmountReceived); err != nil {
		return false, fmt.Errorf("payments: mark payment %d paid: %w", paymentID, err)
	}
	note := "pending -> paid, " + reconcile.FormatAmount(pi.AmountReceived, row.Currency) + " received"
	return true, resolve(ctx, tx, store, paymentID, succeededKinds, actor, note)
}

// applyPaymentCanceled records that a payment's PaymentIntent was canceled: a pending payment
// becomes failed, and the open missed_cancel findings about it are resolved by actor. A
// payment already failed is left as it is, and its findings resolved all the same.
func applyPaymentCanceled(ctx context.Context, tx pgx.Tx, store *pgstore.Store[paymentRow], paymentID int64, actor string) (bool, error) {
	var n int
	if err := tx.QueryRow(ctx, inSchema(store.Config().Schema, markFailed), paymentID).Scan(&n); err != nil {
		return false, fmt.Errorf("payments: mark payment %d failed: %w", paymentID, err)
	}
	return settle(ctx, tx, store, paymentID, n == 1, stripepolicy.LocalFailed, canceledKinds, actor)
}

// settle finishes a transition to status to after its guarded update: if the update changed
// nothing, the payment must be in status to already (the other path got there first), or it
// is a conflict. Then it resolves the open findings of kinds about the payment, as repaired by
// actor.
func settle(ctx context.Context, tx pgx.Tx, store *pgstore.Store[paymentRow], paymentID int64, changed bool, to string, kinds []string, actor string) (bool, error) {
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
			return false, &conflictError{PaymentID: paymentID, Reason: fmt.Sprintf("is %s, not pending or %s", status, to)}
		}
		note = "already " + to + "; nothing to change"
	}
	return changed, resolve(ctx, tx, store, paymentID, kinds, actor, note)
}

// The findings each writer repairs, and resolves once it has written: the policy's kinds whose
// repair is the writer's command (missed_success; missed_cancel; missed_refund and
// missed_partial_refund; dispute_won and dispute_updated). Never every kind of the payment:
// the findings meant for a person (a refund that failed, a dispute lost) stay open.
var (
	succeededKinds = moneyPolicy.KindsRepairedBy(stripepolicy.CommandApplyPaymentSucceeded)
	canceledKinds  = moneyPolicy.KindsRepairedBy(stripepolicy.CommandApplyPaymentCanceled)
	refundKinds    = moneyPolicy.KindsRepairedBy(stripepolicy.CommandApplyRefund)
	// A dispute's outcome or progress, which asks nothing of anyone. A dispute that needs a
	// response, or one lost, stays with a person whatever the row records.
	disputeKinds = moneyPolicy.KindsRepairedBy(stripepolicy.CommandApplyDisputeStatus)
)

// applyRefunds records the refunds of a payment as Stripe holds them in pay: a payment that has
// recorded less than its charge's amount_refunded catches up, with a ledger row for the
// difference, and its open missed_refund and missed_partial_refund findings are resolved by
// actor. A payment that has recorded as much is left as it is, its findings resolved all the
// same. One that has recorded more (a refund that failed after it succeeded, once a second
// read of Stripe agrees: applyFresh) or in another currency is a conflict: whether to charge the customer again, or to refund once more, is a
// person's decision. So is one that failed here: its ledger never booked the money, and a
// refund row would book money going back that, for our books, never came.
func applyRefunds(ctx context.Context, tx pgx.Tx, store *pgstore.Store[paymentRow], paymentID int64, pay *stripepolicy.Payment, actor string) (bool, error) {
	schema := store.Config().Schema
	row, err := lock(ctx, tx, schema, paymentID)
	if err != nil {
		return false, err
	}
	currency, recorded := row.Currency, row.AmountRefunded
	refunded, stripeCurrency := refundedAtStripe(pay)
	switch {
	case row.Status == stripepolicy.LocalFailed:
		return false, &conflictError{PaymentID: paymentID, Reason: fmt.Sprintf("is %s, Stripe refunded %s of it",
			row.Status, reconcile.FormatAmount(refunded, stripeCurrency))}
	case !strings.EqualFold(stripeCurrency, currency):
		return false, &conflictError{PaymentID: paymentID, Reason: fmt.Sprintf("is in %s, its payment at Stripe in %s",
			strings.ToUpper(currency), strings.ToUpper(stripeCurrency))}
	case refunded > row.Amount:
		return false, &conflictError{PaymentID: paymentID, Reason: fmt.Sprintf("charges %s, Stripe refunded %s",
			reconcile.FormatAmount(row.Amount, currency), reconcile.FormatAmount(refunded, currency))}
	case recorded > refunded:
		return false, &conflictError{PaymentID: paymentID, stale: true, Reason: fmt.Sprintf("has %s refunded, Stripe only %s",
			reconcile.FormatAmount(recorded, currency), reconcile.FormatAmount(refunded, currency))}
	case recorded == refunded:
		note := "already refunded " + reconcile.FormatAmount(refunded, currency) + "; nothing to change"
		return false, resolve(ctx, tx, store, paymentID, refundKinds, actor, note)
	}
	if _, err := tx.Exec(ctx, inSchema(schema, markRefunded), paymentID, refunded, recorded-refunded, actor); err != nil {
		return false, fmt.Errorf("payments: record the refunds of payment %d: %w", paymentID, err)
	}
	note := fmt.Sprintf("refunded %s -> %s", reconcile.FormatAmount(recorded, currency), reconcile.FormatAmount(refunded, currency))
	return true, resolve(ctx, tx, store, paymentID, refundKinds, actor, note)
}

// disputeForAPerson are the dispute statuses the money policy sends to a person
// (dispute_lost, dispute_needs_response). applyDispute never records one: the row would then
// agree with Stripe, and the sweep and the lanes would find nothing to show anyone, however
// near the dispute's due_by. The person records it, once decided (applyDisputeDecided).
var disputeForAPerson = []string{
	string(stripe.DisputeStatusLost), string(stripe.DisputeStatusNeedsResponse), string(stripe.DisputeStatusWarningNeedsResponse),
}

// applyDispute records the status of a payment's latest dispute as Stripe holds it in pay, and
// resolves the open dispute_won and dispute_updated findings about the payment by actor. A
// payment that records a dispute Stripe does not have, or whose dispute at Stripe was lost or
// needs a response, is a conflict, for a person.
func applyDispute(ctx context.Context, tx pgx.Tx, store *pgstore.Store[paymentRow], paymentID int64, pay *stripepolicy.Payment, actor string) (bool, error) {
	changed, note, err := recordDispute(ctx, tx, store.Config().Schema, paymentID, pay, disputeForAPerson)
	if err != nil {
		return false, err
	}
	return changed, resolve(ctx, tx, store, paymentID, disputeKinds, actor, note)
}

// applyDisputeDecided records the status of a payment's latest dispute as Stripe holds it in
// pay, whatever it is: a person decided the dispute_lost or dispute_needs_response finding
// about it, and resolves that finding in tx (reviewer.go). A payment that records a dispute
// Stripe does not have is a conflict still.
func applyDisputeDecided(ctx context.Context, tx pgx.Tx, store *pgstore.Store[paymentRow], paymentID int64, pay *stripepolicy.Payment) (bool, error) {
	changed, _, err := recordDispute(ctx, tx, store.Config().Schema, paymentID, pay, nil)
	return changed, err
}

// recordDispute sets a payment's dispute status to that of its latest dispute in pay, unless
// that is one of refused, and returns what it did, for the resolution's note.
func recordDispute(ctx context.Context, tx pgx.Tx, schema string, paymentID int64, pay *stripepolicy.Payment, refused []string) (changed bool, note string, err error) {
	row, err := lock(ctx, tx, schema, paymentID)
	if err != nil {
		return false, "", err
	}
	recorded, status := localPayment(row).DisputeStatus, latestDispute(pay)
	switch {
	case status == recorded:
		return false, "dispute already " + cmp.Or(status, "none") + "; nothing to change", nil
	case status == "":
		return false, "", &conflictError{PaymentID: paymentID, Reason: fmt.Sprintf("records dispute %s, Stripe none", recorded)}
	case slices.Contains(refused, status):
		return false, "", &conflictError{PaymentID: paymentID, Reason: fmt.Sprintf("has a dispute %s at Stripe", status)}
	}
	if _, err := tx.Exec(ctx, inSchema(schema, markDisputed), paymentID, status); err != nil {
		return false, "", fmt.Errorf("payments: record the dispute of payment %d: %w", paymentID, err)
	}
	return true, "dispute " + cmp.Or(recorded, "none") + " -> " + status, nil
}

// lock locks a payment's row and reads its status and the money of it that applyRefunds and
// applyDispute change.
func lock(ctx context.Context, tx pgx.Tx, schema string, paymentID int64) (paymentRow, error) {
	var r paymentRow
	err := tx.QueryRow(ctx, inSchema(schema, lockPayment), paymentID).Scan(&r.Status, &r.Amount, &r.Currency, &r.AmountRefunded, &r.DisputeStatus)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("%w: %d", errNoPayment, paymentID)
	}
	if err != nil {
		return r, fmt.Errorf("payments: read payment %d: %w", paymentID, err)
	}
	return r, nil
}

// refundedAtStripe returns what pay's charge refunded to the customer, as the money policy
// reads it (failed and canceled refunds not counted, nor what a partial capture released), and
// the payment's currency.
func refundedAtStripe(pay *stripepolicy.Payment) (refunded int64, currency string) {
	return pay.AmountRefunded(), string(pay.Intent.Currency)
}

// latestDispute returns the status of pay's newest dispute, "" if it has none.
func latestDispute(pay *stripepolicy.Payment) string {
	var latest *stripe.Dispute
	for _, d := range pay.Disputes {
		if latest == nil || d.Created > latest.Created {
			latest = d
		}
	}
	if latest == nil {
		return ""
	}
	return string(latest.Status)
}

// resolve resolves the open findings of kinds about a payment, as repaired by actor.
func resolve(ctx context.Context, tx pgx.Tx, store *pgstore.Store[paymentRow], paymentID int64, kinds []string, actor, note string) error {
	_, err := store.ResolveRecordFindings(ctx, tx, strconv.FormatInt(paymentID, 10), kinds,
		reconcile.Resolution{As: reconcile.ResolutionRepaired, By: actor, Note: note})
	if err != nil {
		return fmt.Errorf("payments: payment %d: %w", paymentID, err)
	}
	return nil
}

// applyFresh reads the payment with read and applies apply to it in a transaction begun on db
// (a pool, or the dispatcher's transaction: a savepoint). If the row records more than the
// read says, it reads once more and applies again, since another writer may have read Stripe
// later and got there first; only then is the difference a conflict. The read happens with
// no transaction of db's open, so that no row stays locked during the call.
func applyFresh(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, read func(context.Context) (*stripepolicy.Payment, error), apply func(context.Context, pgx.Tx, *stripepolicy.Payment) (bool, error)) (bool, error) {
	for again := false; ; again = true {
		pay, err := read(ctx)
		if err != nil {
			return false, err
		}
		var changed bool
		err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			changed, err = apply(ctx, tx, pay)
			return err
		})
		var conflict *conflictError
		if !again && errors.As(err, &conflict) && conflict.stale {
			continue
		}
		return changed, err
	}
}

// errNoPayment means the payment a command or an event names does not exist.
var errNoPayment = errors.New("payments: no such payment")

// conflictError means a payment is in no state the change can start from or lead to: a success
// for a payment that failed here, a cancel for one already paid, fewer refunds at Stripe than
// recorded here. Money may have been taken for an order we gave up on, or the other way round;
// only a person can decide, so the writer changes nothing and leaves the findings open.
type conflictError struct {
	PaymentID int64
	Reason    string // what is wrong, such as "is failed, not pending or paid"
	// stale is set when the row records more than the caller's read of Stripe says: another
	// writer may have read Stripe later and committed first, and a new read may agree.
	stale bool
}

func (e *conflictError) Error() string {
	return fmt.Sprintf("payments: payment %d %s: a person must review it", e.PaymentID, e.Reason)
}
