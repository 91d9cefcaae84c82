package pgstore

import (
	"context"
	"errors"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
)

// Status reads the job's monitoring figures in one round trip. Rows, Lag and NewRowsPerHour
// cover the rows the store's Filter selects, so each tier reports its own; a row counts as
// verified when the job or one of LagJobs last verified it. They scan the host table: at
// millions of rows, read it every few minutes, not on every scrape.
func (s *Store[L]) Status(ctx context.Context, job string) (reconcile.Status, error) {
	sql, err := s.statements(ctx)
	if err != nil {
		return reconcile.Status{}, err
	}
	st := reconcile.Status{Job: job, OpenFindings: map[string]int{}}
	b := &pgx.Batch{}
	var lagSeconds float64
	lagArgs := append([]any{append([]string{job}, s.cfg.LagJobs...)}, sql.filterArgs...)
	b.Queue(sql.lag, lagArgs...).QueryRow(func(r pgx.Row) error { return r.Scan(&st.Now, &st.Rows, &lagSeconds, &st.NewRowsPerHour) })
	var started, completed, lastBatch *time.Time
	var failedAt *time.Time
	var failure *string
	b.Queue(s.own.cursorStatus, job).
		QueryRow(func(r pgx.Row) error {
			err := r.Scan(&started, &completed, &st.CyclesCompleted, &lastBatch, &st.LastBatchScanned, &st.LastBatchUnverifiable, &failedAt, &failure)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		})
	s.queueLaneStatus(b, job, &st, &st.CyclesCompleted)
	b.Queue(sql.openFindings, job, s.cfg.StaleAfter).Query(func(rows pgx.Rows) error {
		var kind string
		var n, stale int
		var oldest time.Time
		_, err := pgx.ForEachRow(rows, []any{&kind, &n, &oldest, &stale}, func() error {
			st.OpenFindings[kind] = n
			st.StaleFindings += stale
			if st.OldestOpenFinding.IsZero() || oldest.Before(st.OldestOpenFinding) {
				st.OldestOpenFinding = oldest
			}
			return nil
		})
		return err
	})
	if err := s.db.SendBatch(ctx, b).Close(); err != nil {
		return reconcile.Status{}, s.cfg.Tables.wrap("status of job "+job, err)
	}
	st.Lag = lagOf(lagSeconds)
	for _, p := range []struct {
		dst *time.Time
		src *time.Time
	}{{&st.CycleStartedAt, started}, {&st.LastCycleCompletedAt, completed}, {&st.LastBatchAt, lastBatch}, {&st.LastFailureAt, failedAt}} {
		if p.src != nil {
			*p.dst = *p.src
		}
	}
	if failure != nil {
		st.LastFailure = *failure
	}
	return st, nil
}

// lagOf turns a lag in seconds into a Duration: never negative (a row created in the future
// has not waited yet), and at most the largest Duration rather than overflowing to a negative
// one. Rows with times no lag can be computed from (infinite, or before 1900) are not in the
// seconds at all: Read makes each an invalid_row finding, and the open finding shows it.
func lagOf(seconds float64) time.Duration {
	ns := seconds * float64(time.Second)
	switch {
	case !(ns > 0): // also NaN
		return 0
	case ns >= float64(math.MaxInt64):
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// RecordFailure remembers that a batch of job failed, for Status and health: a
// reconcile.FailureRecorder, called by RunBatch. The message is cut to 1,000 bytes.
func (s *Store[L]) RecordFailure(ctx context.Context, job string, cause error) error {
	_, err := s.db.Exec(ctx, s.own.recordFailure, job, failureText(cause))
	if err != nil {
		return s.cfg.Tables.wrap("record failure of job "+job, err)
	}
	noteWrite()
	return nil
}

var _ reconcile.FailureRecorder = (*Store[string])(nil)

// failureText is cause's message cut to 1,000 bytes, on a character boundary.
func failureText(cause error) string {
	msg := cause.Error()
	if len(msg) > 1000 {
		msg = strings.ToValidUTF8(msg[:1000], "") + "..."
	}
	return msg
}

// queueLaneStatus queues the read of the job's lanes for Status; cycles is the sweep's completed cycles.
func (s *Store[L]) queueLaneStatus(b *pgx.Batch, job string, st *reconcile.Status, cycles *int64) {
	b.Queue(s.own.laneStatus, job).Query(func(rows pgx.Rows) error {
		var l reconcile.LaneStatus
		var lastRun, lastEnd, gapAt, failedAt *time.Time
		var gapCycles *int64
		_, err := pgx.ForEachRow(rows, []any{&l.Lane, &l.CreatedAt, &lastRun, &l.PassesCompleted, &lastEnd, &gapAt, &l.GapReason, &gapCycles,
			&failedAt, &l.LastFailure}, func() error {
			l.LastRunAt, l.LastEndAt, l.GapAt, l.LastFailureAt = derefTime(lastRun), derefTime(lastEnd), derefTime(gapAt), derefTime(failedAt)
			// The sweep cycle under way at the gap started before it; the next one starts after
			// it, and covers every row once it completes.
			l.GapOpen = gapCycles != nil && *cycles < *gapCycles+2
			st.Lanes = append(st.Lanes, l)
			return nil
		})
		return err
	})
}
