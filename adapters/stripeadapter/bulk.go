package stripeadapter

import (
	"context"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

const (
	// listLimit is the largest page Stripe's list endpoints return.
	listLimit = 100
	// minMatchesPerPage: after two pages, a list that has matched fewer rows than this per
	// page read costs more calls than it saves, and the rest go one by one.
	minMatchesPerPage = 10
)

// FetchBatch lists the PaymentIntents created within the lookups' created_at window (widened by
// CreatedSkew), newest first, a hundred a call, and returns those whose ids were asked for. It
// stops as soon as every id is found, when the window is exhausted, at MaxListPages, or after two
// pages when the list matches fewer than ten rows a page: a crowded or misaligned window then
// degrades to per-object calls, never to reading the whole account. Lookups without a creation
// time or with an invalid id are left to Fetch.
func (g *Gateway) FetchBatch(ctx context.Context, lookups []reconcile.Lookup, wait func(context.Context) error) (map[string]*stripe.PaymentIntent, error) {
	want := make(map[string]bool, len(lookups))
	var lo, hi time.Time
	for _, l := range lookups {
		if l.CreatedAt.IsZero() || !ValidPaymentIntentID(l.ExternalID) {
			continue
		}
		want[l.ExternalID] = true
		if lo.IsZero() || l.CreatedAt.Before(lo) {
			lo = l.CreatedAt
		}
		if l.CreatedAt.After(hi) {
			hi = l.CreatedAt
		}
	}
	found := make(map[string]*stripe.PaymentIntent, len(want))
	if len(want) < 2 {
		return found, nil // one GET is no dearer than one list call
	}
	maxPages := g.maxPages
	if maxPages == 0 {
		maxPages = 2*((len(want)+listLimit-1)/listLimit) + 2
	}
	window := &stripe.RangeQueryParams{
		GreaterThanOrEqual: lo.Add(-g.skew).Unix(),
		// Stripe's created is whole seconds: round the upper bound up.
		LesserThanOrEqual: hi.Add(g.skew + time.Second - 1).Unix(),
	}
	after := ""
	for page := 1; page <= maxPages; page++ {
		if err := wait(ctx); err != nil {
			return found, err
		}
		items, err := g.listPage(ctx, window, after)
		if err != nil {
			return found, err
		}
		for _, pi := range items {
			if want[pi.ID] {
				found[pi.ID] = pi
			}
		}
		if len(found) == len(want) || len(items) < listLimit || (page >= 2 && len(found) < page*minMatchesPerPage) {
			break
		}
		after = items[len(items)-1].ID
	}
	return found, nil
}

// listPage makes one list call: PaymentIntents created within window, after the id after.
func (g *Gateway) listPage(ctx context.Context, window *stripe.RangeQueryParams, after string) ([]*stripe.PaymentIntent, error) {
	callCtx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	params := &stripe.PaymentIntentListParams{CreatedRange: window}
	params.Limit = stripe.Int64(listLimit)
	params.Single = true // we page ourselves, so that every call waits for the limiter
	if after != "" {
		params.StartingAfter = stripe.String(after)
	}
	if g.account != "" {
		params.SetStripeAccount(g.account)
	}
	items := make([]*stripe.PaymentIntent, 0, listLimit)
	for pi, err := range g.sc.V1PaymentIntents.List(callCtx, params) {
		if err != nil {
			return nil, g.mapError(ctx, "list payment intents", err)
		}
		items = append(items, pi)
	}
	return items, nil
}
