package stripeadapter

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

const (
	// listLimit is the largest page Stripe's list endpoints return.
	listLimit = 100
	// A page matching fewer than minMatchesPerPage rows is barren: it saved fewer calls than a
	// tenth of a page's worth. After barrenPages of them in a row the list stops and the rest
	// go one by one; one barren page alone may just be the newest edge of the window.
	minMatchesPerPage = 10
	barrenPages       = 2
)

// burstSpan: a batch whose rows were all created within this span (in whole seconds, plus one
// either side) is a burst when the list shows objects created within it too: an import or a
// backfill, whose objects the list shows newest first, so that a batch of the older rows
// must page past the newer ones. Such pages are read ahead, not counted barren.
const burstSpan = time.Minute

// FetchBatchSince returns the objects asked for that the look-ahead holds from since on, then
// lists the objects created within the other lookups' created_at window (widened by
// CreatedSkew), newest first, a hundred a call, and returns those whose ids were asked for,
// each dated by the start of the call that listed it; the others listed are kept in the
// look-ahead for the next batches (see GatewayConfig.ListCacheTTL).
//
// The list stops as soon as every id is found, when the window is exhausted, at MaxListPages,
// or after two pages in a row that each matched fewer than ten rows: a crowded or misaligned
// window then degrades to per-object calls, never to reading the whole account. A page wholly
// newer than the batch's rows is the skew's margin above them and is not barren either (at one
// row a second it holds the next batch's three hundred objects). A page of a
// burst (every object on it created within the batch's own creation span, that span at most a
// minute) is not barren: the list reads through the burst, up to as many pages as rows it
// still seeks, since per-object calls would cost one a row. Lookups without a creation time or
// with an invalid id are left to Fetch. Listed objects without an id or a state are ignored
// and reported once, as ErrUnavailable, with the objects found. The list sends the object's
// ListParams and expands "data." and each of its Expand paths. An object whose list cannot
// filter by creation time (NoCreatedFilter) is not listed: every lookup is left to Fetch.
func (g *ObjectGateway[T]) FetchBatchSince(ctx context.Context, lookups []reconcile.Lookup, since time.Time,
	wait func(context.Context) error) (map[string]reconcile.Answer[T], error) {
	if g.obj.NoCreatedFilter {
		return map[string]reconcile.Answer[T]{}, nil
	}
	asked := make(map[string]bool, len(lookups))
	for _, l := range lookups {
		if g.obj.validID(l.ExternalID) {
			asked[l.ExternalID] = true
		}
	}
	found := g.ahead.take(asked, since)
	want := make(map[string]bool, len(lookups))
	var lo, hi time.Time
	for _, l := range lookups {
		if _, ok := found[l.ExternalID]; l.CreatedAt.IsZero() || !asked[l.ExternalID] || ok {
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
	if len(want) < 2 {
		return found, nil // one GET is no dearer than one list call
	}
	maxPages := g.maxPages
	if maxPages == 0 {
		maxPages = 2*((len(want)+listLimit-1)/listLimit) + 2
	}
	burstPages := maxPages // a burst may read up to one page per row sought, never more
	if g.maxPages == 0 {
		burstPages = max(maxPages, len(want))
	}
	spanLo, spanHi := lo.Unix()-1, hi.Unix()+1
	burst := hi.Sub(lo) <= burstSpan
	window := &stripe.RangeQueryParams{
		GreaterThanOrEqual: lo.Add(-g.skew).Unix(),
		// Stripe's created is whole seconds: round the upper bound up.
		LesserThanOrEqual: hi.Add(g.skew + time.Second - 1).Unix(),
	}
	seeking := len(want)
	after, barren, bogus := "", 0, 0
	for page := 1; page <= burstPages; page++ {
		if err := wait(ctx); err != nil {
			return found, err
		}
		at := g.ahead.clock()
		items, more, err := g.listPage(ctx, window, after)
		if err != nil {
			return found, err
		}
		matched, inBurst, above := 0, burst, len(items) > 0
		var ahead []T
		for _, v := range items {
			if !g.obj.answers(v) {
				bogus++ // not an answer about anything: never found, never a cursor
				continue
			}
			id, created := g.obj.ID(v), g.obj.Created(v)
			if created < spanLo || created > spanHi {
				inBurst = false
			}
			if created <= spanHi {
				above = false
			}
			_, had := found[id]
			switch {
			case !asked[id]:
				ahead = append(ahead, v)
			case !had:
				found[id] = reconcile.Answer[T]{Object: v, At: at}
				if want[id] {
					matched++
					seeking--
				}
			}
		}
		g.ahead.put(ahead, at)
		// A page wholly newer than the batch's rows is the skew's margin above them, not a
		// sign that the window is crowded: the batch's objects lie below it, and in a sweep
		// by creation time the margin is the next batch's, kept in the look-ahead.
		if matched < minMatchesPerPage && !(inBurst && len(items) > 0) && !above {
			barren++
		} else {
			barren = 0
		}
		last := g.lastValidID(items)
		if !more || len(items) == 0 || last == "" {
			break
		}
		after = last
		if seeking == 0 || barren >= barrenPages || (page >= maxPages && !inBurst) {
			break
		}
	}
	if bogus > 0 {
		// Once per batch, through the engine's log: the rows not found are asked one by one.
		return found, fmt.Errorf("stripeadapter: list %s: %d listed objects had no id or no status and were ignored "+
			"(a proxy or cache in between?): %w", g.obj.plural(), bogus, reconcile.ErrUnavailable)
	}
	return found, nil
}

// lastValidID returns the id of the last of items with a valid id, the cursor to page on; ""
// if none has one.
func (g *ObjectGateway[T]) lastValidID(items []T) string {
	for _, v := range slices.Backward(items) {
		if !isNil(v) && g.obj.validID(g.obj.ID(v)) {
			return g.obj.ID(v)
		}
	}
	return ""
}

// listPageOf is one page of a list, with has_more, which stripe-go's iterator keeps to itself.
type listPageOf[T any] struct {
	stripe.APIResource
	stripe.ListMeta
	Object string `json:"object"`
	Data   []T    `json:"data"`
}

// objectListParams are a list call's own parameters; the object's ListParams go with them.
type objectListParams struct {
	stripe.ListParams `form:"*"`
	CreatedRange      *stripe.RangeQueryParams `form:"created"`
}

// listPage makes exactly one list call: objects created within window (nil: any time), after
// the id after, with the object's ListParams and its Expand paths under data. It reports
// whether more remain.
func (g *ObjectGateway[T]) listPage(ctx context.Context, window *stripe.RangeQueryParams, after string) ([]T, bool, error) {
	params := &objectListParams{CreatedRange: window}
	for _, e := range g.obj.Expand {
		// Each object reads as a retrieve reads it (an intent's charge carries its money).
		params.AddExpand("data." + e)
	}
	if after != "" {
		params.StartingAfter = stripe.String(after)
	}
	op := "list " + g.obj.plural()
	var page listPageOf[T]
	if err := g.c.listWith(ctx, op, g.c.sc.V1Events.B, g.c.sc.V1Events.Key, g.obj.Path, &params.ListParams, params, g.obj.ListParams, &page); err != nil {
		return nil, false, err
	}
	if page.Object != "list" {
		// A 200 that is not a list ({} from a misrouted proxy, say) says nothing about any
		// object, not even that the window is empty.
		return nil, false, notAList(op)
	}
	return page.Data, page.HasMore, nil
}
