package pgshard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/reconcilekit/reconcile"
)

// Tick describes one RunTick.
type Tick struct {
	// Leased reports that a shard was leased; false when none was free (ErrNoShardFree), and
	// then nothing else is set, unless the next cycle is not due yet
	// (Config.MinCycleInterval): then Tick.Deferred is set and Tick.RetryAfter says when it
	// is, so that a scheduler that honours RetryAfter does not run the job before.
	Leased bool
	// Shard is the shard worked on.
	Shard int
	// TookOver reports that the shard's previous lease had expired unreleased: its worker
	// crashed or stalled, and this tick resumed its work.
	TookOver bool
	// Tick sums the batches run on the shard. Tick.Wrapped reports that the shard wrapped.
	Tick reconcile.TickReport
	// CycleCompleted reports that the shard's wrap completed the job's cycle.
	CycleCompleted bool
	// LeaseLost reports that the lease was lost during the tick; the batch under way wrote
	// nothing (Tick.Conflict is set too).
	LeaseLost bool
}

// RunTick leases a free shard of j, runs batches on it as reconcile.RunTick does (until
// it wraps, the external system pushes back, the budget is spent or ctx is done), and releases
// it. cfg is the job's engine configuration; its Source and Sink are set to the lease, and its
// Job must be empty or j's. When no shard is free it returns at once, with Leased false and no
// error; if that is because the next cycle is not due yet, Tick.Deferred and Tick.RetryAfter
// say so. It is one unit of work for a scheduler: a cron tick, a job of a queue such as River.
// Bound the tick (budget.MaxTime) well below Config.MaxHold: past it the lease is given up
// and the batch under way is cancelled.
func RunTick[L, E any](ctx context.Context, j *Job[L], cfg reconcile.Config[L, E], budget reconcile.TickBudget) (Tick, error) {
	var t Tick
	cfg, err := engineConfig(j, cfg)
	if err != nil {
		return t, err
	}
	l, err := j.Acquire(ctx)
	if errors.Is(err, ErrNoShardFree) {
		t.Tick = reconcile.TickReport{Job: j.cfg.Job, Verdicts: map[reconcile.Verdict]int{}}
		var nd *CycleNotDueError
		if errors.As(err, &nd) {
			t.Tick.Deferred, t.Tick.RetryAfter = true, nd.StartsIn
		}
		return t, nil
	}
	if err != nil {
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
	t.Tick, err = reconcile.RunTick(lctx, rec, budget)
	t.CycleCompleted = l.CycleCompleted()
	if err != nil && l.LostErr() != nil && ctx.Err() == nil {
		// Cancelled mid-statement by the lost lease: nothing of the batch was written.
		t.Tick.Conflict, err = true, nil
	}
	// A conflict on a leased shard is always a lost lease: only a newer holder moves its cursor.
	t.LeaseLost = t.Tick.Conflict
	return t, err
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

// release releases l, logging a failure: the lease then simply expires.
func (j *Job[L]) release(ctx context.Context, l *Lease[L]) {
	if err := l.Release(ctx); err != nil {
		j.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "pgshard: releasing a shard failed; it is free again when its lease expires",
			slog.String("job", j.cfg.Job), slog.Int("shard", l.shard), slog.String("error", err.Error()))
	}
}

// Runner is a reconcile.BatchRunner over a sharded job: every RunBatch leases a free
// shard, runs one batch on it and releases it, so that reconcile.RunTick and reconcile.Runner
// drive sharded jobs as they drive unsharded ones. Run one per worker (in a Runner, one
// RunnerJob each); batches of different shards then run side by side, in one process or many.
//
// A shard's wrap is not the job's: RunBatch reports Wrapped only when the wrap completed the
// job's cycle, so a tick goes on with the next shard. When no shard is free it returns an error
// that is ErrNoShardFree and reconcile.ErrConcurrentRun, which RunTick reports as a Conflict
// and a Runner retries at its next tick; but when the next cycle is not due yet
// (Config.MinCycleInterval) it returns no error and a Deferred report whose RetryAfter is
// the time left, which RunTick passes on and a Runner waits out.
//
// Leasing per batch costs two statements a batch; a worker that works through a whole shard at
// a time uses RunTick instead.
type Runner[L, E any] struct {
	job *Job[L]
	cfg reconcile.Config[L, E]
}

var _ reconcile.BatchRunner = (*Runner[string, int])(nil)

// NewRunner checks cfg, the job's engine configuration without Source and Sink, and
// returns a Runner.
func NewRunner[L, E any](j *Job[L], cfg reconcile.Config[L, E]) (*Runner[L, E], error) {
	cfg, err := engineConfig(j, cfg)
	if err != nil {
		return nil, err
	}
	return &Runner[L, E]{job: j, cfg: cfg}, nil
}

// RunBatch leases a free shard, runs one batch on it, and releases it.
func (r *Runner[L, E]) RunBatch(ctx context.Context) (reconcile.Report, error) {
	l, err := r.job.Acquire(ctx)
	if nd := (*CycleNotDueError)(nil); errors.As(err, &nd) {
		return reconcile.Report{Job: r.job.cfg.Job, Verdicts: map[reconcile.Verdict]int{}, Deferred: true, RetryAfter: nd.StartsIn}, nil
	}
	if errors.Is(err, ErrNoShardFree) {
		return reconcile.Report{Job: r.job.cfg.Job}, fmt.Errorf("%w: %w", ErrNoShardFree, reconcile.ErrConcurrentRun)
	}
	if err != nil {
		return reconcile.Report{Job: r.job.cfg.Job}, err
	}
	defer r.job.release(ctx, l)
	cfg := r.cfg
	cfg.Source, cfg.Sink = l, l
	rec, err := reconcile.New(cfg)
	if err != nil {
		return reconcile.Report{Job: r.job.cfg.Job}, err
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
