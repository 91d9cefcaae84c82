package stripeadapter

import (
	"context"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// ListPage exposes one list call of an object gateway to the wire tests, whose stripe-mock
// lists hold one object, so that starting_after is sent by the gateway's own code rather than
// by the test.
func (g *ObjectGateway[T]) ListPage(ctx context.Context, gte, lte int64, after string) ([]T, bool, error) {
	return g.listPage(ctx, &stripe.RangeQueryParams{GreaterThanOrEqual: gte, LesserThanOrEqual: lte}, after)
}

// ListPageFrom is ListPage from the cursor id: up (ending_before) or down (starting_after).
func (g *ObjectGateway[T]) ListPageFrom(ctx context.Context, gte, lte int64, id string, up bool) ([]T, bool, error) {
	return g.listPageAt(ctx, &stripe.RangeQueryParams{GreaterThanOrEqual: gte, LesserThanOrEqual: lte}, listCursor{id: id, up: up})
}

// ListWithExpand makes the gateway's list call with another expand path, to see how an
// expansion Stripe refuses surfaces.
func (g *ObjectGateway[T]) ListWithExpand(ctx context.Context, path string) ([]T, error) {
	params := &stripe.ListParams{}
	params.AddExpand(path)
	svc := g.c.sc.V1Events
	var page listPageOf[T]
	err := g.c.list(ctx, "list "+g.obj.plural(), svc.B, svc.Key, g.obj.Path, params, params, &page)
	return page.Data, err
}

// SetListCacheClock replaces the clock by which the gateway dates listings and the look-ahead
// ages what it keeps. Call it before the gateway is used.
func (g *ObjectGateway[T]) SetListCacheClock(now func() time.Time) {
	g.c.now = now
	if g.ahead != nil {
		g.ahead.now = now
	}
}
