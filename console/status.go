package console

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/reconcilekit/reconcile"
)

// statusCache keeps each job's status for a while: pgstore's Status scans the job's table,
// and a person reloading the overview should not do that every time. Failed reads are not kept.
//
// Concurrent reads of one job are one read: the first starts it, and the others (whose
// requests began after the last clear) wait for its result. A read whose request gives up
// stops waiting, not the read: it runs on, bounded by the timeout, for the others.
//
// A clear (after a write) bumps the generation: a read that began before it may still answer
// the requests waiting for it, but its status is not kept, and requests after the clear start
// a read of their own.
type statusCache struct {
	ttl     time.Duration // <= 0: no caching
	timeout time.Duration // bounds each read

	mu    sync.Mutex
	gen   uint64
	m     map[string]cachedStatus
	calls map[string]*statusCall // the read under way, per job
}

type cachedStatus struct {
	st reconcile.Status
	at time.Time
}

// statusCall is one read of a job's status, and its result once done is closed.
type statusCall struct {
	gen  uint64 // the cache's generation when the read began
	done chan struct{}
	st   reconcile.Status
	err  error
}

func newStatusCache(ttl, timeout time.Duration) *statusCache {
	if ttl == 0 {
		ttl = DefaultStatusTTL
	}
	if timeout <= 0 {
		timeout = DefaultStatusTimeout
	}
	return &statusCache{ttl: ttl, timeout: timeout, m: map[string]cachedStatus{}, calls: map[string]*statusCall{}}
}

func (c *statusCache) get(ctx context.Context, r reconcile.StatusReader, job string) (reconcile.Status, error) {
	now := time.Now()
	c.mu.Lock()
	if e, ok := c.m[job]; ok && c.ttl > 0 && now.Sub(e.at) < c.ttl {
		c.mu.Unlock()
		return e.st, nil
	}
	call, ok := c.calls[job]
	if !ok || call.gen != c.gen {
		call = &statusCall{gen: c.gen, done: make(chan struct{})}
		c.calls[job] = call
		go c.read(ctx, r, job, call, now)
	}
	c.mu.Unlock()
	select {
	case <-call.done:
		return call.st, call.err
	case <-ctx.Done():
		return reconcile.Status{}, ctx.Err()
	}
}

// read runs call, detached from the cancellation of the request that started it (others may be
// waiting for it) but not from its values, within the cache's timeout.
func (c *statusCache) read(ctx context.Context, r reconcile.StatusReader, job string, call *statusCall, began time.Time) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	defer close(call.done)
	defer func() {
		// A panicking store fails this read, not the process: the others waiting get an error.
		if p := recover(); p != nil {
			call.st, call.err = reconcile.Status{}, fmt.Errorf("console: status of job %q: panic: %v", job, p)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if call.err == nil && c.ttl > 0 && c.gen == call.gen {
			c.m[job] = cachedStatus{st: call.st, at: began}
		}
		if c.calls[job] == call {
			delete(c.calls, job)
		}
	}()
	call.st, call.err = r.Status(ctx, job)
}

// clear forgets every status, after a change the overview should show at once. Reads under
// way finish, but what they read is not kept.
func (c *statusCache) clear() {
	c.mu.Lock()
	c.gen++
	clear(c.m)
	c.mu.Unlock()
}

// jobStatus is one job's row of the overview.
type jobStatus struct {
	job    string
	health reconcile.Health
	err    error
}

// readStatuses reads every job's status concurrently, within the console's timeout.
func (c *Console) readStatuses(ctx context.Context) []jobStatus {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	out := make([]jobStatus, len(c.jobs))
	var wg sync.WaitGroup
	for i, job := range c.jobs {
		wg.Go(func() {
			out[i].job = job
			st, err := c.statuses.get(ctx, c.status, job)
			if err != nil {
				out[i].err = err
				return
			}
			policy, ok := c.policies[job]
			if !ok {
				policy = c.policy
			}
			// The reasons are shown: a failure's text becomes its classified reason.
			out[i].health = reconcile.EvaluateHealth(showableStatus(st), policy)
		})
	}
	wg.Wait()
	return out
}

// JobLister is an optional ability of Config.Status or Config.Store: naming the jobs it
// knows, for the overview when Config.Jobs is empty.
type JobLister interface {
	Jobs() []string
}

// StatusByJob reads each job's status through the job's own store: a Config.Status for jobs
// whose stores differ (tiers over one table, each with its own filter, or jobs over several
// tables). It is a JobLister of its jobs, sorted.
type StatusByJob map[string]reconcile.StatusReader

var _ JobLister = StatusByJob(nil)

// Status reads job's status through its store.
func (m StatusByJob) Status(ctx context.Context, job string) (reconcile.Status, error) {
	r, ok := m[job]
	if !ok || r == nil {
		return reconcile.Status{}, fmt.Errorf("console: no store is configured for job %q", job)
	}
	return r.Status(ctx, job)
}

// Jobs returns the jobs, sorted.
func (m StatusByJob) Jobs() []string {
	return slices.Sorted(maps.Keys(m))
}
