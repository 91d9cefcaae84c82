package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/shared/safetext"
)

// Status reads the job's monitoring figures (reconcile.StatusReader) with the semantics of
// pgstore's: the lag is the longest any row has gone without being verified by the job,
// counting a row never verified from its creation; open findings leave out those of rows
// deleted since; a finding open longer than Options.StaleAfter is stale; lanes come sorted by
// name. Times are the store's clock. It walks every row, which is what a store in memory can
// afford.
func (s *Store[K, L]) Status(ctx context.Context, job string) (reconcile.Status, error) {
	if err := ctx.Err(); err != nil {
		return reconcile.Status{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	st := reconcile.Status{Job: job, Now: now, Rows: int64(len(s.keys)), OpenFindings: map[string]int{}, StaleAfter: s.staleAfter}
	for _, k := range s.keys {
		r := s.rows[k]
		since := r.CreatedAt
		if o, ok := s.observations[obsKey{job, fmt.Sprint(k)}]; ok {
			since = o.VerifiedAt
		}
		st.Lag = max(st.Lag, now.Sub(since)) // never negative: a row created in the future has not waited yet
		if r.CreatedAt.After(now.Add(-time.Hour)) {
			st.NewRowsPerHour++
		}
	}
	if c := s.cursors[job]; c != nil {
		st.CycleStartedAt, st.LastCycleCompletedAt, st.CyclesCompleted = c.CycleStartedAt, c.LastCycleCompletedAt, c.CyclesCompleted
		st.LastBatchAt, st.LastBatchScanned, st.LastBatchUnverifiable = c.LastBatchAt, c.LastBatchScanned, c.LastBatchUnverified
	}
	for fk, i := range s.open {
		if fk.job != job || (fk.kind != reconcile.KindMissingLocally && s.ids[fk.record] == 0) {
			continue // a deleted row's finding is closed when the cycle completes
		}
		f := s.findings[i]
		st.OpenFindings[f.Kind]++
		if now.Sub(f.DetectedAt) > s.staleAfter {
			st.StaleFindings++
		}
		if st.OldestOpenFinding.IsZero() || f.DetectedAt.Before(st.OldestOpenFinding) {
			st.OldestOpenFinding = f.DetectedAt
		}
	}
	if f, ok := s.failures[job]; ok {
		st.LastFailureAt, st.LastFailure = f.at, f.msg
	}
	for lk, l := range s.lanes {
		if lk.job != job {
			continue
		}
		st.Lanes = append(st.Lanes, reconcile.LaneStatus{
			Lane: lk.lane, CreatedAt: l.CreatedAt, LastRunAt: l.LastRunAt, PassesCompleted: l.PassesCompleted, LastEndAt: l.LastEndAt,
			GapAt: l.GapAt, GapReason: l.GapReason,
			// The sweep cycle under way at the gap started before it; the next one starts after
			// it, and covers every row once it completes.
			GapOpen:       !l.GapAt.IsZero() && st.CyclesCompleted < l.GapCycles+2,
			LastFailureAt: l.LastFailureAt, LastFailure: l.LastFailure,
		})
	}
	slices.SortFunc(st.Lanes, func(a, b reconcile.LaneStatus) int { return strings.Compare(a.Lane, b.Lane) })
	return st, nil
}

// RecordFailure remembers that a batch of job failed, for Status and health
// (reconcile.FailureRecorder, called by RunBatch). The message is cut to 1,000 bytes, as in
// pgstore.
func (s *Store[K, L]) RecordFailure(ctx context.Context, job string, cause error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[job] = failure{at: s.now(), msg: failureText(cause)}
	return nil
}

// RecordLaneFailure remembers that a step of a lane failed (reconcile.LaneFailureRecorder).
func (s *Store[K, L]) RecordLaneFailure(ctx context.Context, job, lane string, cause error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	k := laneKey{job, lane}
	l := s.lanes[k]
	if l == nil {
		l = &LaneInfo{CreatedAt: now}
		s.lanes[k] = l
	}
	l.LastFailureAt, l.LastFailure = now, failureText(cause)
	return nil
}

// failureText is cause's message as pgstore keeps it: cut to 1,000 bytes, on a character
// boundary, with a NUL or bytes that are not UTF-8 as U+FFFD.
func failureText(cause error) string { return safetext.Storable(cause.Error(), 1000) }
