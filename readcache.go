package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// readCache is the Monitor's one cache: what it read (a job's status, a job's coverage), by
// key, kept for a while, because pgstore's Status may scan the job's table and a health probe,
// a scrape and a person reloading the console should not each do that.
//
// At most one read of a key is under way at any time: the first request starts it and the
// others wait for it, so a burst of requests, or a reader that hangs, holds one read and one
// goroutine per key. A request that gives up stops waiting, not the read, which runs on, bounded
// by the timeout, for the others. A read that panics fails, it does not take the process down.
// Failed reads are not kept.
//
// forget (after a write) starts a new generation, and so does a write the key's reader counts
// (its writes func): a read that began before it still answers the requests that were waiting
// for it, but is not kept, and a request that comes after it waits for that read to end and
// then reads again, rather than take what the read saw before the write.
type readCache struct {
	ttl     time.Duration // <= 0: nothing is kept
	timeout time.Duration // bounds each read
	now     func() time.Time
	failed  func(key readKey, err error) // told of every failed read, once; may be nil

	mu    sync.Mutex
	gen   uint64 // forgets so far
	kept  map[readKey]keptRead
	calls map[readKey]*readCall // the read under way, per key
}

// errNotInTime is a wait for a read that ran out (the caller's deadline, or the caller went
// away) before the read ended.
var errNotInTime = errors.New("not read in time")

// readKey names what is read: a job's "status" or "coverage", and for a coverage its query.
type readKey struct {
	what, job, query string
}

// keptRead is a read's result and when it began: the cache's clock, and the generation.
type keptRead struct {
	v   any
	at  time.Time
	gen uint64
}

// readCall is one read; done is closed once v and err are set.
type readCall struct {
	gen  uint64
	done chan struct{}
	v    any
	err  error
}

func newReadCache(ttl, timeout time.Duration, now func() time.Time, failed func(readKey, error)) *readCache {
	return &readCache{ttl: ttl, timeout: timeout, now: now, failed: failed,
		kept: map[readKey]keptRead{}, calls: map[readKey]*readCall{}}
}

// get returns key's value: kept, read by the read under way, or read by read now. writes, if
// not nil, counts the writes that could change the value (see readCache).
func (c *readCache) get(ctx context.Context, key readKey, writes func() uint64, read func(context.Context) (any, error)) (any, error) {
	for {
		var w uint64
		if writes != nil {
			w = writes()
		}
		now := c.now()
		c.mu.Lock()
		gen := c.gen + w
		if k, ok := c.kept[key]; ok && k.gen == gen && !now.Before(k.at) && now.Sub(k.at) < c.ttl {
			c.mu.Unlock()
			return k.v, nil
		}
		call := c.calls[key]
		if call == nil {
			call = &readCall{gen: gen, done: make(chan struct{})}
			c.calls[key] = call
			go c.read(ctx, key, read, call, now)
		}
		c.mu.Unlock()
		select {
		case <-call.done:
		case <-ctx.Done():
			select { // a read done in time counts, even if the wait for another ran out
			case <-call.done:
			default:
				return nil, fmt.Errorf("%w: %w", errNotInTime, ctx.Err())
			}
		}
		if call.gen == gen {
			return call.v, call.err
		}
		// The read began before a write this request came after: read again.
	}
}

// read runs call, detached from the cancellation of the request that started it (others may be
// waiting for it) but not from its values, within the cache's timeout.
func (c *readCache) read(ctx context.Context, key readKey, read func(context.Context) (any, error), call *readCall, began time.Time) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	defer close(call.done)
	defer func() {
		if p := recover(); p != nil {
			call.v, call.err = nil, fmt.Errorf("reconcile: monitor: the %s read of job %q panicked: %v", key.what, key.job, p)
		}
		if call.err != nil && c.failed != nil {
			c.failed(key, call.err)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if call.err == nil && c.ttl > 0 {
			c.kept[key] = keptRead{v: call.v, at: began, gen: call.gen}
		}
		delete(c.calls, key)
	}()
	call.v, call.err = read(ctx)
}

// forget drops every value kept and starts a new generation.
func (c *readCache) forget() {
	c.mu.Lock()
	c.gen++
	clear(c.kept)
	c.mu.Unlock()
}
