package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// The canonical writer: the one place a subscription row changes. The customer.subscription.*
// webhook handler and the reconciler's ApplySubscriptionStatus commands both call it, with
// the subscription's row and nothing else: it records the subscription as Stripe holds it
// now, read while the row is locked, never as an event or a command said it earlier. Events
// arrive late and out of order; writers serialized on the row lock each read Stripe after the
// one before committed, so the last to commit wrote the newest state. The lock is held for one
// Stripe call, bounded by the gateway's timeout, which a single row can afford.
//
// What the subscription policy sends to a person the writer refuses too (a conflictError): a
// row that ended, or cancels at period end, a subscription Stripe still bills. Writing
// Stripe's side there would hand back access the customer gave up, or hide that they pay for
// it. Otherwise it writes Stripe's status, cancel_at_period_end and period end, and resolves
// the open findings the write repairs, in the caller's transaction.

// actorReconciler is the actor the repairs record on the findings they resolve; a webhook
// handler passes its own.
const actorReconciler = "reconciler"

// subscriptionReader reads a subscription at Stripe: the gateway, whose Fetch maps Stripe's
// errors (a 404 is reconcile.ErrNotFound).
type subscriptionReader interface {
	Fetch(ctx context.Context, id string) (*stripe.Subscription, error)
}

// repairedKinds are the findings a write of Stripe's side repairs, and resolves: those the
// policy repairs by ApplySubscriptionStatus, every Repairable kind of it. The findings meant
// for a person stay open.
var repairedKinds = policy.KindsRepairedBy(stripepolicy.CommandApplySubscriptionStatus)

const (
	// lockRow reads what the writer changes and locks the row until the transaction ends.
	lockRow = `SELECT stripe_subscription_id, status, cancel_at_period_end, paid_through
		FROM %s.subscriptions WHERE id = $1 FOR UPDATE`
	// writeRow records Stripe's side; a row that holds it already is left alone.
	writeRow = `UPDATE %s.subscriptions SET status = $2, cancel_at_period_end = $3, paid_through = $4, updated_at = now()
		WHERE id = $1 AND (status, cancel_at_period_end, paid_through) IS DISTINCT FROM ($2, $3, $4)`
)

// applySubscription records the subscription of row id as Stripe holds it now, and resolves
// the open findings about the row that the write repairs, as actor. It reports whether the row
// changed. A row the policy sends to a person is a *conflictError and is left as it is.
func applySubscription(ctx context.Context, tx pgx.Tx, store *pgstore.Store[subscriptionRow], stripeSide subscriptionReader, id, actor string) (bool, error) {
	table := pgx.Identifier{store.Config().Schema}.Sanitize()
	var subID string
	var row subscriptionRow
	err := tx.QueryRow(ctx, fmt.Sprintf(lockRow, table), id).Scan(&subID, &row.Status, &row.CancelAtPeriodEnd, &row.PaidThrough)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("%w: %s", errNoRow, id)
	}
	if err != nil {
		return false, fmt.Errorf("subscriptions: lock %s: %w", id, err)
	}
	sub, err := stripeSide.Fetch(ctx, subID)
	if err != nil {
		return false, fmt.Errorf("subscriptions: read %s at Stripe: %w", subID, err)
	}
	if d := policy.Classify(row, sub); d.Verdict == reconcile.NeedsReview {
		return false, &conflictError{ID: id, Kind: d.Kind, Detail: d.Detail}
	}
	tag, err := tx.Exec(ctx, fmt.Sprintf(writeRow, table), id, string(sub.Status), sub.CancelAtPeriodEnd, paidThrough(row, sub))
	if err != nil {
		return false, fmt.Errorf("subscriptions: write %s: %w", id, err)
	}
	note := fmt.Sprintf("recorded %s as Stripe holds it: %s", subID, sub.Status)
	if _, err := store.ResolveRecordFindings(ctx, tx, id, repairedKinds,
		reconcile.Resolution{As: reconcile.ResolutionRepaired, By: actor, Note: note}); err != nil {
		return false, fmt.Errorf("subscriptions: resolve findings of %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// paidThrough is the access end the row records: the end of Stripe's current period, which the
// policy compares. A past_due subscription's period has moved on unpaid, so a row that records
// an earlier end keeps it; nil without a period.
func paidThrough(row subscriptionRow, sub *stripe.Subscription) *time.Time {
	end := stripepolicy.SubscriptionPeriodEnd(sub)
	switch {
	case end.IsZero():
		return nil
	case sub.Status == stripe.SubscriptionStatusPastDue && row.PaidThrough != nil && row.PaidThrough.Before(end):
		return row.PaidThrough
	}
	return &end
}

// errNoRow means the row a command names does not exist (deleted since).
var errNoRow = errors.New("subscriptions: no such row")

// conflictError means Stripe's side is one the policy leaves to a person: the writer changed
// nothing, and the finding stays open.
type conflictError struct {
	ID, Kind, Detail string
}

func (e *conflictError) Error() string {
	return fmt.Sprintf("subscriptions: %s is %s (%s): a person must review it", e.ID, e.Kind, e.Detail)
}
