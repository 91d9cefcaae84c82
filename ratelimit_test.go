package reconcile_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/reconcilekit/reconcile"
)

func newAdaptive(t *testing.T, c *clock, opts reconcile.AdaptiveOptions) *reconcile.AdaptiveLimiter {
	t.Helper()
	opts.Now = c.Now
	l, err := reconcile.NewAdaptiveLimiter(opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestAdaptiveLimiterDefaultsToFivePerSecond(t *testing.T) {
	l, err := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Limit(); got != 5 || reconcile.DefaultRate != 5 {
		t.Fatalf("Limit() = %v, DefaultRate = %v; want 5", got, reconcile.DefaultRate)
	}
}

func TestAdaptiveLimiterHalvesOnARateLimitAndRecoversGradually(t *testing.T) {
	c := newClock()
	l := newAdaptive(t, c, reconcile.AdaptiveOptions{Rate: 20, Min: 4, RecoverEvery: 10 * time.Second})
	steps := []struct {
		name     string
		advance  time.Duration
		throttle bool
		want     rate.Limit
	}{
		{"a 429 halves the rate", 0, true, 10},
		{"a second 429 in the same second does not halve again", 500 * time.Millisecond, true, 10},
		{"a 429 a second later halves again", time.Second, true, 5},
		{"the rate never drops below Min", 2 * time.Second, true, 4},
		{"nothing grows back before RecoverEvery", 9 * time.Second, false, 4},
		{"each RecoverEvery adds a tenth of Rate", time.Second, false, 6},
		{"several periods add several steps", 30 * time.Second, false, 12},
		{"recovery stops at Rate", 10 * time.Minute, false, 20},
		{"and a new 429 halves from there", 0, true, 10},
	}
	for _, s := range steps {
		c.Advance(s.advance)
		if s.throttle {
			l.Throttle(0)
		}
		if got := l.Limit(); got != s.want {
			t.Fatalf("%s: Limit() = %v, want %v", s.name, got, s.want)
		}
	}
}

func TestAdaptiveLimiterPausesForRetryAfter(t *testing.T) {
	l, err := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{Rate: 1000, Burst: 10})
	if err != nil {
		t.Fatal(err)
	}
	l.Throttle(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	if err := l.Wait(ctx); err == nil {
		t.Fatal("Wait granted a call during a one-hour Retry-After pause")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Wait took %v to refuse; a pause past the deadline must fail at once", d)
	}

	short, err := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{Rate: 1000, Burst: 10})
	if err != nil {
		t.Fatal(err)
	}
	short.Throttle(50 * time.Millisecond)
	start = time.Now()
	if err := short.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("Wait returned after %v, want at least the 50ms Retry-After", d)
	}

	cancelled, cancelNow := context.WithCancel(context.Background())
	cancelNow()
	l2, _ := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{})
	l2.Throttle(time.Second)
	if err := l2.Wait(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a cancelled context during a pause = %v, want context.Canceled", err)
	}
}

func TestNewAdaptiveLimiterRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts reconcile.AdaptiveOptions
	}{
		{"a negative rate", reconcile.AdaptiveOptions{Rate: -1}},
		{"an infinite rate", reconcile.AdaptiveOptions{Rate: rate.Inf}},
		{"a negative burst", reconcile.AdaptiveOptions{Burst: -1}},
		{"a floor above the rate", reconcile.AdaptiveOptions{Rate: 5, Min: 6}},
		{"a negative recovery period", reconcile.AdaptiveOptions{RecoverEvery: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is an error", func(t *testing.T) {
			if _, err := reconcile.NewAdaptiveLimiter(tt.opts); err == nil {
				t.Fatal("NewAdaptiveLimiter accepted it")
			}
		})
	}
}

func TestAdaptiveLimiterIsSafeForConcurrentBatches(t *testing.T) {
	l, err := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{Rate: 10000, Burst: 100, RecoverEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if err := l.Wait(context.Background()); err != nil {
					t.Error(err)
					return
				}
				if (g+i)%50 == 0 {
					l.Throttle(0)
				}
				_ = l.Limit()
			}
		}()
	}
	wg.Wait()
}

// recordingLimiter grants every call and records what it was told.
type recordingLimiter struct {
	mu        sync.Mutex
	throttled []time.Duration
}

func (l *recordingLimiter) Wait(context.Context) error { return nil }
func (l *recordingLimiter) Throttle(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.throttled = append(l.throttled, d)
}

func TestTheEngineTellsAThrottlerOfEachRateLimitAnswer(t *testing.T) {
	s := newStore(newClock(), 10, always("paid"))
	gw := newFakeGateway(0, func(_ context.Context, call int, _ string) (string, error) {
		if call == 3 {
			return "", &reconcile.RateLimitError{RetryAfter: 2 * time.Second}
		}
		return "succeeded", nil
	})
	lim := &recordingLimiter{}
	cfg := config(s, gw)
	cfg.Limiter = lim
	if _, err := reconcile.RunBatch(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if len(lim.throttled) != 1 || lim.throttled[0] != 2*time.Second {
		t.Fatalf("Throttle calls %v, want one with the answer's 2s", lim.throttled)
	}
}

func TestALimiterOutOfTimeIsNotToldItWasRateLimited(t *testing.T) {
	s := newStore(newClock(), 10, always("paid"))
	gw := newFakeGateway(0, func(context.Context, int, string) (string, error) { return "succeeded", nil })
	lim, err := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{Rate: 1, Burst: 2})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config(s, gw)
	cfg.Limiter = lim
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	rep, err := reconcile.RunBatch(ctx, cfg)
	if err != nil || !rep.RateLimited || rep.GatewayCalls != 2 || rep.Scanned != 2 || rep.Verdicts[reconcile.Unverifiable] != 0 {
		t.Fatalf("report %+v, err %v; want 2 calls, 2 rows committed, the other 8 left for the next batch", rep, err)
	}
	if got := lim.Limit(); got != 1 {
		t.Fatalf("limit after our own deadline = %v, want it unchanged at 1: only the external system's 429 slows it", got)
	}
}

func TestNewRejectsANilLimiterPointer(t *testing.T) {
	s := newStore(newClock(), 1, always("paid"))
	cfg := config(s, newFakeGateway(0, nil))
	var lim *rate.Limiter
	cfg.Limiter = lim
	if _, err := reconcile.New(cfg); err == nil {
		t.Fatal("New accepted a nil *rate.Limiter, which panics at the first call")
	}
}

func TestARateLimitAnswerHoldsBackCallersAlreadyWaiting(t *testing.T) {
	l, err := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{Rate: 2, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Wait(context.Background()); err != nil { // spends the burst
		t.Fatal(err)
	}
	start := time.Now()
	done := make(chan time.Duration)
	go func() {
		if err := l.Wait(context.Background()); err != nil { // its turn is 500ms away
			t.Error(err)
		}
		done <- time.Since(start)
	}()
	time.Sleep(100 * time.Millisecond)
	l.Throttle(time.Second) // arrives while the caller waits for its turn
	if d := <-done; d < time.Second {
		t.Fatalf("a caller waiting before the 429 went through after %v, inside the 1s pause", d)
	}
}

func TestABatchThatCannotMakeItsFirstCallWritesNothingAndSaysWhenToComeBack(t *testing.T) {
	s := newStore(newClock(), 10, always("paid"))
	sink := &countingSink{Sink: s}
	gw := newFakeGateway(0, func(context.Context, int, string) (string, error) { return "succeeded", nil })
	lim, err := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lim.Throttle(time.Minute) // another job sharing the budget was told to wait a minute
	cfg := config(s, gw)
	cfg.Sink, cfg.Limiter = sink, lim
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 3 { // a scheduler that ignored the advice would not walk the cursor over the table
		rep, err := reconcile.RunBatch(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Deferred || !rep.RateLimited || rep.RetryAfter < 50*time.Second || rep.Scanned != 0 {
			t.Fatalf("report %+v; want deferred, rate limited, RetryAfter about a minute, nothing scanned", rep)
		}
	}
	assertNothingWritten(t, s, sink, 10)
	if gw.Calls() != 0 {
		t.Fatalf("%d calls during the pause", gw.Calls())
	}
}
