package stripetest

import (
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// listQuery holds the parameters every list endpoint takes.
type listQuery struct {
	limit         int
	startingAfter string
	endingBefore  string
	from, to      int64 // created range, inclusive
}

// parseList reads the common list parameters. Parameters for which own reports true belong to
// the endpoint; any other parameter is refused like Stripe does, which catches client
// mistakes such as a misspelled filter that Stripe would not silently ignore either.
func parseList(q url.Values, own func(param string) bool) (listQuery, *failure) {
	lq := listQuery{limit: 10, from: math.MinInt64, to: math.MaxInt64}
	// Sorted, so that the parameter an error names does not depend on map order.
	for _, param := range slices.Sorted(maps.Keys(q)) {
		v := q.Get(param)
		switch param {
		case "limit":
			n, err := strconv.Atoi(v)
			switch {
			case err != nil:
				return lq, invalidRequest(param, "Invalid integer: %s", v)
			case n < 1:
				return lq, invalidRequest(param, "This value must be greater than or equal to 1.")
			case n > 100:
				return lq, invalidRequest(param, "This value must be less than or equal to 100.")
			}
			lq.limit = n
		case "starting_after":
			lq.startingAfter = v
		case "ending_before":
			lq.endingBefore = v
		case "created", "created[gt]", "created[gte]", "created[lt]", "created[lte]":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return lq, invalidRequest(param, "Invalid integer: %s", v)
			}
			lq.restrictCreated(strings.TrimSuffix(strings.TrimPrefix(param, "created["), "]"), n)
		default:
			if !isArrayParam(param, "expand") && (own == nil || !own(param)) {
				return lq, unknownParameter(param)
			}
		}
	}
	if lq.startingAfter != "" && lq.endingBefore != "" {
		return lq, invalidRequest("ending_before", "You may only specify one of these parameters: ending_before, starting_after.")
	}
	return lq, nil
}

// cursor returns the cursor parameter given, if any, and its object id.
func (lq listQuery) cursor() (param, id string) {
	if lq.endingBefore != "" {
		return "ending_before", lq.endingBefore
	}
	return "starting_after", lq.startingAfter
}

// restrictCreated narrows the created range by one bound; op is gt, gte, lt, lte, or created
// itself for an exact time.
func (lq *listQuery) restrictCreated(op string, n int64) {
	switch op {
	case "gt":
		if n < math.MaxInt64 {
			lq.from = max(lq.from, n+1)
		} else {
			lq.from, lq.to = 1, 0 // empty
		}
	case "gte":
		lq.from = max(lq.from, n)
	case "lt":
		if n > math.MinInt64 {
			lq.to = min(lq.to, n-1)
		} else {
			lq.from, lq.to = 1, 0
		}
	case "lte":
		lq.to = min(lq.to, n)
	default:
		lq.from, lq.to = max(lq.from, n), min(lq.to, n)
	}
}

// isArrayParam reports whether param is an element of the array parameter name, in either
// form clients send: name[] or name[3] (stripe-go numbers the elements).
func isArrayParam(param, name string) bool {
	rest, ok := strings.CutPrefix(param, name+"[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return false
	}
	rest = strings.TrimSuffix(rest, "]")
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// paginate cuts one page, newest first, out of a sorted index, following Stripe's cursors.
// cursor is the position of the starting_after or ending_before object, -1 for none. Going
// forward (no cursor or starting_after) the page is the newest items older than the cursor;
// going backward (ending_before) it is the limit items just newer than the cursor. hasMore
// says whether more items follow in the direction of paging. match, if not nil, filters
// items; without it a page costs O(log n + limit).
func paginate[T keyed](x *index[T], lq listQuery, cursor int, match func(T) bool) (page []T, hasMore bool) {
	x.sort()
	items := x.items
	lo, hi := x.createdBounds(lq.from, lq.to)
	page = make([]T, 0, min(lq.limit, hi-lo))
	take := func(i int) (full bool) {
		if match != nil && !match(items[i].v) {
			return false
		}
		if len(page) == lq.limit {
			hasMore = true
			return true
		}
		page = append(page, items[i].v)
		return false
	}
	if lq.endingBefore == "" {
		start := hi - 1
		if cursor >= 0 {
			start = min(start, cursor-1)
		}
		for i := start; i >= lo && !take(i); i-- {
		}
		return page, hasMore
	}
	start := lo
	if cursor >= 0 {
		start = max(start, cursor+1)
	}
	for i := start; i < hi && !take(i); i++ {
	}
	slices.Reverse(page)
	return page, hasMore
}

// pageOf cuts one page out of x, nil meaning an empty list, of the items match accepts (all
// for a nil match), following the cursor parameter given: lookup finds the cursor object
// among the account's objects, and a cursor it does not find is Stripe's 400 "No such
// <object>". A cursor that is the account's but not in x (a filtered list, or one that match
// rejects) still positions the page by its created time. The caller holds s.mu.
func pageOf[T keyed](x *index[T], lq listQuery, object string, lookup func(id string) (T, bool), match func(T) bool) (page []T, hasMore bool, f *failure) {
	if x == nil {
		x = &index[T]{} // not stored: a query must not create accounts
	}
	cursor := -1
	if param, id := lq.cursor(); id != "" {
		v, ok := lookup(id)
		if !ok {
			return nil, false, noSuch(http.StatusBadRequest, object, id, param)
		}
		x.sort()
		cursor = x.cursorPosition(v.sortKey(), lq.endingBefore != "")
	}
	page, hasMore = paginate(x, lq, cursor, match)
	return page, hasMore, nil
}

// isChargeFilter reports whether param is one of the filters of the lists of a charge's
// objects, refunds and disputes.
func isChargeFilter(param string) bool { return param == "payment_intent" || param == "charge" }

// chargeFilter reads the payment_intent and charge filters of a refunds or disputes list:
// filtered reports whether either is given, and ch is the one charge they select, nil when
// they select none (an unknown id, another account's, or two that disagree). The caller holds
// s.mu.
func (s *Server) chargeFilter(account string, q url.Values) (ch *charge, filtered bool) {
	if !q.Has("payment_intent") && !q.Has("charge") {
		return nil, false
	}
	if q.Has("payment_intent") {
		in, ok := s.intents[q.Get("payment_intent")]
		if !ok || in.account != account {
			return nil, true
		}
		ch = s.charges[in.latestCharge]
	}
	if q.Has("charge") {
		c, ok := s.charges[q.Get("charge")]
		if !ok || c.account != account || (q.Has("payment_intent") && c != ch) {
			return nil, true
		}
		ch = c
	}
	return ch, true
}

// isRangeParam reports whether param is the time filter name, exact (name) or bounded
// (name[gt], name[gte], name[lt], name[lte]).
func isRangeParam(param, name string) bool {
	switch param {
	case name, name + "[gt]", name + "[gte]", name + "[lt]", name + "[lte]":
		return true
	}
	return false
}

// parseRange reads a time filter other than created, such as arrival_date, into an inclusive
// range; without it the range is everything.
func parseRange(q url.Values, name string) (from, to int64, f *failure) {
	lq := listQuery{from: math.MinInt64, to: math.MaxInt64}
	for _, param := range slices.Sorted(maps.Keys(q)) {
		if !isRangeParam(param, name) {
			continue
		}
		v := q.Get(param)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, invalidRequest(param, "Invalid integer: %s", v)
		}
		lq.restrictCreated(strings.TrimSuffix(strings.TrimPrefix(param, name+"["), "]"), n)
	}
	return lq.from, lq.to, nil
}
