package stripeadapter

import (
	"context"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// ListPage exposes one list call to the wire tests, whose stripe-mock lists hold one object, so
// that starting_after is sent by the gateway's own code rather than by the test.
func (g *Gateway) ListPage(ctx context.Context, gte, lte int64, after string) ([]*stripe.PaymentIntent, bool, error) {
	return g.intents.ListPage(ctx, gte, lte, after)
}

// ListPageFrom is ListPage from the cursor id: up (ending_before) or down (starting_after).
func (g *Gateway) ListPageFrom(ctx context.Context, gte, lte int64, id string, up bool) ([]*stripe.PaymentIntent, bool, error) {
	return g.intents.listPageAt(ctx, &stripe.RangeQueryParams{GreaterThanOrEqual: gte, LesserThanOrEqual: lte}, listCursor{id: id, up: up})
}

// ListWithExpand makes the gateway's list call with another expand path, to see how an
// expansion Stripe refuses surfaces.
func (g *Gateway) ListWithExpand(ctx context.Context, path string) ([]*stripe.PaymentIntent, error) {
	params := &stripe.PaymentIntentListParams{}
	params.AddExpand(path)
	svc := g.sc.V1PaymentIntents
	var page listPageOf[*stripe.PaymentIntent]
	err := g.list(ctx, "list payment intents", svc.B, svc.Key, "/v1/payment_intents", &params.ListParams, params, &page)
	return page.Data, err
}

// Disputes and Refunds expose the follow-up calls to the wire tests.
func (g *Gateway) Disputes(ctx context.Context, piID string) ([]*stripe.Dispute, error) {
	return g.disputes(ctx, piID)
}

func (g *Gateway) Refunds(ctx context.Context, piID string) ([]*stripe.Refund, error) {
	return g.refunds(ctx, piID)
}

// SetDisputeClock replaces the clock by which the PaymentGateway ages the dispute outcomes it
// keeps. Call it before the gateway is used.
func (g *Gateway) SetDisputeClock(now func() time.Time) {
	if g.payments.outcomes != nil {
		g.payments.outcomes.now = now
	}
}

// ListPage exposes one list call of an object gateway to the wire tests, as Gateway.ListPage.
func (g *ObjectGateway[T]) ListPage(ctx context.Context, gte, lte int64, after string) ([]T, bool, error) {
	return g.listPage(ctx, &stripe.RangeQueryParams{GreaterThanOrEqual: gte, LesserThanOrEqual: lte}, after)
}

// SetListCacheClock replaces the clock by which the look-ahead dates listings and ages what it
// keeps. Call it before the gateway is used.
func (g *Gateway) SetListCacheClock(now func() time.Time) {
	if g.intents.ahead != nil {
		g.intents.ahead.now = now
	}
}
