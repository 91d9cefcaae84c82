package pgshard

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/hosttable"
)

// ShardStatus is a sharded job's monitoring figures: the job as a whole, and each shard.
type ShardStatus struct {
	// Status is the job as a whole, as Store.Status reads it: lag over all its rows (the
	// slowest shard's lag), the job's completed cycles (each one every shard wrapped), open
	// findings and the last failure. LastBatchAt and the last batch's counts are those of the
	// most recent batch of any shard.
	reconcile.Status
	// Shards lists the shards in order.
	Shards []ShardInfo
	// Slowest is the index in Shards of the slowest shard: among the shards still to wrap in
	// the current cycle, the one that has gone longest without committing a batch; if all have
	// wrapped, the one with the largest lag. -1 if the job has no shards yet.
	Slowest int
}

// ShardInfo describes one shard.
type ShardInfo struct {
	Shard int
	// Lower and Upper bound the first key column, as JSON arrays of one value: Lower
	// inclusive, Upper exclusive; empty means open.
	Lower, Upper string
	// Position is the cursor within the shard (the key of the last row read), empty at the
	// start of a cycle; Version counts its advances.
	Position string
	Version  int64
	// Wrapped reports that the shard has wrapped in the current cycle and waits for the others.
	Wrapped bool
	// CycleStartedAt is when the shard's current cycle began, LastWrappedAt when it last
	// wrapped (zero if never), LastBatchAt when it last committed rows (zero if never).
	CycleStartedAt, LastWrappedAt, LastBatchAt time.Time
	LastBatchScanned                           int
	LastBatchUnverifiable                      int
	// ScannedThisCycle counts the rows its batches read in the current cycle.
	ScannedThisCycle int64
	// Rows and Lag cover the rows now in the shard's range.
	Rows int64
	Lag  time.Duration
	// Leased reports an unexpired lease, held by LeaseOwner until LeaseUntil.
	Leased     bool
	LeaseOwner string
	LeaseUntil time.Time
	// Leases counts claims of the shard; Takeovers those of a lease that expired unreleased
	// (a crashed or stalled worker).
	Leases, Takeovers int64
}

// Progress is the last time the shard committed a batch, or started its cycle if it has not.
func (s ShardInfo) Progress() time.Time {
	if s.LastBatchAt.After(s.CycleStartedAt) {
		return s.LastBatchAt
	}
	return s.CycleStartedAt
}

// Status reads the job's status as a reconcile.StatusReader: ShardStatus's Status. job must be
// the sharded job's name.
func (j *Job[L]) Status(ctx context.Context, job string) (reconcile.Status, error) {
	if job != j.cfg.Job {
		return reconcile.Status{}, fmt.Errorf("pgshard: job %s asked for the status of job %s", j.cfg.Job, job)
	}
	st, err := j.ShardStatus(ctx)
	return st.Status, err
}

var (
	_ reconcile.StatusReader = (*Job[string])(nil)
	_ reconcile.WriteCounter = (*Job[string])(nil)
)

// Writes counts the writes made through the job's store (a reconcile.WriteCounter): its
// leases' commits, and every write Store.Writes counts. A Monitor keeping the job's status
// drops it when they move.
func (j *Job[L]) Writes() uint64 { return j.h.Writes() }

// ShardStatus reads the job's status and every shard's. Like Store.Status it scans the host
// table (twice: once for the job, once per shard), so read it every few minutes, not on every
// scrape.
func (j *Job[L]) ShardStatus(ctx context.Context) (ShardStatus, error) {
	out := ShardStatus{Slowest: -1}
	var err error
	if out.Status, err = j.store.Status(ctx, j.cfg.Job); err != nil {
		return out, err
	}
	st, err := j.statements(ctx)
	if err != nil {
		return out, err
	}
	b := &pgx.Batch{}
	b.Queue(j.sql.shards, j.cfg.Job).Query(func(rows pgx.Rows) error {
		var s ShardInfo
		var lowerValue string
		var wrapped, lastBatch, leaseUntil *time.Time
		var leased *bool
		_, err := pgx.ForEachRow(rows, []any{&s.Shard, &s.Lower, &s.Upper, &lowerValue, &s.Position, &s.Version, &s.Wrapped,
			&s.CycleStartedAt, &wrapped, &lastBatch, &s.LastBatchScanned, &s.LastBatchUnverifiable, &s.ScannedThisCycle,
			&s.LeaseOwner, &leased, &leaseUntil, &s.Leases, &s.Takeovers}, func() error {
			s.LastWrappedAt, s.LastBatchAt, s.LeaseUntil = derefTime(wrapped), derefTime(lastBatch), derefTime(leaseUntil)
			s.Leased = leased != nil && *leased
			out.Shards = append(out.Shards, s)
			return nil
		})
		return err
	})
	lags := map[int]struct {
		rows int64
		lag  float64
	}{}
	b.Queue(st.lag.SQL, st.lag.Args(append([]string{j.cfg.Job}, j.store.Config().LagJobs...), j.cfg.Job)...).Query(func(rows pgx.Rows) error {
		var shard int
		var n int64
		var lag float64
		_, err := pgx.ForEachRow(rows, []any{&shard, &n, &lag}, func() error {
			lags[shard] = struct {
				rows int64
				lag  float64
			}{n, lag}
			return nil
		})
		return err
	})
	if err := j.h.DB().SendBatch(ctx, b).Close(); err != nil {
		return out, fmt.Errorf("pgshard: status of job %s: %w", j.cfg.Job, err)
	}
	for i := range out.Shards {
		s := &out.Shards[i]
		if l, ok := lags[s.Shard]; ok {
			s.Rows, s.Lag = l.rows, hosttable.LagOf(l.lag)
		}
		if s.LastBatchAt.After(out.LastBatchAt) {
			out.LastBatchAt, out.LastBatchScanned, out.LastBatchUnverifiable = s.LastBatchAt, s.LastBatchScanned, s.LastBatchUnverifiable
		}
		if out.Slowest < 0 || slower(*s, out.Shards[out.Slowest]) {
			out.Slowest = i
		}
	}
	return out, nil
}

// slower reports whether a is behind b: a shard still to wrap is behind one that wrapped; among
// those still to wrap, the one with the older progress; among wrapped ones, the larger lag.
func slower(a, b ShardInfo) bool {
	switch {
	case a.Wrapped != b.Wrapped:
		return !a.Wrapped
	case !a.Wrapped && !a.Progress().Equal(b.Progress()):
		return a.Progress().Before(b.Progress())
	default:
		return a.Lag > b.Lag
	}
}

// Health reads the job's status and judges it against p, as reconcile.EvaluateHealth does, with
// one more check, "slowest_shard": the slowest shard must have committed a batch (or started
// its cycle) within p.MaxSinceLastBatch, and its lag must be within p.LagSLO (both with their
// defaults, p.WithDefaults()). It names the shard, so that a
// shard held by a hung worker, or one much larger than the others, is found.
func (j *Job[L]) Health(ctx context.Context, p reconcile.HealthPolicy) (reconcile.Health, ShardStatus, error) {
	st, err := j.ShardStatus(ctx)
	if err != nil {
		return reconcile.Health{}, st, err
	}
	h := reconcile.EvaluateHealth(st.Status, p)
	if st.Slowest < 0 {
		return h, st, nil
	}
	pd := p.WithDefaults() // the limits EvaluateHealth judged by
	slo, stall := pd.LagSLO, pd.MaxSinceLastBatch
	s := st.Shards[st.Slowest]
	since := st.Now.Sub(s.Progress())
	round := func(d time.Duration) string { return d.Round(time.Second).String() }
	lease := "not leased"
	if s.Leased {
		lease = "leased by " + s.LeaseOwner
	}
	c := reconcile.Check{Name: "slowest_shard", OK: s.Lag <= slo,
		Value: fmt.Sprintf("shard %d of %d: lag %s, last batch %s ago, %d rows read this cycle, %s",
			s.Shard, len(st.Shards), round(s.Lag), round(since), s.ScannedThisCycle, lease),
		Limit: fmt.Sprintf("lag %s, a batch every %s", round(slo), round(stall))}
	switch {
	case !s.Wrapped && stall > 0 && since > stall:
		c.OK = false
		c.Reason = fmt.Sprintf("slowest_shard: shard %d has committed no batch for %s (%s); its worker may hang, or no worker runs",
			s.Shard, round(since), lease)
	case !c.OK:
		c.Reason = fmt.Sprintf("slowest_shard: shard %d has a row unverified for %s, over the SLO of %s", s.Shard, round(s.Lag), round(slo))
	}
	h.Checks = append(h.Checks, c)
	h.OK = h.OK && c.OK
	return h, st, nil
}
