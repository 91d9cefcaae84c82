package stripeadapter

// The calls that read what a charge cannot say itself: its disputes' statuses and its
// refunds' statuses. They follow a read of the intent, so their errors say nothing about the
// intent's existence.

import (
	"context"
	"errors"
	"fmt"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

// followUpPage is one page of the disputes or refunds list.
type followUpPage[T any] struct {
	stripe.APIResource
	stripe.ListMeta
	Object string `json:"object"`
	Data   []T    `json:"data"`
}

// disputes lists the disputes of the intent piID's charge, in one call.
func (g *Gateway) disputes(ctx context.Context, piID string) ([]*stripe.Dispute, error) {
	params := &stripe.DisputeListParams{PaymentIntent: stripe.String(piID)}
	return followUp(ctx, g, "dispute", "/v1/disputes", g.sc.V1Disputes.B, g.sc.V1Disputes.Key, &params.ListParams, params, piID,
		func(d *stripe.Dispute) bool {
			return d != nil && d.ID != "" && d.Status != "" && (d.PaymentIntent == nil || d.PaymentIntent.ID == piID)
		})
}

// refunds lists the refunds of the intent piID, newest first, in one call (a payment has far
// fewer than a hundred).
func (g *Gateway) refunds(ctx context.Context, piID string) ([]*stripe.Refund, error) {
	params := &stripe.RefundListParams{PaymentIntent: stripe.String(piID)}
	return followUp(ctx, g, "refund", "/v1/refunds", g.sc.V1Refunds.B, g.sc.V1Refunds.Key, &params.ListParams, params, piID,
		func(r *stripe.Refund) bool {
			return r != nil && r.ID != "" && r.Status != "" && (r.PaymentIntent == nil || r.PaymentIntent.ID == piID)
		})
}

// followUp makes one follow-up list call for the intent piID's objects of a kind (what, as in
// "refund"). An object without an id or a status, or of another payment, is not an answer.
func followUp[T any](ctx context.Context, g *Gateway, what, path string, b stripe.Backend, key string,
	lp *stripe.ListParams, params any, piID string, valid func(T) bool) ([]T, error) {
	op := "list " + what + "s of " + piID
	var page followUpPage[T]
	if err := g.list(ctx, op, b, key, path, lp, params, &page); err != nil {
		return nil, followUpError(err)
	}
	if page.Object != "list" {
		return nil, notAList(op)
	}
	for _, v := range page.Data {
		if !valid(v) {
			return nil, fmt.Errorf("stripeadapter: %s: Stripe listed a %s without an id or a status, or of another payment "+
				"(a proxy or cache in between?): %w", op, what, reconcile.ErrUnavailable)
		}
	}
	return page.Data, nil
}

// followUpError keeps a follow-up's error, except that a 404 becomes ErrUnavailable: the
// intent was just read, so a missing list says nothing of it, and must not make its row
// missing_externally.
func followUpError(err error) error {
	if errors.Is(err, reconcile.ErrNotFound) {
		return fmt.Errorf("%v: %w", err, reconcile.ErrUnavailable) // %v: no longer ErrNotFound
	}
	return err
}

// notAList is the error of a 200 that is not a list ({} from a misrouted proxy, say): it says
// nothing about the payment, not even that it has no disputes or refunds.
func notAList(op string) error {
	return fmt.Errorf("stripeadapter: %s: Stripe answered 200 with an object that is not a list "+
		"(a proxy or cache in between?): %w", op, reconcile.ErrUnavailable)
}
