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
	r, err := reconcile.NewRunner(reconcile.RunnerConfig{Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); a.Cursor(job).CyclesCompleted < 2 || b.Cursor(job).CyclesCompleted < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("cycles completed: a %d, b %d; want 2 each", a.Cursor(job).CyclesCompleted, b.Cursor(job).CyclesCompleted)
		}
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(context.Background()); err == nil {
		t.Fatal("a second Stop succeeded")
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
	r, err := reconcile.NewRunner(reconcile.RunnerConfig{Jobs: []reconcile.RunnerJob{{Name: "sweep", Batches: rec, Interval: time.Millisecond}}})
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
	r, err := reconcile.NewRunner(reconcile.RunnerConfig{Jobs: []reconcile.RunnerJob{{Name: "sweep", Batches: rec, Interval: time.Millisecond}}})
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
	const interval = 10 * time.Millisecond
	r, err := reconcile.NewRunner(reconcile.RunnerConfig{Logger: slog.New(lv), Jobs: []reconcile.RunnerJob{
		{Name: "race", Batches: race, Interval: interval, Jitter: -1},
		{Name: "broken", Batches: broken, Interval: interval, Jitter: -1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if lv.count(slog.LevelInfo) != int(race.calls.Load()) || lv.count(slog.LevelError) != int(broken.calls.Load()) {
		t.Fatalf("log levels %v; want the races at info and only the broken job's failures as errors", lv.seen)
	}
	// Without backoff the broken job would run about 30 times in 300ms; doubling from 10ms
	// (10, 20, 40, 80, 160) allows at most 6. The race is retried every interval, not backed off.
	if n := broken.calls.Load(); n > 6 {
		t.Fatalf("the failing job ran %d times in 300ms; failures must back off", n)
	}
	if n := race.calls.Load(); n < 10 {
		t.Fatalf("the job losing races ran %d times in 300ms; a lost race is not a failure to back off from", n)
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
