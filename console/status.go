package console

import (
	"context"
	"errors"
	"sync"

	"github.com/reconcilekit/reconcile"
)

// jobStatus is one job's row of the overview.
type jobStatus struct {
	reconcile.JobHealth
	// cov is the job's coverage when its store reads it (hasCov), or covErr.
	cov    reconcile.Coverage
	hasCov bool
	covErr error
}

// readStatuses reads every job's health through the Monitor, and its coverage when its store
// reads it, all at once: the Monitor shares and keeps the reads, and bounds them by its
// Timeout.
func (c *Console) readStatuses(ctx context.Context) []jobStatus {
	if c.monitor == nil {
		return nil
	}
	jobs := c.monitor.Jobs()
	out := make([]jobStatus, len(jobs))
	var wg sync.WaitGroup
	wg.Go(func() {
		for i, jh := range c.monitor.Health(ctx) {
			out[i].JobHealth = jh
		}
	})
	for i, job := range jobs {
		policy, _ := c.monitor.Policy(job)
		wg.Go(func() {
			cov, err := c.monitor.Coverage(ctx, job, coverageQuery(policy.LagSLO))
			if errors.Is(err, errors.ErrUnsupported) {
				return // the job's store reads no coverage: no chart
			}
			out[i].cov, out[i].covErr, out[i].hasCov = cov, err, true
		})
	}
	wg.Wait()
	return out
}

// forget tells the Monitor of a write the overview (and every other surface) should show.
func (c *Console) forget() {
	if c.monitor != nil {
		c.monitor.Forget()
	}
}
