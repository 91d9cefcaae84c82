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

// readCache keeps each job's last read for a while: pgstore's Status scans the job's table,
// and a person reloading the overview should not do that every time. Failed reads are not
// kept. The overview keeps its statuses in one and its coverages in another.
//
// Concurrent reads of one job are one read: the first starts it, and the others (whose
// requests began after the last clear) wait for its result. A read whose request gives up
// stops waiting, not the read: it runs on, bounded by the timeout, for the others.
//
// A clear (after a write) bumps the generation: a read that began before it may still answer
// the requests waiting for it, but its result is not kept, and requests after the clear start
// a read of their own.
type readCache[T any] struct {
	what    string        // what is read, for a panic's error: "status", "coverage"
	ttl     time.Duration // <= 0: no caching
	timeout time.Duration // bounds each read

	mu    sync.Mutex
	gen   uint64
	m     map[string]cached[T]
	calls map[string]*readCall[T] // the read under way, per job
}

type cached[T any] struct {
	v  T
	at time.Time
}

// readCall is one read of a job's value, and its result once done is closed.
type readCall[T any] struct {
	gen  uint64 // the cache's generation when the read began
	done chan struct{}
	v    T
	err  error
}

func newReadCache[T any](what string, ttl, timeout time.Duration) *readCache[T] {
	if ttl == 0 {
		ttl = DefaultStatusTTL
	}
	if timeout <= 0 {
		timeout = DefaultStatusTimeout
	}
	return &readCache[T]{what: what, ttl: ttl, timeout: timeout, m: map[string]cached[T]{}, calls: map[string]*readCall[T]{}}
}

// get returns job's value, kept or read by read.
func (c *readCache[T]) get(ctx context.Context, job string, read func(context.Context) (T, error)) (T, error) {
	now := time.Now()
	c.mu.Lock()
	if e, ok := c.m[job]; ok && c.ttl > 0 && now.Sub(e.at) < c.ttl {
		c.mu.Unlock()
		return e.v, nil
	}
	call, ok := c.calls[job]
	if !ok || call.gen != c.gen {
		call = &readCall[T]{gen: c.gen, done: make(chan struct{})}
		c.calls[job] = call
		go c.read(ctx, job, read, call, now)
	}
	c.mu.Unlock()
	select {
	case <-call.done:
		return call.v, call.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// read runs call, detached from the cancellation of the request that started it (others may be
// waiting for it) but not from its values, within the cache's timeout.
func (c *readCache[T]) read(ctx context.Context, job string, read func(context.Context) (T, error), call *readCall[T], began time.Time) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	defer close(call.done)
	defer func() {
		// A panicking store fails this read, not the process: the others waiting get an error.
		if p := recover(); p != nil {
			var zero T
			call.v, call.err = zero, fmt.Errorf("console: %s of job %q: panic: %v", c.what, job, p)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if call.err == nil && c.ttl > 0 && c.gen == call.gen {
			c.m[job] = cached[T]{v: call.v, at: began}
		}
		if c.calls[job] == call {
			delete(c.calls, job)
		}
	}()
	call.v, call.err = read(ctx)
}

// clear forgets every value, after a change the overview should show at once. Reads under
// way finish, but what they read is not kept.
func (c *readCache[T]) clear() {
	c.mu.Lock()
	c.gen++
	clear(c.m)
	c.mu.Unlock()
}

// jobStatus is one job's row of the overview.
type jobStatus struct {
	job    string
	policy reconcile.HealthPolicy
	health reconcile.Health
	err    error
	// cov is the job's coverage when its store reads it (hasCov), or covErr.
	cov    reconcile.Coverage
	hasCov bool
	covErr error
}

// readStatuses reads every job's status, and its coverage when its store reads it, all
// concurrently within the console's timeout: one read of each per job at most, less when
// the caches answer.
func (c *Console) readStatuses(ctx context.Context) []jobStatus {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	out := make([]jobStatus, len(c.jobs))
	var wg sync.WaitGroup
	for i, job := range c.jobs {
		policy, ok := c.policies[job]
		if !ok {
			policy = c.policy
		}
		out[i].job, out[i].policy = job, policy
		wg.Go(func() {
			st, err := c.statuses.get(ctx, job, func(ctx context.Context) (reconcile.Status, error) { return c.status.Status(ctx, job) })
			if err != nil {
				out[i].err = err
				return
			}
			// The reasons are shown: a failure's text becomes its classified reason.
			out[i].health = reconcile.EvaluateHealth(showableStatus(st), policy)
		})
		cr := c.coverageReader(job)
		if cr == nil {
			continue
		}
		out[i].hasCov = true
		wg.Go(func() {
			q := coverageQuery(lagSLO(policy))
			out[i].cov, out[i].covErr = c.coverages.get(ctx, job, func(ctx context.Context) (reconcile.Coverage, error) { return cr.Coverage(ctx, job, q) })
		})
	}
	wg.Wait()
	return out
}

// coverageReader is what reads job's coverage: Config.Coverage, else the job's status reader
// (through StatusByJob, the job's own store) if it is a reconcile.CoverageReader, else nil.
func (c *Console) coverageReader(job string) reconcile.CoverageReader {
	if c.coverage != nil {
		return c.coverage
	}
	var r any = c.status
	if m, ok := c.status.(StatusByJob); ok {
		r = m[job]
	}
	cr, _ := r.(reconcile.CoverageReader)
	return cr
}

// forget clears the statuses and coverages kept, after a write the overview should show.
func (c *Console) forget() {
	c.statuses.clear()
	c.coverages.clear()
}

// lagSLO is p's lag SLO, its default when unset.
func lagSLO(p reconcile.HealthPolicy) time.Duration {
	if p.LagSLO <= 0 {
		return reconcile.DefaultLagSLO
	}
	return p.LagSLO
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
