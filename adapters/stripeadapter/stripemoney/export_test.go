package stripemoney

import (
	"context"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// Disputes and Refunds expose the follow-up calls to the wire tests.
func (p *Gateway) Disputes(ctx context.Context, piID string) ([]*stripe.Dispute, error) {
	return p.disputes(ctx, piID)
}

func (p *Gateway) Refunds(ctx context.Context, piID string) ([]*stripe.Refund, error) {
	return p.refunds(ctx, piID)
}

// SetDisputeClock replaces the clock by which the Gateway ages the dispute outcomes it keeps.
// Call it before the gateway is used.
func (p *Gateway) SetDisputeClock(now func() time.Time) {
	if p.outcomes != nil {
		p.outcomes.now = now
	}
}
