package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/reconcilekit/reconcile/internal/drain"
)

// BatchRunner runs one batch of a job; *Reconciler is one.
type BatchRunner interface {
	RunBatch(ctx context.Context) (Report, error)
}

// TickBudget bounds one tick: batch after batch while there is work, until either limit is
// reached. Zero fields mean no limit of that kind.
type TickBudget struct {
	MaxRows int
	MaxTime time.Duration
}

// TickReport sums the batches of one tick.
type TickReport struct {
	// Job and Lane are the batches' Report.Job and Report.Lane: Lane names the lane whose
	// steps the tick ran, empty for a sweep's batches. A tick whose first batch failed names
	// them as that batch's Report does.
	Job          string
	Lane         string
	Batches      int
	Scanned      int
	Verdicts     map[Verdict]int
	GatewayCalls int
	NewFindings  int
	NewCommands  int
	// Changed sums the batches' Report.Changed.
	Changed int
	// Wrapped reports that a batch of the tick completed the cycle (Report.Wrapped).
	Wrapped bool
	// RateLimited, Unavailable and Deferred are the last batch's; RetryAfter the longest any
	// batch asked, a failed one included.
	RateLimited bool
	Unavailable bool
	Deferred    bool
	RetryAfter  time.Duration
	// Conflict reports that After is AfterConflict: another reconciler moved the job's cursor
	// during the last batch, or took its work over (a shard's lease), so that batch wrote
	// nothing, and running the job again later is right. It is not an error: two schedulers of
	// one job are a normal, safe configuration.
	Conflict bool
	// After is what follows the tick: what AfterBatch decided about its last batch, or
	// AfterProgress when the budget or the context's deadline ended the tick with work left;
	// when its context was cancelled between batches, AfterStop, or AfterConflict if the
	// cause is an ErrConcurrentRun (a lost shard lease).
	After    After
	Duration time.Duration
}

func (t *TickReport) add(r Report) {
	t.Batches++
	t.Scanned += r.Scanned
	t.GatewayCalls += r.GatewayCalls
	t.NewFindings += r.NewFindings
	t.NewCommands += r.NewCommands
	t.Changed += r.Changed
	for v, n := range r.Verdicts {
		t.Verdicts[v] += n
	}
	t.Wrapped = t.Wrapped || r.Wrapped
	t.RateLimited, t.Unavailable, t.Deferred = r.RateLimited, r.Unavailable, r.Deferred
	t.RetryAfter = max(t.RetryAfter, r.RetryAfter)
}

// name takes the job and lane names of a batch's report, if it has them: a BatchRunner may
// return a zero Report with its error.
func (t *TickReport) name(r Report) {
	if r.Job != "" {
		t.Job, t.Lane = r.Job, r.Lane
	}
}

// RunTick runs batches of b, one after another, while AfterBatch finds that the cycle goes on
// (AfterProgress) and the budget lasts: until the cycle wraps, the external system pushes back
// (a rate limit, a deferred batch) or looks down (an Unavailable batch: running on would walk
// the table two calls a batch), another reconciler holds the cursor (a Conflict, not an
// error), b has nothing to do now (AfterIdle), a batch fails (its error is returned), or ctx
// is done. It does not start a batch that ctx's deadline would cut short, judging by the last
// batch's duration. TickReport.After says what follows. It is what a Runner does on every
// tick, for hosts that schedule ticks themselves (cron, a job queue such as River): call it,
// then act on After, waiting at least RetryAfter.
func RunTick(ctx context.Context, b BatchRunner, budget TickBudget) (TickReport, error) {
	return runTick(ctx, ctx, b, budget)
}

// runTick is RunTick with batches run under batchCtx and the loop stopped by stopCtx, so that
// a graceful stop lets the current batch finish.
func runTick(batchCtx, stopCtx context.Context, b BatchRunner, budget TickBudget) (t TickReport, err error) {
	t = TickReport{Verdicts: map[Verdict]int{}}
	start := time.Now()
	defer func() { t.Duration = time.Since(start) }()
	var last time.Duration
	for {
		if err := stopCtx.Err(); err != nil {
			switch {
			case errors.Is(err, context.DeadlineExceeded):
				// Out of time, with work left: t.After stays the last batch's.
			case errors.Is(context.Cause(stopCtx), ErrConcurrentRun):
				t.After, t.Conflict = AfterConflict, true // another took the work over (a lost lease)
			default:
				t.After = AfterStop
			}
			return t, nil
		}
		if d, ok := batchCtx.Deadline(); ok && last > 0 && time.Until(d) < last {
			return t, nil // the next batch would not finish in time
		}
		batchStart := time.Now()
		rep, err := b.RunBatch(batchCtx)
		last = time.Since(batchStart)
		t.name(rep)
		t.RetryAfter = max(t.RetryAfter, rep.RetryAfter) // a failed batch's rate limit holds too
		switch t.After = AfterBatch(batchCtx, rep, err); t.After {
		case AfterConflict:
			t.Conflict = true
			return t, nil
		case AfterFailure, AfterStop:
			return t, err
		}
		t.add(rep)
		switch {
		case t.After != AfterProgress:
			return t, nil
		case budget.MaxRows > 0 && t.Scanned >= budget.MaxRows:
			return t, nil
		case budget.MaxTime > 0 && time.Since(start) >= budget.MaxTime:
			return t, nil
		}
	}
}

// RunnerJob is one job a Runner schedules.
type RunnerJob struct {
	// Name names the job in logs. Required.
	Name string
	// Batches runs the job's batches: its *Reconciler. Required.
	Batches BatchRunner
	// Interval is the time between ticks while a cycle is under way. Zero means a minute.
	Interval time.Duration
	// Jitter spreads ticks by up to this fraction of Interval, so that jobs started together
	// do not tick together. Zero means 0.1; negative means none.
	Jitter float64
	// Budget bounds a tick. Zero means at most Interval of batches.
	Budget TickBudget
	// IdleAfterWrap is the time to sleep after a cycle completes. Zero means Interval.
	IdleAfterWrap time.Duration
}

// RunnerConfig configures a Runner.
type RunnerConfig struct {
	Jobs []RunnerJob
	// Logger receives a line per failed tick; nil means no logging. Each batch logs through its
	// own Config.Logger.
	Logger *slog.Logger
	// OnTick, if set, is told of every tick of every job when it ends, before the job waits for
	// its next one: for tests and hosts that act when work is done instead of polling. It runs
	// on the job's goroutine, so jobs call it concurrently; its job's next tick waits for it,
	// and so does Stop.
	OnTick func(TickEnd)
	// OnCycle, if set, is told of the ticks that completed their job's cycle
	// (TickEnd.Report.Wrapped), after OnTick, in the same way.
	OnCycle func(TickEnd)
}

// TickEnd is what a Runner tells RunnerConfig.OnTick and OnCycle when a job's tick ends.
type TickEnd struct {
	// Job is the RunnerJob's Name.
	Job string
	// Report sums the tick's batches; Report.Job and Report.Lane name what they ran (the
	// lane, for a Lane's tick), Report.Wrapped reports that the cycle completed, and
	// Report.After is what the Runner acted on.
	Report TickReport
	// Err is the error of the batch that failed and ended the tick (the Runner logs it too); nil
	// otherwise, a lost cursor race (Report.Conflict) included.
	Err error
	// Next is how long the job waits before its next tick: the interval, the idle time after a
	// wrap, a rate limit's RetryAfter or a backoff, jitter included. Zero when the Runner is
	// stopping and the job will not tick again.
	Next time.Duration
}

// Runner runs jobs on intervals in the host's process: each job ticks (RunTick) on its own
// goroutine and then waits, as the tick's After says:
//
//   - AfterProgress (the budget was spent) and AfterIdle: the Interval, or an idle runner's
//     RetryAfter (a sharded job's next cycle not due);
//   - AfterCycle: IdleAfterWrap;
//   - AfterRateLimit: the RetryAfter the external system asked, at least a minute (or the
//     Interval, if shorter);
//   - AfterFailure, AfterOutage and AfterDeferred: a backoff from that minute, doubled per
//     consecutive one up to 32 times, at least RetryAfter, logged (a failure at Error);
//   - AfterConflict (another process runs the job): the Interval, logged at Info;
//   - AfterStop: nothing; the job's loop ends.
//
// No wait is shorter than a batch's RetryAfter. RunnerConfig.OnTick and OnCycle tell the host
// when a tick or a cycle ends.
type Runner struct {
	jobs            []RunnerJob
	logger          *slog.Logger
	onTick, onCycle func(TickEnd)

	mu      sync.Mutex
	started bool
	stop    context.CancelFunc      // ends the loops between batches
	kill    context.CancelCauseFunc // cancels running batches
	wg      sync.WaitGroup
}

// NewRunner checks cfg and returns a Runner.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	if len(cfg.Jobs) == 0 {
		return nil, errors.New("reconcile: runner: no jobs")
	}
	names := map[string]bool{}
	jobs := make([]RunnerJob, len(cfg.Jobs))
	for i, j := range cfg.Jobs {
		switch {
		case j.Name == "":
			return nil, fmt.Errorf("reconcile: runner: job %d has no Name", i)
		case names[j.Name]:
			return nil, fmt.Errorf("reconcile: runner: job %q appears twice", j.Name)
		case j.Batches == nil:
			return nil, fmt.Errorf("reconcile: runner: job %q has no Batches", j.Name)
		case j.Interval < 0 || j.IdleAfterWrap < 0 || j.Budget.MaxRows < 0 || j.Budget.MaxTime < 0 || j.Jitter >= 1:
			return nil, fmt.Errorf("reconcile: runner: job %q: negative durations or budget, or Jitter of 1 or more", j.Name)
		}
		names[j.Name] = true
		if j.Interval == 0 {
			j.Interval = time.Minute
		}
		if j.Jitter == 0 {
			j.Jitter = 0.1
		} else if j.Jitter < 0 {
			j.Jitter = 0
		}
		if j.Budget == (TickBudget{}) {
			j.Budget.MaxTime = j.Interval
		}
		if j.IdleAfterWrap == 0 {
			j.IdleAfterWrap = j.Interval
		}
		jobs[i] = j
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{jobs: jobs, logger: cfg.Logger, onTick: cfg.OnTick, onCycle: cfg.OnCycle}, nil
}

// errRunnerStopped is the cause running batches see when Stop runs out of patience.
var errRunnerStopped = errors.New("reconcile: runner stopped")

// Start starts every job's loop. Cancelling ctx cancels running batches too (nothing of a
// cancelled batch is written); Stop is the graceful way.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return errors.New("reconcile: runner: already started")
	}
	r.started = true
	batchCtx, kill := context.WithCancelCause(ctx)
	stopCtx, stop := context.WithCancel(batchCtx)
	r.stop, r.kill = stop, kill
	for _, j := range r.jobs {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.loop(batchCtx, stopCtx, j)
		}()
	}
	return nil
}

// Stop lets each job finish its current batch and returns when all loops have ended. If ctx
// ends first, running batches are cancelled (they write nothing and are redone next time).
// Before Start it does nothing and returns nil, so that a host's shutdown path need not know
// how far its startup got; a second Stop returns an error.
func (r *Runner) Stop(ctx context.Context) error {
	r.mu.Lock()
	if !r.started {
		r.mu.Unlock()
		return nil
	}
	if r.stop == nil {
		r.mu.Unlock()
		return errors.New("reconcile: runner: already stopped")
	}
	stop, kill := r.stop, r.kill
	r.stop = nil
	r.mu.Unlock()
	stop()
	if !drain.Wait(ctx, &r.wg, kill, errRunnerStopped) {
		// A batch whose gateway or limiter ignores cancellation may outlive Stop.
		return fmt.Errorf("reconcile: runner: stop: batches cancelled: %w", ctx.Err())
	}
	kill(nil)
	return nil
}

// loop ticks one job until stopCtx ends.
func (r *Runner) loop(batchCtx, stopCtx context.Context, j RunnerJob) {
	wait := spread(0, j.Interval, j.Jitter) // stagger the first ticks
	failures := 0
	for {
		t := time.NewTimer(wait)
		select {
		case <-stopCtx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		tick, err := runTick(batchCtx, stopCtx, j.Batches, j.Budget)
		stopping := stopCtx.Err() != nil
		// Retries and backoff start from a minute (or the interval, if shorter), not from the
		// interval: a daily tier must not wait a day after a blip.
		retry := min(j.Interval, time.Minute)
		switch a := tick.After; {
		case stopping || a == AfterStop:
			wait = 0 // an error here is most likely the stop's own cancellation: not logged
		case a == AfterFailure || a == AfterOutage || a == AfterDeferred:
			failures++
			wait = max(spread(backoff(retry, failures), retry, j.Jitter), tick.RetryAfter)
			attrs := []slog.Attr{slog.String("job", j.Name), slog.String("after", a.String()),
				slog.Int("consecutive_failures", failures), slog.Duration("next_try_in", wait)}
			if a == AfterFailure {
				r.logger.LogAttrs(stopCtx, slog.LevelError, "reconcile runner: batch failed",
					append(attrs, slog.String("error", err.Error()))...)
			} else {
				r.logger.LogAttrs(stopCtx, slog.LevelWarn, "reconcile runner: the external system is unavailable or refused the calls; backing off", attrs...)
			}
		case a == AfterConflict:
			// Another process runs this job: not a failure, try again next tick.
			r.logger.LogAttrs(stopCtx, slog.LevelInfo, "reconcile runner: another reconciler moved the cursor; retrying next tick",
				slog.String("job", j.Name))
			failures, wait = 0, max(spread(j.Interval, j.Interval, j.Jitter), tick.RetryAfter)
		case a == AfterRateLimit:
			failures, wait = 0, max(tick.RetryAfter, retry)+spread(0, retry, j.Jitter)
		case a == AfterIdle && tick.RetryAfter > 0:
			failures, wait = 0, tick.RetryAfter+spread(0, retry, j.Jitter)
		case a == AfterCycle:
			failures, wait = 0, max(spread(j.IdleAfterWrap, j.Interval, j.Jitter), tick.RetryAfter)
		default: // AfterProgress, AfterIdle
			failures, wait = 0, max(spread(j.Interval, j.Interval, j.Jitter), tick.RetryAfter)
		}
		r.tickEnded(TickEnd{Job: j.Name, Report: tick, Err: err, Next: wait})
		if stopping {
			return
		}
	}
}

// tickEnded calls the hooks of a tick that ended.
func (r *Runner) tickEnded(e TickEnd) {
	if r.onTick != nil {
		r.onTick(e)
	}
	if r.onCycle != nil && e.Report.Wrapped {
		r.onCycle(e)
	}
}

// backoff doubles base per consecutive failure, up to 32 times base.
func backoff(base time.Duration, failures int) time.Duration {
	return base << min(failures-1, 5)
}

// spread returns d plus a random part of up to jitter·interval.
func spread(d, interval time.Duration, jitter float64) time.Duration {
	if j := time.Duration(jitter * float64(interval)); j > 0 {
		d += rand.N(j)
	}
	return d
}
