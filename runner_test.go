package reconcile_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/internal/leaktest"

	"github.com/reconcilekit/reconcile"
)

// scripted is a BatchRunner answering from a function of the call number (1-based).
type scripted struct {
	calls atomic.Int64
	next  func(ctx context.Context, n int) (reconcile.Report, error)
}

func (s *scripted) RunBatch(ctx context.Context) (reconcile.Report, error) {
	return s.next(ctx, int(s.calls.Add(1)))
}

func batchOf(rows int) reconcile.Report {
	return reconcile.Report{Job: job, Scanned: rows, Verdicts: map[reconcile.Verdict]int{reconcile.InSync: rows}}
}

func TestRunTickStopsWhereItShould(t *testing.T) {
	tests := []struct {
		name        string
		budget      reconcile.TickBudget
		next        func(ctx context.Context, n int) (reconcile.Report, error)
		wantBatches int
		wantErr     bool
	}{
		{"at the wrap", reconcile.TickBudget{}, func(_ context.Context, n int) (reconcile.Report, error) {
			r := batchOf(10)
			r.Wrapped = n == 3
			return r, nil
		}, 3, false},
		{"when the row budget is spent", reconcile.TickBudget{MaxRows: 25}, func(context.Context, int) (reconcile.Report, error) {
			return batchOf(10), nil
		}, 3, false},
		{"when the external system pushes back", reconcile.TickBudget{}, func(_ context.Context, n int) (reconcile.Report, error) {
			r := batchOf(10)
			r.RateLimited, r.RetryAfter = n == 2, time.Second
			return r, nil
		}, 2, false},
		{"when the external system is unavailable", reconcile.TickBudget{}, func(_ context.Context, n int) (reconcile.Report, error) {
			r := batchOf(2)
			r.Unavailable = n == 2
			return r, nil
		}, 2, false},
		{"when a batch is deferred", reconcile.TickBudget{}, func(_ context.Context, n int) (reconcile.Report, error) {
			return reconcile.Report{Deferred: n == 1, RateLimited: true}, nil
		}, 1, false},
		{"at the first error", reconcile.TickBudget{}, func(_ context.Context, n int) (reconcile.Report, error) {
			if n == 2 {
				return reconcile.Report{}, errors.New("database gone")
			}
			return batchOf(10), nil
		}, 2, true},
		{"when the time budget is spent", reconcile.TickBudget{MaxTime: time.Nanosecond}, func(context.Context, int) (reconcile.Report, error) {
			return batchOf(1), nil
		}, 1, false},
		{"when another reconciler holds the cursor, without an error", reconcile.TickBudget{}, func(_ context.Context, n int) (reconcile.Report, error) {
			if n == 2 {
				return reconcile.Report{}, reconcile.ErrConcurrentRun
			}
			return batchOf(10), nil
		}, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &scripted{next: tt.next}
			tick, err := reconcile.RunTick(context.Background(), b, tt.budget)
			failedLast := tt.wantErr || tick.Conflict
			if (err != nil) != tt.wantErr || int(b.calls.Load()) != tt.wantBatches || tick.Batches != int(b.calls.Load())-map[bool]int{true: 1, false: 0}[failedLast] {
				t.Fatalf("tick %+v, err %v, %d batches; want %d batches, error %v", tick, err, b.calls.Load(), tt.wantBatches, tt.wantErr)
			}
		})
	}
}

// ticks records what a Runner's hooks were told, and signals when a condition on it holds.
type ticks struct {
	mu     sync.Mutex
	ticks  []reconcile.TickEnd
	cycles map[string]int
	bad    []reconcile.TickEnd // told to OnCycle without a completed cycle, or before OnTick
	until  func(*ticks) bool
	done   chan struct{}
	once   sync.Once
}

func newTicks(until func(*ticks) bool) *ticks {
	return &ticks{cycles: map[string]int{}, until: until, done: make(chan struct{})}
}

func (k *ticks) onTick(e reconcile.TickEnd) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ticks = append(k.ticks, e)
	k.check()
}

func (k *ticks) onCycle(e reconcile.TickEnd) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !e.Report.Wrapped || !k.seenLast(e.Job) {
		k.bad = append(k.bad, e)
	}
	k.cycles[e.Job]++
	k.check()
}

// seenLast reports that the job's last tick told to OnTick completed the cycle.
func (k *ticks) seenLast(job string) bool {
	for i := len(k.ticks) - 1; i >= 0; i-- {
		if k.ticks[i].Job == job {
			return k.ticks[i].Report.Wrapped
		}
	}
	return false
}

func (k *ticks) check() {
	if k.until != nil && k.until(k) {
		k.once.Do(func() { close(k.done) })
	}
}

// of returns the ticks of one job, in order.
func (k *ticks) of(job string) []reconcile.TickEnd {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []reconcile.TickEnd
	for _, e := range k.ticks {
		if e.Job == job {
			out = append(out, e)
		}
	}
	return out
}

func countJob(es []reconcile.TickEnd, job string) (n int) {
	for _, e := range es {
		if e.Job == job {
			n++
		}
	}
	return n
}

// wait returns when the condition holds; the guard only turns a hang into a failure.
func (k *ticks) wait(t *testing.T) {
	t.Helper()
	select {
	case <-k.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the runner's hooks never reported what the test waits for")
	}
}

// runUntil starts a Runner of cfg, whose hooks report to k, waits until k's condition holds,
// and stops it.
func (k *ticks) runUntil(t *testing.T, cfg reconcile.RunnerConfig) {
	t.Helper()
	r, err := reconcile.NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	k.wait(t)
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestARunnerCompletesCyclesOfSeveralJobsAndStopsCleanly(t *testing.T) {
	defer leaktest.VerifyNone(t)
	a, b := newStore(newClock(), 30, always("paid")), newStore(newClock(), 45, always("paid"))
	gw := newFakeGateway(0, func(context.Context, int, string) (string, error) { return "succeeded", nil })
	var jobs []reconcile.RunnerJob
	for name, s := range map[string]*store{"a": a, "b": b} {
		cfg := config(s, gw)
		cfg.BatchSize = 10
		rec, err := reconcile.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, reconcile.RunnerJob{Name: name, Batches: rec, Interval: 5 * time.Millisecond})
	}
	k := newTicks(func(k *ticks) bool { return k.cycles["a"] >= 2 && k.cycles["b"] >= 2 })
	r, err := reconcile.NewRunner(reconcile.RunnerConfig{Jobs: jobs, OnTick: k.onTick, OnCycle: k.onCycle})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	k.wait(t)
	// The hooks ran after the commits: the stores already show what they reported.
	if a.Cursor(job).CyclesCompleted < 2 || b.Cursor(job).CyclesCompleted < 2 {
		t.Fatalf("OnCycle reported 2 cycles each; the stores completed a %d, b %d", a.Cursor(job).CyclesCompleted, b.Cursor(job).CyclesCompleted)
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(context.Background()); err == nil {
		t.Fatal("a second Stop succeeded")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.bad) > 0 {
		t.Fatalf("OnCycle told of ticks that did not complete a cycle, or before OnTick: %+v", k.bad)
	}
	for _, name := range []string{"a", "b"} {
		var wrapped, n int
		for _, e := range k.ticks {
			if e.Job != name {
				continue
			}
			n++
			// Only a tick that ends while the runner stops has nothing to wait for.
			if e.Err != nil || (e.Next == 0 && n < countJob(k.ticks, name)) {
				t.Errorf("job %s: tick %d: %+v", name, n, e)
			}
			if e.Report.Wrapped {
				wrapped++
			}
		}
		if wrapped != k.cycles[name] {
			t.Errorf("job %s: %d ticks wrapped, OnCycle told of %d", name, wrapped, k.cycles[name])
		}
	}
}

func TestStopBeforeStartIsANoOp(t *testing.T) {
	defer leaktest.VerifyNone(t)
	s := newStore(newClock(), 5, always("paid"))
	rec, err := reconcile.New(config(s, newFakeGateway(0, func(context.Context, int, string) (string, error) { return "succeeded", nil })))
	if err != nil {
		t.Fatal(err)
	}
	k := newTicks(func(k *ticks) bool { return k.cycles["sweep"] >= 1 })
	r, err := reconcile.NewRunner(reconcile.RunnerConfig{OnCycle: k.onCycle, OnTick: k.onTick,
		Jobs: []reconcile.RunnerJob{{Name: "sweep", Batches: rec, Interval: time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatalf("Stop before Start = %v; want nil", err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatalf("Start after an early Stop = %v", err)
	}
	k.wait(t)
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestStopLetsTheCurrentBatchFinish(t *testing.T) {
	defer leaktest.VerifyNone(t)
	s := newStore(newClock(), 5, always("paid"))
	release := make(chan struct{})
	asked := make(chan struct{}, 10)
	gw := newFakeGateway(0, func(ctx context.Context, _ int, _ string) (string, error) {
		asked <- struct{}{}
		<-release
		return "succeeded", nil
	})
	rec, err := reconcile.New(config(s, gw))
	if err != nil {
		t.Fatal(err)
	}
	k := newTicks(nil)
	r, err := reconcile.NewRunner(reconcile.RunnerConfig{OnTick: k.onTick, Jobs: []reconcile.RunnerJob{{Name: "sweep", Batches: rec, Interval: time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-asked // a batch is under way
	stopped := make(chan error)
	go func() { stopped <- r.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a batch was running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if cur := s.Cursor(job); cur.Version != 1 {
		t.Fatalf("cursor %+v: the drained batch was not committed", cur)
	}
	if ts := k.of("sweep"); len(ts) != 1 || ts[0].Err != nil || ts[0].Report.Batches != 1 || ts[0].Report.Scanned != 5 || ts[0].Next != 0 {
		t.Fatalf("ticks %+v; want the drained tick reported once, with nothing to wait for", ts)
	}
}

func TestCancellingTheRunnersContextCancelsTheRunningBatch(t *testing.T) {
	defer leaktest.VerifyNone(t)
	s := newStore(newClock(), 5, always("paid"))
	asked := make(chan struct{}, 10)
	gw := newFakeGateway(time.Hour, func(context.Context, int, string) (string, error) {
		asked <- struct{}{}
		return "succeeded", nil
	})
	rec, err := reconcile.New(config(s, gw))
	if err != nil {
		t.Fatal(err)
	}
	k := newTicks(nil)
	r, err := reconcile.NewRunner(reconcile.RunnerConfig{OnTick: k.onTick, Jobs: []reconcile.RunnerJob{{Name: "sweep", Batches: rec, Interval: time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	<-asked
	cancel()
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer stopCancel()
	if err := r.Stop(stopCtx); err != nil {
		t.Fatalf("Stop after cancel: %v; the loops should already have ended", err)
	}
	if cur := s.Cursor(job); cur.Version != 0 {
		t.Fatalf("cursor %+v: a cancelled batch wrote", cur)
	}
	if ts := k.of("sweep"); len(ts) != 1 || !errors.Is(ts[0].Err, context.Canceled) || ts[0].Next != 0 {
		t.Fatalf("ticks %+v; want the cancelled tick reported with its error", ts)
	}
}

// levels records the levels of log records.
type levels struct {
	mu   sync.Mutex
	seen map[slog.Level]int
}

func (l *levels) Enabled(context.Context, slog.Level) bool { return true }
func (l *levels) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[r.Level]++
	return nil
}
func (l *levels) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *levels) WithGroup(string) slog.Handler      { return l }
func (l *levels) count(lv slog.Level) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[lv]
}

func TestALostCursorRaceIsNotAnErrorAndFailuresBackOff(t *testing.T) {
	defer leaktest.VerifyNone(t)
	race := &scripted{next: func(context.Context, int) (reconcile.Report, error) {
		return reconcile.Report{}, reconcile.ErrConcurrentRun
	}}
	broken := &scripted{next: func(context.Context, int) (reconcile.Report, error) {
		return reconcile.Report{}, errors.New("database gone")
	}}
	lv := &levels{seen: map[slog.Level]int{}}
	const interval = time.Millisecond
	// Failures back off from the interval, doubling up to 32 times it; a lost race is retried
	// every interval. Without jitter the waits are exact.
	wantBroken := []time.Duration{1, 2, 4, 8, 16, 32, 32}
	k := newTicks(func(k *ticks) bool {
		return countJob(k.ticks, "broken") >= len(wantBroken) && countJob(k.ticks, "race") >= 10
	})
	k.runUntil(t, reconcile.RunnerConfig{Logger: slog.New(lv), OnTick: k.onTick, Jobs: []reconcile.RunnerJob{
		{Name: "race", Batches: race, Interval: interval, Jitter: -1},
		{Name: "broken", Batches: broken, Interval: interval, Jitter: -1},
	}})
	// A tick that ends while the runner stops (Next zero) is neither logged nor backed off.
	logged := map[string]int{}
	for i, e := range k.of("broken") {
		if e.Next == 0 {
			continue
		}
		logged["broken"]++
		if e.Err == nil || e.Report.Conflict {
			t.Errorf("broken tick %d: %+v; want its error", i+1, e)
		}
		if i < len(wantBroken) && e.Next != wantBroken[i]*interval {
			t.Errorf("broken tick %d waits %v; want %v: failures must back off", i+1, e.Next, wantBroken[i]*interval)
		}
	}
	for i, e := range k.of("race") {
		if e.Next == 0 {
			continue
		}
		logged["race"]++
		if e.Err != nil || !e.Report.Conflict || e.Next != interval {
			t.Errorf("race tick %d: %+v; a lost race is not an error, and is retried after the interval", i+1, e)
		}
	}
	if lv.count(slog.LevelInfo) != logged["race"] || lv.count(slog.LevelError) != logged["broken"] {
		t.Fatalf("log levels %v for ticks %v; want the races at info and only the broken job's failures as errors", lv.seen, logged)
	}
}

func TestNewRunnerRejectsBadJobs(t *testing.T) {
	b := &scripted{next: func(context.Context, int) (reconcile.Report, error) { return reconcile.Report{}, nil }}
	for _, cfg := range []reconcile.RunnerConfig{
		{},
		{Jobs: []reconcile.RunnerJob{{Batches: b}}},
		{Jobs: []reconcile.RunnerJob{{Name: "a"}}},
		{Jobs: []reconcile.RunnerJob{{Name: "a", Batches: b}, {Name: "a", Batches: b}}},
		{Jobs: []reconcile.RunnerJob{{Name: "a", Batches: b, Interval: -time.Second}}},
		{Jobs: []reconcile.RunnerJob{{Name: "a", Batches: b, Jitter: 1}}},
	} {
		if _, err := reconcile.NewRunner(cfg); err == nil {
			t.Errorf("NewRunner(%+v) succeeded", cfg)
		}
	}
}

func TestRunTickReportsItsDurationAndStopsBeforeTheDeadline(t *testing.T) {
	b := &scripted{next: func(context.Context, int) (reconcile.Report, error) {
		time.Sleep(30 * time.Millisecond)
		return batchOf(1), nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	tick, err := reconcile.RunTick(ctx, b, reconcile.TickBudget{})
	if err != nil {
		t.Fatalf("RunTick = %v; it must not start a batch the deadline would cut short", err)
	}
	if tick.Duration < 30*time.Millisecond || tick.Batches == 0 {
		t.Fatalf("tick %+v; want its duration reported", tick)
	}
}
