package stripetest

import (
	"cmp"
	"slices"
	"sort"
)

// sortKey orders objects like Stripe's lists: by created time, then by insertion order.
type sortKey struct {
	created int64
	seq     uint64
}

func compareKeys(a, b sortKey) int {
	if c := cmp.Compare(a.created, b.created); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// keyed is an object that can be listed. Its key must not change once it is indexed.
type keyed interface{ sortKey() sortKey }

// entry is an indexed object with its key inline, so that sorting and binary searches compare
// keys without following a pointer per comparison.
type entry[T any] struct {
	key sortKey
	v   T
}

// index holds one account's objects of one kind in ascending (created, seq) order; lists read
// it backwards, newest first. Ascending order makes the common case, an object created now,
// an append. Positions are found by binary search on the key, so no id-to-position map has to
// be rebuilt when objects are inserted in the middle.
//
// Objects that arrive out of order are appended after the sorted prefix and merged in by the
// next read: a bulk load of n objects costs O(n log n) once, and a single late object costs
// one O(n) merge, never a re-sort.
type index[T keyed] struct {
	items  []entry[T]
	sorted int // items[:sorted] are in order
}

// add appends v.
func (x *index[T]) add(v T) {
	e := entry[T]{v.sortKey(), v}
	if x.sorted == len(x.items) && (x.sorted == 0 || compareKeys(x.items[x.sorted-1].key, e.key) < 0) {
		x.sorted++
	}
	x.items = append(x.items, e)
}

// sort merges the out-of-order tail into the sorted prefix. The caller must hold the server's
// lock, and must call it before the methods below.
func (x *index[T]) sort() {
	n := x.sorted
	if n == len(x.items) {
		return
	}
	tail := slices.Clone(x.items[n:])
	slices.SortFunc(tail, func(a, b entry[T]) int { return compareKeys(a.key, b.key) })
	// Merge from the back, so that the prefix is moved in place and only the tail is copied.
	i, j := n-1, len(tail)-1
	for k := len(x.items) - 1; j >= 0; k-- {
		if i >= 0 && compareKeys(x.items[i].key, tail[j].key) > 0 {
			x.items[k] = x.items[i]
			i--
		} else {
			x.items[k] = tail[j]
			j--
		}
	}
	x.sorted = len(x.items)
}

// search returns the position of the first item whose key is not less than k.
func (x *index[T]) search(k sortKey) int {
	return sort.Search(len(x.items), func(i int) bool { return compareKeys(x.items[i].key, k) >= 0 })
}

// position returns where v is.
func (x *index[T]) position(v T) int { return x.search(v.sortKey()) }

// createdBounds returns the half-open range [lo, hi) of items whose created time is in
// [from, to].
func (x *index[T]) createdBounds(from, to int64) (lo, hi int) {
	lo = sort.Search(len(x.items), func(i int) bool { return x.items[i].key.created >= from })
	hi = sort.Search(len(x.items), func(i int) bool { return x.items[i].key.created > to })
	return lo, max(lo, hi)
}

// cursorPosition returns the position paginate takes for a cursor object with key k. An
// object in x is at its position; for one that is not (a cursor from outside a filtered
// list), the position is chosen so that the page starts at the first item past the key in the
// direction of paging.
func (x *index[T]) cursorPosition(k sortKey, backward bool) int {
	i := x.search(k)
	if i < len(x.items) && x.items[i].key == k {
		return i
	}
	if backward {
		return i - 1 // paginate starts backward pages just after the cursor
	}
	return i // and forward pages just before it
}
