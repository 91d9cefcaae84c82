package pgstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

func budgetPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.Pool(t)
	if err := Migrate(context.Background(), pool, Tables{}); err != nil {
		t.Fatal(err)
	}
	return pool
}

// fakeClock is a budget clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// recordGrants makes b report the database time of every call it is granted into a slice.
func recordGrants(b *RateBudget, mu *sync.Mutex, into *[]time.Time) {
	b.observe = func(at time.Time) {
		mu.Lock()
		*into = append(*into, at)
		mu.Unlock()
	}
}

func TestABudgetGrantsItsBurstAtOnceThenOneCallPerIntervalByTheDatabaseClock(t *testing.T) {
	t.Parallel()
	pool := budgetPool(t)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	b, err := NewRateBudget(pool, RateBudgetConfig{Key: "acct_1", Rate: 10, Burst: 3})
	if err != nil {
		t.Fatal(err)
	}
	b.clock = clock.Now
	var mu sync.Mutex
	var got []time.Time
	recordGrants(b, &mu, &got)
	// The bucket is made empty: one call per 100ms from the start.
	for range 3 {
		if _, err := b.reserve(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Two seconds later the bucket has refilled, capped at the burst of 3: three calls at once,
	// then one per 100ms again.
	clock.Advance(2 * time.Second)
	for range 5 {
		if _, err := b.reserve(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ms := func(d ...int) []time.Time {
		out := make([]time.Time, len(d))
		for i, v := range d {
			out[i] = t0.Add(time.Duration(v) * time.Millisecond)
		}
		return out
	}
	if want := ms(100, 200, 300, 2000, 2000, 2000, 2100, 2200); !slices.EqualFunc(got, want, func(a, b time.Time) bool {
		return a.Sub(b).Abs() < time.Microsecond
	}) {
		t.Fatalf("grant times %v,\nwant %v", got, want)
	}
	st, err := b.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Granted != 8 || st.Rate != 10 || st.Burst != 3 {
		t.Fatalf("state %+v, want 8 granted at 10/s, burst 3", st)
	}
}

func TestARateLimitAnswerPausesTheBudgetForEveryProcessAndEmptiesIt(t *testing.T) {
	t.Parallel()
	pool := budgetPool(t)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	newBudget := func() *RateBudget {
		b, err := NewRateBudget(pool, RateBudgetConfig{Key: "acct_1", Rate: 10, Burst: 5})
		if err != nil {
			t.Fatal(err)
		}
		b.clock = clock.Now
		return b
	}
	a, other := newBudget(), newBudget()
	var mu sync.Mutex
	var got []time.Time
	recordGrants(other, &mu, &got)
	if err := a.create(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second) // the bucket, made empty, fills up
	if _, err := a.reserve(ctx); err != nil {
		t.Fatal(err)
	}
	a.Throttle(2 * time.Second)
	// The other process, asking now with a second to spare, is told how long the pause lasts.
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := other.reserve(dctx)
	var rl *reconcile.RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second || !errors.Is(err, reconcile.ErrRateLimited) {
		t.Fatalf("reserve during the pause: %v, want a RateLimitError asking for 2s", err)
	}
	// Without a deadline it is granted the first call after the pause, and no burst: the
	// bucket was emptied.
	for range 2 {
		if _, err := other.reserve(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if want := []time.Time{t0.Add(3100 * time.Millisecond), t0.Add(3200 * time.Millisecond)}; len(got) != 2 ||
		got[0].Sub(want[0]).Abs() > time.Microsecond || got[1].Sub(want[1]).Abs() > time.Microsecond {
		t.Fatalf("grants after the pause at %v, want %v", got, want)
	}
	st, err := a.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Throttles != 1 || !st.PausedUntil.Equal(t0.Add(3*time.Second)) || st.Granted != 3 {
		t.Fatalf("state %+v, want one throttle, paused until t0+3s, 3 granted", st)
	}
}

func TestAWaitThatWouldOutlastItsDeadlineTakesNothing(t *testing.T) {
	t.Parallel()
	pool := budgetPool(t)
	ctx := context.Background()
	b, err := NewRateBudget(pool, RateBudgetConfig{Key: "acct_1", Rate: 2, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// The next call is half a second away; a wait allowed 100ms fails at once.
	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err = b.Wait(dctx)
	if err == nil || errors.Is(err, reconcile.ErrRateLimited) || dctx.Err() != nil {
		t.Fatalf("Wait with 100ms to spare: %v (context: %v), want an immediate refusal that is not a rate limit", err, dctx.Err())
	}
	// A cancelled context refuses before asking.
	cctx, cancel2 := context.WithCancel(ctx)
	cancel2()
	if err := b.Wait(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a cancelled context: %v", err)
	}
	st, err := b.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Granted != 1 {
		t.Fatalf("%d calls granted, want only the first", st.Granted)
	}
}

// maxInWindow returns the most times within any window [t, t+w).
func maxInWindow(times []time.Time, w time.Duration) int {
	times = slices.Clone(times)
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	best, j := 0, 0
	for i := range times {
		for !times[i].Before(times[j].Add(w)) {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

func TestBudgetsOfOneKeyShareOneBucketUnderConcurrency(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		grant int
	}{{"a call per statement", 1}, {"two calls per statement", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := budgetPool(t)
			ctx := context.Background()
			const (
				rate, burst = 40, 4
				want        = 80
			)
			var mu sync.Mutex
			var grants []time.Time
			var waits atomic.Int64
			var wg sync.WaitGroup
			budgets := make([]*RateBudget, 3) // as three processes would have
			for i := range budgets {
				b, err := NewRateBudget(pool, RateBudgetConfig{Key: "acct_1", Rate: rate, Burst: burst, Grant: tc.grant, MaxLate: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				recordGrants(b, &mu, &grants)
				budgets[i] = b
				for range 6 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for waits.Add(1) <= want {
							if err := b.Wait(ctx); err != nil {
								t.Error(err)
								return
							}
						}
					}()
				}
			}
			wg.Wait()
			st, err := budgets[0].State(ctx)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			// Every grant is accounted for in the shared row, and no window of a second holds
			// more than rate + burst of them, by the database clock that granted them.
			if int(st.Granted) != len(grants) || len(grants) < want {
				t.Fatalf("the bucket counted %d grants, the budgets saw %d; want equal, at least %d", st.Granted, len(grants), want)
			}
			if n := maxInWindow(grants, time.Second); n > rate+burst {
				t.Fatalf("%d grants within one second, more than rate %d + burst %d", n, rate, burst)
			}
		})
	}
}

func TestTakeDropsReservedCallsTooLateToMake(t *testing.T) {
	t.Parallel()
	b, err := NewRateBudget(pgtest.Pool(t), RateBudgetConfig{Key: "k", MaxLate: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	b.queue = []time.Time{now.Add(-time.Second), now.Add(-200 * time.Millisecond), now.Add(10 * time.Millisecond)}
	at, ok := b.take()
	if !ok || !at.Equal(now.Add(10*time.Millisecond)) || len(b.queue) != 0 {
		t.Fatalf("take = %v, %v with %d left; want the one call still on time", at, ok, len(b.queue))
	}
	b.giveBack(now.Add(30 * time.Millisecond))
	b.giveBack(now.Add(20 * time.Millisecond))
	if len(b.queue) != 2 || !b.queue[0].Before(b.queue[1]) {
		t.Fatalf("queue %v after giving two back, want them in time order", b.queue)
	}
}

func TestNewRateBudgetRejectsBadConfig(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	for _, cfg := range []RateBudgetConfig{
		{},
		{Key: "k", Rate: -1},
		{Key: "k", Burst: -1},
		{Key: "k", Burst: 2, Grant: 3},
		{Key: "k", Tables: Tables{Prefix: "bad-"}},
	} {
		if _, err := NewRateBudget(pool, cfg); err == nil {
			t.Errorf("NewRateBudget(%+v) succeeded", cfg)
		}
	}
	if _, err := NewRateBudget(nil, RateBudgetConfig{Key: "k"}); err == nil {
		t.Error("NewRateBudget(nil) succeeded")
	}
}
