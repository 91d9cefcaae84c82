package stripemoney

// The calls that read what a charge cannot say itself: its disputes' statuses and its
// refunds' statuses. They follow a read of the intent, so their errors say nothing about the
// intent's existence.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

// followUpLimit is the page a follow-up asks for: Stripe's largest, and far more disputes or
// refunds than a payment has.
const followUpLimit = 100

// followUpPage is one page of the disputes or refunds list.
type followUpPage[T any] struct {
	Object string `json:"object"`
	Data   []T    `json:"data"`
}

// disputes lists the disputes of the intent piID's charge, in one call.
func (p *Gateway) disputes(ctx context.Context, piID string) ([]*stripe.Dispute, error) {
	return followUp(ctx, p, "dispute", "/v1/disputes", piID, func(d *stripe.Dispute) bool {
		return d != nil && d.ID != "" && d.Status != "" && (d.PaymentIntent == nil || d.PaymentIntent.ID == piID)
	})
}

// refunds lists the refunds of the intent piID, newest first, in one call (a payment has far
// fewer than a hundred).
func (p *Gateway) refunds(ctx context.Context, piID string) ([]*stripe.Refund, error) {
	return followUp(ctx, p, "refund", "/v1/refunds", piID, func(r *stripe.Refund) bool {
		return r != nil && r.ID != "" && r.Status != "" && (r.PaymentIntent == nil || r.PaymentIntent.ID == piID)
	})
}

// followUp makes one follow-up list call, GET path?payment_intent=piID, for the intent's
// objects of a kind (what, as in "refund"). An object without an id or a status, or of another
// payment, is not an answer.
func followUp[T any](ctx context.Context, p *Gateway, what, path, piID string, valid func(T) bool) ([]T, error) {
	op := "list " + what + "s of " + piID
	var page followUpPage[T]
	query := url.Values{"payment_intent": {piID}, "limit": {strconv.Itoa(followUpLimit)}}
	if err := p.c.Get(ctx, op, path, query, &page); err != nil {
		return nil, followUpError(err)
	}
	if page.Object != "list" {
		// A 200 that is not a list ({} from a misrouted proxy, say) says nothing about the
		// payment, not even that it has no disputes or refunds.
		return nil, fmt.Errorf("stripemoney: %s: Stripe answered 200 with an object that is not a list "+
			"(a proxy or cache in between?): %w", op, reconcile.ErrUnavailable)
	}
	for _, v := range page.Data {
		if !valid(v) {
			return nil, fmt.Errorf("stripemoney: %s: Stripe listed a %s without an id or a status, or of another payment "+
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
