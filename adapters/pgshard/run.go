package pgshard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/reconcilekit/reconcile"
)

// Tick describes one RunShard.
type Tick struct {
	// Leased reports that a shard was leased; false when none was free (ErrNoShardFree): then
	// Tick says only that the worker had nothing to do (Deferred, After AfterIdle), and if the
	// next cycle is not due yet (Config.MinCycleInterval), RetryAfter says when it is, so that
	// a scheduler that honours RetryAfter does not run the job before.
	Leased bool
	// Shard is the shard worked on.
	Shard int
	// TookOver reports that the shard's previous lease had expired unreleased: its worker
	// crashed or stalled, and this tick resumed its work.
	TookOver bool
	// Tick sums the batches run on the shard. Tick.Wrapped reports, as everywhere, that the
	// job's cycle completed (the same as CycleCompleted); Tick.After is what follows for the
	// job: AfterProgress when the shard wrapped but other shards are still to do.
	Tick reconcile.TickReport
	// ShardWrapped reports that the shard wrapped: every row of it was asked this cycle.
	ShardWrapped bool
	// CycleCompleted reports that the shard's wrap completed the job's cycle.
	CycleCompleted bool
	// LeaseLost reports that the lease was lost during the tick; a batch under way wrote
	// nothing (Tick.Conflict is set too).
	LeaseLost bool
}

// RunShard leases a free shard of j, runs batches on it as reconcile.RunTick does (until it
// wraps, the external system pushes back, the budget is spent or ctx is done), and releases
// it. cfg is the job's engine configuration; its Source and Sink are set to the lease, and its
// Job must be empty or j's. When no shard is free it returns at once, with Leased false, no
// error and an idle Tick (see Tick.Leased). It is one unit of work for a scheduler: a cron
// tick, a job of a queue such as River; act on Tick.Tick.After. Bound the tick
// (budget.MaxTime) well below Config.MaxHold: past it the lease is given up and the batch
// under way is cancelled.
func RunShard[L, E any](ctx context.Context, j *Job[L], cfg reconcile.Config[L, E], budget reconcile.TickBudget) (Tick, error) {
	var t Tick
	cfg, err := engineConfig(j, cfg)
	if err != nil {
		return t, err
	}
	l, err := j.Acquire(ctx)
	if errors.Is(err, ErrNoShardFree) {
		rep := idle(j.cfg.Job, err)
		t.Tick = reconcile.TickReport{Job: rep.Job, Verdicts: rep.Verdicts, Deferred: true, RetryAfter: rep.RetryAfter,
			After: reconcile.AfterBatch(ctx, rep, nil)}
		return t, nil
	}
	if err != nil {
		j.recordFailure(ctx, err)
		return t, err
	}
	t.Leased, t.Shard, t.TookOver = true, l.Shard(), l.takeover
	defer j.release(ctx, l)
	cfg.Source, cfg.Sink = l, l
	rec, err := reconcile.New(cfg)
	if err != nil {
		return t, err
	}
	lctx, cancel := l.Context(ctx)
	defer cancel()
	// A lost lease cancels lctx with ErrLeaseLost as its cause, which reconcile.RunTick
	// reports as a Conflict: only a newer holder moves the shard's cursor.
	t.Tick, err = reconcile.RunTick(lctx, rec, budget)
	if err != nil && l.LostErr() != nil && ctx.Err() == nil {
		// Failed as the lease was lost, before its context said so: nothing of the batch was
		// written.
		t.Tick.Conflict, t.Tick.After, err = true, reconcile.AfterConflict, nil
	}
	t.CycleCompleted = l.CycleCompleted()
	t.ShardWrapped, t.Tick.Wrapped = t.Tick.Wrapped, t.CycleCompleted
	if t.Tick.After == reconcile.AfterCycle && !t.CycleCompleted {
		t.Tick.After = reconcile.AfterProgress // the job's cycle goes on in other shards
	}
	t.LeaseLost = t.Tick.Conflict
	return t, err
}

// idle is the report of a worker that found no shard free (err, an ErrNoShardFree): Deferred,
// with the time until the next cycle if that is why.
func idle(job string, err error) reconcile.Report {
	rep := reconcile.Report{Job: job, Verdicts: map[reconcile.Verdict]int{}, Deferred: true}
	if nd := (*CycleNotDueError)(nil); errors.As(err, &nd) {
		rep.RetryAfter = nd.StartsIn
	}
	return rep
}

// engineConfig checks that cfg is for j's job, without Source and Sink (each lease is both),
// and fills in the job's name.
func engineConfig[L, E any](j *Job[L], cfg reconcile.Config[L, E]) (reconcile.Config[L, E], error) {
	switch {
	case cfg.Job == "":
		cfg.Job = j.cfg.Job
	case cfg.Job != j.cfg.Job:
		return cfg, fmt.Errorf("pgshard: job %s: engine config is for job %s", j.cfg.Job, cfg.Job)
	}
	if cfg.Source != nil || cfg.Sink != nil {
		return cfg, fmt.Errorf("pgshard: job %s: leave the engine config's Source and Sink nil: each shard lease is both", j.cfg.Job)
	}
	// Check the rest now rather than at the first lease.
	probe := cfg
	probe.Source, probe.Sink = &Lease[L]{}, &Lease[L]{}
	if _, err := reconcile.New(probe); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// recordFailure records err, which ended a worker's tick before it leased a shard, as a failed
// batch of the job when reconcile.AfterBatch finds it one (a missed deadline included: a worker
// held up by another session's lock on the job's cursor row has failed, as a batch so held up
// has), so that health's last_attempt sees it; a stop records nothing. A batch run under a
// lease records its own failures.
func (j *Job[L]) recordFailure(ctx context.Context, err error) {
	if reconcile.AfterBatch(ctx, reconcile.Report{}, err) != reconcile.AfterFailure {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if rerr := j.store.RecordFailure(rctx, j.cfg.Job, err); rerr != nil {
		j.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "pgshard: recording a failed tick failed",
			slog.String("job", j.cfg.Job), slog.String("error", rerr.Error()))
	}
}

// recordTimeout bounds recording a failure, which runs after the tick's context has ended.
const recordTimeout = 5 * time.Second

// release releases l, logging a failure: the lease then simply expires.
func (j *Job[L]) release(ctx context.Context, l *Lease[L]) {
	if err := l.Release(ctx); err != nil {
		j.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "pgshard: releasing a shard failed; it is free again when its lease expires",
			slog.String("job", j.cfg.Job), slog.Int("shard", l.shard), slog.String("error", err.Error()))
	}
}

// Sweep is a reconcile.BatchRunner over a sharded job: every RunBatch leases a free shard,
// runs one batch on it and releases it, so that reconcile.RunTick and reconcile.Runner drive
// sharded jobs as they drive unsharded ones. Run one per worker (in a reconcile.Runner, one
// RunnerJob each); batches of different shards then run side by side, in one process or many.
//
// A shard's wrap is not the job's: RunBatch reports Wrapped only when the wrap completed the
// job's cycle, so a tick goes on with the next shard. When no shard is free it returns no
// error and a Deferred report, with the time left as RetryAfter if the next cycle is not due
// yet (Config.MinCycleInterval): reconcile.AfterBatch finds it AfterIdle, which
// reconcile.RunTick passes on and a reconcile.Runner waits out (the interval, or RetryAfter). It is not a lost race: that
// is a lease lost during the batch (ErrLeaseLost, a reconcile.ErrConcurrentRun).
//
// Leasing per batch costs two statements a batch; a worker that works through a whole shard at
// a time uses RunShard instead.
type Sweep[L, E any] struct {
	job *Job[L]
	cfg reconcile.Config[L, E]
}

var _ reconcile.BatchRunner = (*Sweep[string, int])(nil)

// NewSweep checks cfg, the job's engine configuration without Source and Sink, and returns a
// Sweep.
func NewSweep[L, E any](j *Job[L], cfg reconcile.Config[L, E]) (*Sweep[L, E], error) {
	cfg, err := engineConfig(j, cfg)
	if err != nil {
		return nil, err
	}
	return &Sweep[L, E]{job: j, cfg: cfg}, nil
}

// RunBatch leases a free shard, runs one batch on it, and releases it.
func (s *Sweep[L, E]) RunBatch(ctx context.Context) (reconcile.Report, error) {
	l, err := s.job.Acquire(ctx)
	if errors.Is(err, ErrNoShardFree) {
		return idle(s.job.cfg.Job, err), nil
	}
	if err != nil {
		s.job.recordFailure(ctx, err)
		return reconcile.Report{Job: s.job.cfg.Job}, err
	}
	defer s.job.release(ctx, l)
	cfg := s.cfg
	cfg.Source, cfg.Sink = l, l
	rec, err := reconcile.New(cfg)
	if err != nil {
		return reconcile.Report{Job: s.job.cfg.Job}, err
	}
	lctx, cancel := l.Context(ctx)
	defer cancel()
	rep, err := rec.RunBatch(lctx)
	if err != nil && l.LostErr() != nil && ctx.Err() == nil {
		return rep, fmt.Errorf("%w: %w", l.LostErr(), err)
	}
	if rep.Wrapped && !l.CycleCompleted() {
		rep.Wrapped = false
	}
	return rep, err
}
