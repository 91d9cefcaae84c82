package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

// fakeStripe stands in for the Stripe PaymentIntents API: a map of PaymentIntent id to status.
// It answers the way a Gateway must: reconcile.ErrNotFound for an id it never saw (a 404), and
// reconcile.ErrUnavailable for the ids planted to fail (a timeout or a 503). It records every
// id it is asked about, so the run can check that rows inside the grace period were not asked.
// It is safe for concurrent use.
type fakeStripe struct {
	intents     map[string]stripe.PaymentIntentStatus
	unavailable map[string]bool

	mu    sync.Mutex
	asked map[string]int
}

var _ reconcile.Gateway[*stripe.PaymentIntent] = (*fakeStripe)(nil)

// newFakeStripe returns a fake holding the PaymentIntent of every planted payment that Stripe
// knows.
func newFakeStripe(p plan) *fakeStripe {
	f := &fakeStripe{
		intents:     make(map[string]stripe.PaymentIntentStatus, len(p.payments)),
		unavailable: map[string]bool{},
		asked:       map[string]int{},
	}
	for _, pay := range p.payments {
		if !pay.story.notFound {
			f.intents[pay.externalID] = pay.story.external
		}
		if pay.story.unavailable {
			f.unavailable[pay.externalID] = true
		}
	}
	return f
}

// Fetch returns the PaymentIntent's status.
func (f *fakeStripe) Fetch(ctx context.Context, id string) (*stripe.PaymentIntent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.asked[id]++
	f.mu.Unlock()

	if f.unavailable[id] {
		return nil, fmt.Errorf("fake stripe: retrieve %s: 503 Service Unavailable: %w", id, reconcile.ErrUnavailable)
	}
	status, ok := f.intents[id]
	if !ok {
		return nil, fmt.Errorf("fake stripe: retrieve %s: 404 resource_missing: %w", id, reconcile.ErrNotFound)
	}
	return &stripe.PaymentIntent{ID: id, Object: "payment_intent", Status: status}, nil
}

// calls returns the number of calls made and how many of them asked about one of ids.
func (f *fakeStripe) calls(ids []string) (total, about int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.asked {
		total += n
	}
	for _, id := range ids {
		about += f.asked[id]
	}
	return total, about
}
