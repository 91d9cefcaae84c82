package console

import (
	"context"
	"sync"
	"time"

	"github.com/reconcilekit/reconcile"
)

// statusCache keeps each job's status for a while: pgstore's Status scans the job's table,
// and a person reloading the overview should not do that every time. Failed reads are not kept.
type statusCache struct {
	ttl time.Duration // <= 0: no caching

	mu sync.Mutex
	m  map[string]cachedStatus
}

type cachedStatus struct {
	st reconcile.Status
	at time.Time
}

func newStatusCache(ttl time.Duration) *statusCache {
	if ttl == 0 {
		ttl = DefaultStatusTTL
	}
	return &statusCache{ttl: ttl, m: map[string]cachedStatus{}}
}

func (c *statusCache) get(ctx context.Context, r reconcile.StatusReader, job string) (reconcile.Status, error) {
	now := time.Now()
	if c.ttl > 0 {
		c.mu.Lock()
		e, ok := c.m[job]
		c.mu.Unlock()
		if ok && now.Sub(e.at) < c.ttl {
			return e.st, nil
		}
	}
	st, err := r.Status(ctx, job)
	if err != nil {
		return st, err
	}
	if c.ttl > 0 {
		c.mu.Lock()
		c.m[job] = cachedStatus{st: st, at: now}
		c.mu.Unlock()
	}
	return st, nil
}

// clear forgets every status, after a change the overview should show at once.
func (c *statusCache) clear() {
	c.mu.Lock()
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
			st, err := c.statuses.get(ctx, c.store, job)
			if err != nil {
				out[i].err = err
				return
			}
			policy, ok := c.policies[job]
			if !ok {
				policy = c.policy
			}
			out[i].health = reconcile.EvaluateHealth(st, policy)
		})
	}
	wg.Wait()
	return out
}
