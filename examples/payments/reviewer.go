package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// decidedKinds are the findings whose fix is a person's decision the row must then record:
// a dispute lost, or one that needs a response. The writer refuses to record either by
// itself (disputeForAPerson), so without the person's record the sweep would find the
// dispute again after every resolution.
var decidedKinds = []string{stripepolicy.KindDisputeLost, stripepolicy.KindDisputeNeedsResponse}

// reviewer is what the review console resolves findings through (console.Config.Store): the
// store, except that a person who resolves a decidedKinds finding as fixed or accepted also
// records the dispute on the row as Stripe holds it then, through the canonical writer, in
// the transaction that resolves the finding. Both commit, or neither does. A false positive
// changes nothing on the row.
type reviewer struct {
	*pgstore.Store[paymentRow]
	db      pgstore.DB
	gateway paymentReader
}

// newReviewer returns the reviewer of store's findings, reading disputes through gateway.
func newReviewer(db pgstore.DB, store *pgstore.Store[paymentRow], gateway paymentReader) *reviewer {
	return &reviewer{Store: store, db: db, gateway: gateway}
}

// ResolveFinding resolves finding id as r says, recording the dispute of a decided finding
// (reconcile.Reviewer).
func (rv *reviewer) ResolveFinding(ctx context.Context, id int64, r reconcile.Resolution) error {
	if r.As != reconcile.ResolutionFixed && r.As != reconcile.ResolutionAccepted {
		return rv.Store.ResolveFinding(ctx, id, r)
	}
	f, err := rv.Finding(ctx, id)
	if err != nil {
		return err
	}
	if f.Job != job || !f.Open() || !slices.Contains(decidedKinds, f.Kind) {
		return rv.Store.ResolveFinding(ctx, id, r) // which says why, when it changes nothing
	}
	paymentID, err := strconv.ParseInt(f.RecordID, 10, 64)
	if err != nil {
		return fmt.Errorf("payments: finding %d: record id %q is not a payment id", id, f.RecordID)
	}
	// Read before the transaction, so that no row stays locked during the call.
	pay, err := rv.gateway.Fetch(ctx, f.ExternalID)
	if err != nil {
		return fmt.Errorf("payments: finding %d: read %s at Stripe: %w", id, f.ExternalID, err)
	}
	return pgx.BeginFunc(ctx, rv.db, func(tx pgx.Tx) error {
		if _, err := applyDisputeDecided(ctx, tx, rv.Store, paymentID, pay); err != nil {
			return err
		}
		return rv.ResolveFindingIn(ctx, tx, id, r)
	})
}
