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

// disputePage and refundPage are one page of the disputes and refunds lists.
type disputePage struct {
	stripe.APIResource
	stripe.ListMeta
	Object string            `json:"object"`
	Data   []*stripe.Dispute `json:"data"`
}

type refundPage struct {
	stripe.APIResource
	stripe.ListMeta
	Object string           `json:"object"`
	Data   []*stripe.Refund `json:"data"`
}

// disputes lists the disputes of the intent piID's charge, in one call.
func (g *Gateway) disputes(ctx context.Context, piID string) ([]*stripe.Dispute, error) {
	op := "list disputes of " + piID
	params := &stripe.DisputeListParams{PaymentIntent: stripe.String(piID)}
	svc := g.sc.V1Disputes
	var page disputePage
	if err := g.list(ctx, op, svc.B, svc.Key, "/v1/disputes", &params.ListParams, params, &page); err != nil {
		return nil, followUpError(err)
	}
	if page.Object != "list" {
		return nil, notAList(op)
	}
	for _, d := range page.Data {
		if d == nil || d.ID == "" || d.Status == "" || (d.PaymentIntent != nil && d.PaymentIntent.ID != piID) {
			return nil, fmt.Errorf("stripeadapter: %s: Stripe listed a dispute without an id or a status, or of another payment "+
				"(a proxy or cache in between?): %w", op, reconcile.ErrUnavailable)
		}
	}
	return page.Data, nil
}

// refunds lists the refunds of the intent piID, newest first, in one call (a payment has far
// fewer than a hundred).
func (g *Gateway) refunds(ctx context.Context, piID string) ([]*stripe.Refund, error) {
	op := "list refunds of " + piID
	params := &stripe.RefundListParams{PaymentIntent: stripe.String(piID)}
	svc := g.sc.V1Refunds
	var page refundPage
	if err := g.list(ctx, op, svc.B, svc.Key, "/v1/refunds", &params.ListParams, params, &page); err != nil {
		return nil, followUpError(err)
	}
	if page.Object != "list" {
		return nil, notAList(op)
	}
	for _, r := range page.Data {
		if r == nil || r.ID == "" || r.Status == "" || (r.PaymentIntent != nil && r.PaymentIntent.ID != piID) {
			return nil, fmt.Errorf("stripeadapter: %s: Stripe listed a refund without an id or a status, or of another payment "+
				"(a proxy or cache in between?): %w", op, reconcile.ErrUnavailable)
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
