package stripeadapter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
)

const (
	// listLimit is the largest page Stripe's list endpoints return.
	listLimit = 100
	// A page that finds fewer than minMatchesPerPage of the rows sought (and not all those
	// left) is barren: it saved fewer calls than a tenth of a page's worth. After barrenPages
	// of them in a row a window's list stops and its other rows go one by one.
	minMatchesPerPage = 10
	barrenPages       = 2
	// anchorTries bounds the rows tried as the cursor of a read from a row: Stripe refuses
	// the id of an object it does not have (deleted, or never made) as a cursor.
	anchorTries = 2
)

// FetchBatchSince returns the objects asked for that the look-ahead holds from since on, then
// lists the others by their rows' created_at, a hundred a call, and returns those whose ids
// were asked for, each dated by the start of the call that listed it; the others listed are
// kept in the look-ahead for the next batches (see GatewayConfig.ListCacheTTL).
//
// The rows are grouped into windows by their own creation times, each listed with created
// from its oldest row's created_at minus CreatedSkew to its newest's plus the skew: a gap
// between two rows longer than twice the skew and a hundred times the rows' usual spacing
// (more than a page of other objects, if the account makes them at the rows' rate) splits
// them, so that the time between two groups of rows is never read. Stripe lists newest
// first, and a window is read three ways:
//   - from its top (starting_after), passing pages wholly above its rows as long as the
//     rows' own rate says the skew's margin holds that many (the next batch's objects);
//   - up from its oldest row (ending_before, the row's id the cursor), and
//   - down from that row (starting_after),
//
// in that order, each until a page that finds fewer than ten of the rows sought (and not all
// those left), the window's edge, or objects listed already; a window whose newest second holds
// ten rows or more (an import, a backfill, whose newer part, the next batches', would come
// first from the top, as many pages as it holds) is read up from its oldest row first. A batch
// that was served from the look-ahead the object past the last row such a read found goes on
// from that object, in the same direction: a sweep through an import costs a page per hundred
// rows, whichever way Stripe orders the objects of one second.
//
// A window's list stops once its rows are found, or after two barren pages in a row: a crowded
// or misaligned window degrades to per-object calls, never to reading the whole account. All
// windows together make at most GatewayConfig.MaxListPages list calls, by default one per row
// sought, never more than asking each alone. A row whose id is a cursor is never on its pages
// and is left to Fetch, as are lookups without a creation time or with an invalid id and a
// window of one row. Listed objects without an id or a state are ignored, end the listing, and
// are reported once, as ErrUnavailable, with the objects found. The list sends the object's
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
	taken := maps.Clone(found)
	var rows []reconcile.Lookup
	sought := make(map[string]int, len(lookups))
	for _, l := range lookups {
		if _, ok := found[l.ExternalID]; l.CreatedAt.IsZero() || !asked[l.ExternalID] || ok {
			continue
		}
		if _, dup := sought[l.ExternalID]; !dup {
			sought[l.ExternalID] = -1
			rows = append(rows, l)
		}
	}
	windows := planWindows(rows, g.skew)
	r := &bulkRead[T]{g: g, wait: wait, asked: asked, found: found, taken: taken, sought: sought, listed: map[string]bool{},
		left: make([]int, len(windows)), calls: cmp.Or(g.maxPages, len(rows))}
	for i, w := range windows {
		for _, id := range w.rows {
			sought[id] = i
		}
		r.left[i] = len(w.rows)
	}
	for i := range windows {
		if err := r.read(ctx, &windows[i], i); err != nil {
			return found, err
		}
	}
	if r.bogus > 0 {
		// Once per batch, through the engine's log: the rows not found are asked one by one.
		return found, fmt.Errorf("stripeadapter: list %s: %d listed objects had no id or no status and were ignored "+
			"(a proxy or cache in between?): %w", g.obj.plural(), r.bogus, reconcile.ErrUnavailable)
	}
	return found, nil
}

// bulkRead is one FetchBatch's listing under way.
type bulkRead[T any] struct {
	g     *ObjectGateway[T]
	wait  func(context.Context) error
	asked map[string]bool
	found map[string]reconcile.Answer[T]
	taken map[string]reconcile.Answer[T] // served from the look-ahead
	// sought maps each row still sought to its window (-1: in none), left counts them per
	// window, and calls is the list calls still allowed.
	sought map[string]int
	left   []int
	calls  int
	listed map[string]bool // every id listed so far
	bogus  int
}

// unseek stops seeking id and reports whether it was sought in a window.
func (r *bulkRead[T]) unseek(id string) bool {
	i, ok := r.sought[id]
	if !ok {
		return false
	}
	delete(r.sought, id)
	if i >= 0 {
		r.left[i]--
	}
	return i >= 0
}

// pageStats is what one page told about its window.
type pageStats struct {
	// productive: the page found at least minMatchesPerPage rows sought, or all left.
	productive bool
	// above: every object on it was created after the window's newest row's second.
	above bool
	// met: it holds an object listed earlier in this fetch.
	met bool
	// more: the list goes on in the page's direction, from first (up) or last (down).
	more        bool
	first, last string
}

// The ways a window is read: from its top, newest first; and up, or down, from its oldest row.
const (
	fromTop = iota
	upFromOldest
	downFromOldest
)

// read lists window w (the wi-th) until its rows are found, or every way in gave a barren
// page: first from where the gateway's mark says the last batch's read stopped, if it
// applies; then from the window's top, newest first (the skew's margin passed), and up from
// its oldest row, in that order unless the window's newest second is dense; then down from
// that row. A way ends at a barren page, at the window's edge, or where it meets objects
// listed already; the next then starts, unless the edge it would read from is read already.
func (r *bulkRead[T]) read(ctx context.Context, w *listWindow, wi int) error {
	barren := 0
	if m := r.g.mark.get(); m.id != "" && r.cached(m.id, w) {
		// A sweep's batch inside an import goes on where the last one stopped, in the same
		// direction, from an object it was served from the look-ahead: no row of its own is
		// needed as a cursor (whose own object, never on its pages, costs a call more).
		if _, _, err := r.pass(ctx, w, wi, m, 0, &barren); err != nil {
			return err
		}
	}
	ways := []int{fromTop, upFromOldest, downFromOldest}
	if w.denseTop {
		ways = []int{upFromOldest, fromTop, downFromOldest}
	}
	var topRead, bottomRead bool
	anchor, tries := "", 0
	for _, way := range ways {
		if way == fromTop {
			if topRead {
				continue
			}
			topRead = true
			edge, _, err := r.pass(ctx, w, wi, listCursor{}, w.marginPages, &barren)
			if err != nil || edge {
				return err // at the window's bottom, read from its top: all of it was read
			}
			continue
		}
		if way == downFromOldest && bottomRead {
			continue
		}
		for r.left[wi] > 0 && r.calls > 0 && barren < barrenPages {
			if anchor == "" {
				if tries == anchorTries || tries == len(w.rows) {
					return nil
				}
				anchor = w.rows[tries]
				tries++
				// A cursor's own object is never on its pages: Fetch asks for it.
				r.unseek(anchor)
			}
			edge, gone, err := r.pass(ctx, w, wi, listCursor{id: anchor, up: way == upFromOldest}, 0, &barren)
			if err != nil {
				return err
			}
			if gone {
				anchor = "" // no such object: the next row is the cursor
				continue
			}
			topRead = topRead || edge && way == upFromOldest
			bottomRead = bottomRead || edge && way == downFromOldest
			break
		}
	}
	return nil
}

// cached reports whether id was served from the look-ahead in this fetch, an object created
// within w.
func (r *bulkRead[T]) cached(id string, w *listWindow) bool {
	v, ok := r.taken[id]
	if !ok {
		return false
	}
	created := r.g.obj.Created(v.Object)
	return created >= w.from && created <= w.to
}

// pass lists window w from the cursor from in its direction (from the window's top, newest
// first, when from has no id) until the window's rows are found, a barren page (counted in
// barren), objects listed already, or the window's edge, which it reports. The first margin
// pages wholly above the window's rows are not barren. It reports too whether Stripe refused
// from as a cursor (no such object): nothing was listed then. When it finds the window's last
// row, the object at the page's edge, if no row asked for it, is the next batch's (the page's
// other objects past the row with it), kept in the look-ahead: the gateway's mark, where that
// batch goes on.
func (r *bulkRead[T]) pass(ctx context.Context, w *listWindow, wi int, from listCursor, margin int, barren *int) (edge, gone bool, err error) {
	cur := from
	for r.left[wi] > 0 && r.calls > 0 && *barren < barrenPages {
		p, err := r.page(ctx, w, wi, cur)
		if errors.Is(err, errCursorGone) {
			// Refused as a cursor: from's object, or one just listed, is gone.
			return false, cur == from && from.id != "", nil
		}
		if err != nil {
			return false, false, err
		}
		if cur.id = p.last; cur.up {
			cur.id = p.first
		}
		if r.left[wi] == 0 {
			m := listCursor{up: cur.up}
			if !r.asked[cur.id] {
				m.id = cur.id
			}
			r.g.mark.set(m)
		}
		switch {
		case p.productive:
			*barren = 0
		case p.above && margin > 0:
			margin--
		default:
			*barren++
			return !p.more, false, nil
		}
		if !p.more || p.met {
			return !p.more, false, nil
		}
	}
	return false, false, nil
}

// readMark is where the last read of a window found its last row: the object at the edge of
// that page, which no row had asked for, and the direction of the read. It is safe for
// concurrent use; a mark another job set costs at most a page.
type readMark struct {
	mu  sync.Mutex
	cur listCursor
}

func (m *readMark) get() listCursor {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur
}

func (m *readMark) set(cur listCursor) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cur = cur
}

// page makes one list call in window w (the wi-th) from cur: what it finds of the rows sought
// goes to r.found, what nobody asked for to the look-ahead.
func (r *bulkRead[T]) page(ctx context.Context, w *listWindow, wi int, cur listCursor) (pageStats, error) {
	var p pageStats
	if err := r.wait(ctx); err != nil {
		return p, err
	}
	r.calls--
	left := r.left[wi]
	at := r.g.c.now()
	items, more, err := r.g.listPageAt(ctx, &stripe.RangeQueryParams{GreaterThanOrEqual: w.from, LesserThanOrEqual: w.to}, cur)
	if err != nil {
		return p, err
	}
	matched := 0
	p.above = len(items) > 0
	var ahead []T
	for _, v := range items {
		if !r.g.obj.answers(v) {
			r.bogus++ // not an answer about anything: never found, never a cursor
			continue
		}
		id := r.g.obj.ID(v)
		if r.g.obj.Created(v) <= w.top+1 {
			p.above = false
		}
		p.met = p.met || r.listed[id]
		r.listed[id] = true
		if _, had := r.found[id]; !r.asked[id] {
			ahead = append(ahead, v)
		} else if !had {
			r.found[id] = reconcile.Answer[T]{Object: v, At: at}
			if r.unseek(id) {
				matched++
			}
		}
	}
	r.g.ahead.put(ahead, at)
	if r.bogus > 0 {
		// Something in between (a proxy, a cache) answers lists with what is not Stripe's:
		// list no more; the rows not found are asked one by one.
		r.calls = 0
	}
	p.productive = matched >= min(minMatchesPerPage, left)
	p.first, p.last = r.g.firstValidID(items), r.g.lastValidID(items)
	p.more = more && p.last != ""
	return p, nil
}

// lastValidID returns the id of the last of items with a valid id, the cursor to page on
// (down, starting_after); "" if none has one.
func (g *ObjectGateway[T]) lastValidID(items []T) string {
	for _, v := range slices.Backward(items) {
		if !isNil(v) && g.obj.validID(g.obj.ID(v)) {
			return g.obj.ID(v)
		}
	}
	return ""
}

// firstValidID is lastValidID's counterpart for paging up (ending_before): the first of
// items with a valid id.
func (g *ObjectGateway[T]) firstValidID(items []T) string {
	for _, v := range items {
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

// listCursor is where a page starts: below the object id (Stripe's starting_after, the older
// objects newest first), above it (ending_before, the newer objects just above it, still
// newest first) when up, or at the newest when id is empty.
type listCursor struct {
	id string
	up bool
}

// listPage makes exactly one list call: objects created within window (nil: any time), after
// the id after, with the object's ListParams and its Expand paths under data. It reports
// whether more remain.
func (g *ObjectGateway[T]) listPage(ctx context.Context, window *stripe.RangeQueryParams, after string) ([]T, bool, error) {
	return g.listPageAt(ctx, window, listCursor{id: after})
}

// listPageAt is listPage from cur; has_more then tells whether more remain in cur's direction.
func (g *ObjectGateway[T]) listPageAt(ctx context.Context, window *stripe.RangeQueryParams, cur listCursor) ([]T, bool, error) {
	params := &objectListParams{CreatedRange: window}
	for _, e := range g.obj.Expand {
		// Each object reads as a retrieve reads it (an intent's charge carries its money).
		params.AddExpand("data." + e)
	}
	switch {
	case cur.id == "":
	case cur.up:
		params.EndingBefore = stripe.String(cur.id)
	default:
		params.StartingAfter = stripe.String(cur.id)
	}
	op := "list " + g.obj.plural()
	page, err := listInto(ctx, g.obj.decodeList, g.obj.Expand, func(out stripe.LastResponseSetter) error {
		return g.c.listWith(ctx, op, g.c.sc.V1Events.B, g.c.sc.V1Events.Key, g.obj.Path, &params.ListParams, params, g.obj.ListParams, out)
	})
	if err != nil {
		return nil, false, err
	}
	if page.Object != "list" {
		// A 200 that is not a list ({} from a misrouted proxy, say) says nothing about any
		// object, not even that the window is empty.
		return nil, false, notAList(op)
	}
	return page.Data, page.HasMore, nil
}
