package memstore

import (
	"context"
	"fmt"
	"time"

	"github.com/reconcilekit/reconcile"
)

var _ reconcile.CoverageReader = (*Store[int64, string])(nil)

// Coverage reads how long the job's rows have gone unverified, bucketed by q.Ages, and its open
// findings at each of the last q.Days days (reconcile.CoverageReader). A row's time is the one
// Status's lag takes: its last verification by the job, or its creation if none. Exact, never
// Estimated: it walks every row and every finding. A finding is open at a time when it was
// detected then or before and not resolved by then.
func (s *Store[K, L]) Coverage(ctx context.Context, job string, q reconcile.CoverageQuery) (reconcile.Coverage, error) {
	if err := q.Validate(); err != nil {
		return reconcile.Coverage{}, fmt.Errorf("memstore: coverage of job %s: %w", job, err)
	}
	if err := ctx.Err(); err != nil {
		return reconcile.Coverage{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	cov := reconcile.Coverage{Job: job, Now: now, Rows: make([]int64, len(q.Ages)+1), Open: make([]reconcile.OpenSample, q.Days)}
	for _, k := range s.keys {
		since := s.rows[k].CreatedAt
		if o, ok := s.observations[obsKey{job, fmt.Sprint(k)}]; ok {
			since = o.VerifiedAt
		}
		cov.Rows[q.Bucket(now.Sub(since))]++
	}
	for i := range cov.Open {
		cov.Open[i].At = now.Add(-time.Duration(q.Days-1-i) * 24 * time.Hour)
	}
	for _, f := range s.findings {
		if f.Job != job {
			continue
		}
		for i := range cov.Open {
			at := cov.Open[i].At
			if !f.DetectedAt.After(at) && (f.ResolvedAt.IsZero() || f.ResolvedAt.After(at)) {
				cov.Open[i].Open++
			}
		}
	}
	return cov, nil
}
