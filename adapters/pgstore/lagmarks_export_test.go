package pgstore

import (
	"context"
	"time"
)

// ScanOldest is what the scan Status keeps for filtered stores finds: the oldest
// coalesce(last verified, created_at) of the job's valid rows (nil if none) and their number.
// The lag marks' tests compare Status with it.
func ScanOldest[L any](ctx context.Context, s *Store[L], job string) (*time.Time, int64, error) {
	st, err := s.statements(ctx)
	if err != nil {
		return nil, 0, err
	}
	p := st.parts
	var oldest *time.Time
	var rows int64
	q := "SELECT now() - max(" + p.lagValue() + "), count(*) FROM " + st.spec.Query(1).LagFrom()
	err = s.db.QueryRow(ctx, q, append([]any{s.lagJobs(job)}, st.filterArgs...)...).Scan(&oldest, &rows)
	return oldest, rows, err
}
