package stripeadapter

import (
	"context"

	"github.com/stripe/stripe-go/v82"
)

// ListPage exposes one list call to the wire tests, whose stripe-mock lists hold one object, so
// that starting_after is sent by the gateway's own code rather than by the test.
func (g *Gateway) ListPage(ctx context.Context, gte, lte int64, after string) ([]*stripe.PaymentIntent, bool, error) {
	return g.listPage(ctx, &stripe.RangeQueryParams{GreaterThanOrEqual: gte, LesserThanOrEqual: lte}, after)
}
