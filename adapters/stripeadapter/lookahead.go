package stripeadapter

import (
	"context"
	"sync"
	"time"

	"github.com/reconcilekit/reconcile"
)

// Defaults of GatewayConfig's look-ahead cache.
const (
	DefaultListCacheTTL  = 30 * time.Second
	DefaultListCacheSize = 20000
)

// lookaheadOf keeps the objects a bulk fetch listed but was not asked about, for the next
// batches. Rows created in a burst
// (an import, a backfill) share one window in which Stripe lists the newest first, so a batch
// of the oldest rows must page past the newer ones: kept here, those serve the batches that
// follow instead of being listed again or retrieved one by one.
//
// An object is served at most once, dated by the start of the list call that returned it, and
// only while younger than ttl and listed no earlier than the engine asks (the start of the
// job's cycle, reconcile.DatedBatchGateway): no verification rests on an older answer, and no
// cycle on the previous cycle's listing. At most size objects are kept, the oldest dropped
// first. It is safe for concurrent use.
type lookaheadOf[T any] struct {
	ttl  time.Duration
	size int
	id   func(T) string
	now  func() time.Time

	mu    sync.Mutex
	objs  map[string]cached[T]
	order []orderEntry // insertion order, oldest first, from head on
	head  int
	seq   uint64
}

type cached[T any] struct {
	v   T
	at  time.Time // when the list call that returned it was made
	seq uint64
}

type orderEntry struct {
	id  string
	seq uint64
}

func newLookaheadOf[T any](ttl time.Duration, size int, id func(T) string, now func() time.Time) *lookaheadOf[T] {
	return &lookaheadOf[T]{ttl: ttl, size: size, id: id, now: now, objs: map[string]cached[T]{}}
}

// take removes the objects kept for ids and returns, with their listing times, those listed
// at or after since and younger than ttl.
func (c *lookaheadOf[T]) take(ids map[string]bool, since time.Time) map[string]reconcile.Answer[T] {
	found := map[string]reconcile.Answer[T]{}
	if c == nil {
		return found
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.expire(now)
	if len(c.objs) == 0 {
		return found
	}
	for id := range ids {
		o, ok := c.objs[id]
		if !ok {
			continue
		}
		delete(c.objs, id) // served once: a row is asked about once a cycle
		if now.Sub(o.at) < c.ttl && !o.at.Before(since) {
			found[id] = reconcile.Answer[T]{Object: o.v, At: o.at}
		}
	}
	return found
}

// put keeps objs, listed by a call made at at.
func (c *lookaheadOf[T]) put(objs []T, at time.Time) {
	if c == nil || len(objs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range objs {
		id := c.id(v)
		c.seq++
		c.objs[id] = cached[T]{v: v, at: at, seq: c.seq}
		c.order = append(c.order, orderEntry{id, c.seq})
	}
	c.expire(c.now())
}

// expire drops objects past their ttl and, oldest first, those beyond size.
func (c *lookaheadOf[T]) expire(now time.Time) {
	for c.head < len(c.order) {
		e := c.order[c.head]
		o, ok := c.objs[e.id]
		switch {
		case !ok || o.seq != e.seq: // served, or kept again later
		case now.Sub(o.at) >= c.ttl:
			delete(c.objs, e.id)
		case len(c.objs) > c.size:
			delete(c.objs, e.id)
		default:
			c.compact()
			return
		}
		c.head++
	}
	c.compact()
}

// compact reclaims the order slice's consumed head, and its entries for objects already
// served when they outnumber the objects kept.
func (c *lookaheadOf[T]) compact() {
	if c.head > 0 && c.head >= len(c.order)/2 {
		c.order = append(c.order[:0], c.order[c.head:]...)
		c.head = 0
	}
	if len(c.order)-c.head > 2*len(c.objs)+1024 {
		kept := c.order[:0]
		for _, e := range c.order[c.head:] {
			if o, ok := c.objs[e.id]; ok && o.seq == e.seq {
				kept = append(kept, e)
			}
		}
		c.order, c.head = kept, 0
	}
}

// FetchBatch is FetchBatchSince with answers obtained by this call only (the engine takes them
// for the call's): the look-ahead serves none of what it keeps, though it keeps what the list
// shows beyond the lookups, for FetchBatchSince.
func (g *ObjectGateway[T]) FetchBatch(ctx context.Context, lookups []reconcile.Lookup, wait func(context.Context) error) (map[string]T, error) {
	found, err := g.FetchBatchSince(ctx, lookups, g.c.now(), wait)
	return objects(found), err
}

// objects returns answers' objects, by the same keys.
func objects[T any](answers map[string]reconcile.Answer[T]) map[string]T {
	out := make(map[string]T, len(answers))
	for id, a := range answers {
		out[id] = a.Object
	}
	return out
}
