package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/hosttable"
	"github.com/reconcilekit/reconcile/internal/shared/safetext"
)

// Status reads the job's monitoring figures. Rows, Lag and NewRowsPerHour cover the rows the
// store's Filter selects, so each tier reports its own; a row counts as verified when the job or
// one of LagJobs last verified it.
//
// For a store of every row (no Filter) with observations in the reconciler's own table, Status
// does not scan the host table: each commit of the sweep records what it verified (a lag mark
// of up to 2,048 rows, see lagmarks.go and migration 008), and Status reads the marks of the
// current cycle and of the previous one past the cursor, the rows of the lowest mark exactly,
// and the rows created since the previous cycle started — index range scans whose cost does
// not grow with the table (about 20 ms at 10 million rows; README, Performance). The host table
// needs an index on CreatedAtColumn for that. Lag is then exact, unless every row of the three
// marks holding the oldest verifications has since been deleted or verified again out of turn
// (by a lane, or a LagJobs job): then the fourth mark's time stands in, and Lag is too large,
// never too small, until the sweep reads past those keys. A row is taken to be inserted no
// earlier than its created_at: a row inserted with an older created_at (a backfill) behind the
// cursor counts from the next time the sweep reads it. Rows is the number of rows the sweep
// read over the last cycle's worth of batches, not a count(*) (which costs about a second at 10
// million rows): the planner's input, exact as of each batch's read; below 100,000 rows Status
// counts them. NewRowsPerHour counts the last hour's rows by created_at.
//
// The host table is scanned, joined with the observations, as before: until the job completes
// a cycle with marks from its start (the first cycle after Migrate, or after upgrading, and the
// one under way then), for a sharded job, and for stores with a Filter or ObserveInHostColumns.
// A Filter's rows change tiers when their columns change, or with Within and OlderThan as the
// clock moves, and nothing records when: such a row's lag is its last verification by any
// job, which only a scan finds. ObserveInHostColumns keeps the verified-at time in the host's
// own column, which marks written by this store alone cannot vouch for. A scan costs about 2
// seconds per million rows: at millions of rows, read those stores' Status every few minutes,
// not on every scrape.
func (s *Store[L]) Status(ctx context.Context, job string) (reconcile.Status, error) {
	sql, err := s.statements(ctx)
	if err != nil {
		return reconcile.Status{}, err
	}
	st := reconcile.Status{Job: job, OpenFindings: map[string]int{}, StaleAfter: s.cfg.StaleAfter}
	b := &pgx.Batch{}
	var lagSeconds float64
	marks := s.lagMarksApply()
	var sum lagSummary
	if marks {
		b.Queue("SELECT now()").QueryRow(func(r pgx.Row) error { return r.Scan(&st.Now) })
		s.queueLagSummary(b, sql, job, &sum)
		b.Queue(sql.lagMarks.newRows).QueryRow(func(r pgx.Row) error { return r.Scan(&st.NewRowsPerHour) })
	} else {
		s.queueScanLag(b, sql, job, &st, &lagSeconds)
	}
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
	var lastFailedAt *time.Time
	var lastFailure string
	b.Queue(s.own.lastFailure, job).QueryRow(func(r pgx.Row) error {
		if err := r.Scan(&lastFailedAt, &lastFailure); !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return nil
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
	switch {
	case !marks:
		st.Lag = lagOf(lagSeconds)
	case sum.ready:
		oldest, err := s.oldestFromMarks(ctx, sql, job, sum)
		if err != nil {
			return reconcile.Status{}, err
		}
		if oldest != nil {
			st.Lag = max(st.Now.Sub(*oldest), 0)
		}
		st.Rows = sum.rows
		if sum.rows < countRowsBelow {
			if err := s.db.QueryRow(ctx, sql.lagMarks.count).Scan(&st.Rows); err != nil {
				return reconcile.Status{}, s.cfg.Tables.wrap("status of job "+job, err)
			}
		}
	default:
		b := &pgx.Batch{}
		s.queueScanLag(b, sql, job, &st, &lagSeconds)
		if err := s.db.SendBatch(ctx, b).Close(); err != nil {
			return reconcile.Status{}, s.cfg.Tables.wrap("status of job "+job, err)
		}
		st.Lag = lagOf(lagSeconds)
	}
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
	// A failure recorded apart from the cursor (by this release), if later than one recorded
	// in it (by an earlier release).
	if lastFailedAt != nil && lastFailedAt.After(st.LastFailureAt) {
		st.LastFailureAt, st.LastFailure = *lastFailedAt, lastFailure
	}
	return st, nil
}

// queueScanLag queues the lag statement that scans the host table, with the rows and the rows
// created in the last hour.
func (s *Store[L]) queueScanLag(b *pgx.Batch, sql *statements, job string, st *reconcile.Status, lagSeconds *float64) {
	lagArgs := append([]any{s.lagJobs(job)}, sql.filterArgs...)
	b.Queue(sql.lag, lagArgs...).QueryRow(func(r pgx.Row) error { return r.Scan(&st.Now, &st.Rows, lagSeconds, &st.NewRowsPerHour) })
}

// lagOf turns a lag in seconds into a Duration: never negative (a row created in the future
// has not waited yet), and at most the largest Duration rather than overflowing to a negative
// one. Rows with times no lag can be computed from (infinite, or before 1900) are not in the
// seconds at all: Read makes each an invalid_row finding, and the open finding shows it.
var lagOf = hosttable.LagOf

// RecordFailure remembers that a batch of job failed, for Status and health: a
// reconcile.FailureRecorder, called by RunBatch. The message is cut to 1,000 bytes. It is kept
// apart from the job's cursor row, so that it does not wait for that row's lock: a batch that
// failed because another session held it is recorded all the same.
func (s *Store[L]) RecordFailure(ctx context.Context, job string, cause error) error {
	_, err := s.db.Exec(ctx, s.own.recordFailure, job, failureText(cause))
	if err != nil {
		return s.cfg.Tables.wrap("record failure of job "+job, err)
	}
	s.table.NoteWrite()
	return nil
}

var _ reconcile.FailureRecorder = (*Store[string])(nil)

// failureText is cause's message as a text column keeps it: a server's NUL or invalid bytes in
// it become U+FFFD (they would fail the write, and health would never see the failure), and it
// is cut to 1,000 bytes, on a character boundary.
func failureText(cause error) string { return safetext.Storable(cause.Error(), 1000) }

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
