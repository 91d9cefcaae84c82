package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Status is what monitoring needs of one job, read in one round trip. Times are the
// database's.
type Status struct {
	Job string
	// Now is the database clock when the status was read.
	Now time.Time
	// Lag is the primary SLO: the longest time any row has gone without being verified,
	// max(now - coalesce(last verified, created_at)) over the host table. Unverifiable rows keep
	// their old time, so an outage makes it grow.
	Lag time.Duration
	// Rows is the number of rows in the host table.
	Rows int64
	// CycleStartedAt is when the current cycle began; zero before the job's first batch.
	CycleStartedAt time.Time
	// LastCycleCompletedAt is zero until a cycle completes.
	LastCycleCompletedAt time.Time
	CyclesCompleted      int64
	// LastBatchAt, LastBatchScanned and LastBatchUnverifiable describe the last non-empty batch.
	LastBatchAt           time.Time
	LastBatchScanned      int
	LastBatchUnverifiable int
	// OpenFindings counts open findings by kind.
	OpenFindings map[string]int
	// OldestOpenFinding is the detection time of the oldest open finding; zero if none.
	OldestOpenFinding time.Time
	// StaleFindings counts the findings open longer than Config.StaleAfter: repairs that never
	// applied and reviews nobody did.
	StaleFindings int
}

// CycleAge is how long the current cycle has been running.
func (s Status) CycleAge() time.Duration {
	if s.CycleStartedAt.IsZero() {
		return 0
	}
	return s.Now.Sub(s.CycleStartedAt)
}

// SinceLastCycle is the time since the last completed cycle, and false if none has completed.
func (s Status) SinceLastCycle() (time.Duration, bool) {
	if s.LastCycleCompletedAt.IsZero() {
		return 0, false
	}
	return s.Now.Sub(s.LastCycleCompletedAt), true
}

// UnverifiableRatio is the share of the last batch's rows that could not be checked.
func (s Status) UnverifiableRatio() float64 {
	if s.LastBatchScanned == 0 {
		return 0
	}
	return float64(s.LastBatchUnverifiable) / float64(s.LastBatchScanned)
}

// Status reads the job's monitoring figures.
func (s *Store) Status(ctx context.Context, job string) (Status, error) {
	sql, err := s.statements(ctx)
	if err != nil {
		return Status{}, err
	}
	st := Status{Job: job, OpenFindings: map[string]int{}}
	b := &pgx.Batch{}
	var lagSeconds float64
	b.Queue(sql.lag, job).QueryRow(func(r pgx.Row) error { return r.Scan(&st.Now, &st.Rows, &lagSeconds) })
	var started, completed, lastBatch *time.Time
	b.Queue(`SELECT cycle_started_at, last_cycle_completed_at, cycles_completed, last_batch_at,
		last_batch_scanned, last_batch_unverifiable FROM `+s.cfg.Tables.table("cursors")+` WHERE job = $1`, job).
		QueryRow(func(r pgx.Row) error {
			err := r.Scan(&started, &completed, &st.CyclesCompleted, &lastBatch, &st.LastBatchScanned, &st.LastBatchUnverifiable)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		})
	b.Queue(`SELECT kind, count(*), min(detected_at), count(*) FILTER (WHERE detected_at < now() - $2::interval)
		FROM `+s.cfg.Tables.table("findings")+` WHERE job = $1 AND resolved_at IS NULL GROUP BY kind`, job, s.cfg.StaleAfter).Query(func(rows pgx.Rows) error {
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
		return Status{}, fmt.Errorf("pgstore: status of job %s: %w", job, err)
	}
	st.Lag = time.Duration(lagSeconds * float64(time.Second))
	for _, p := range []struct {
		dst *time.Time
		src *time.Time
	}{{&st.CycleStartedAt, started}, {&st.LastCycleCompletedAt, completed}, {&st.LastBatchAt, lastBatch}} {
		if p.src != nil {
			*p.dst = *p.src
		}
	}
	return st, nil
}
