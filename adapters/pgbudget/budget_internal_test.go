package pgbudget

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

func budgetPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.Pool(t)
	if err := pgstore.Migrate(context.Background(), pool, pgstore.Tables{}); err != nil {
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
func recordGrants(b *Budget, mu *sync.Mutex, into *[]time.Time) {
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
	b, err := New(pool, Config{Key: "acct_1", Rate: 10, Burst: 3})
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
	newBudget := func() *Budget {
		b, err := New(pool, Config{Key: "acct_1", Rate: 10, Burst: 5})
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
	// The budget's clock stands still, so that however slowly this test runs the next call is
	// always half a second away; MaxLate is wide, so that a first Wait woken late (a loaded
	// machine) does not give its call up and take another.
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b, err := New(pool, Config{Key: "acct_1", Rate: 2, Burst: 1, MaxLate: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	b.clock = clock.Now
	if err := b.create(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second) // the bucket, made empty, holds its burst of one
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
			budgets := make([]*Budget, 3) // as three processes would have
			for i := range budgets {
				b, err := New(pool, Config{Key: "acct_1", Rate: rate, Burst: burst, Grant: tc.grant, MaxLate: time.Second})
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
	b, err := New(pgtest.Pool(t), Config{Key: "k", MaxLate: 50 * time.Millisecond})
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
	for _, cfg := range []Config{
		{},
		{Key: "k", Rate: -1},
		{Key: "k", Burst: -1},
		{Key: "k", Burst: 2, Grant: 3},
		{Key: "k", Tables: pgstore.Tables{Prefix: "bad-"}},
	} {
		if _, err := New(pool, cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
	if _, err := New(nil, Config{Key: "k"}); err == nil {
		t.Error("New(nil) succeeded")
	}
}

// faultyDB is a DB whose statements can be made to fail, or to hang until their context ends.
type faultyDB struct {
	pgstore.DB
	fail, hang atomic.Bool
}

var errDatabaseDown = errors.New("connection refused")

// errRow is a pgx.Row that fails.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

func (d *faultyDB) fault(ctx context.Context) error {
	switch {
	case d.hang.Load():
		<-ctx.Done()
		return ctx.Err()
	case d.fail.Load():
		return errDatabaseDown
	}
	return nil
}

func (d *faultyDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := d.fault(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return d.DB.Exec(ctx, sql, args...)
}

func (d *faultyDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := d.fault(ctx); err != nil {
		return errRow{err}
	}
	return d.DB.QueryRow(ctx, sql, args...)
}

func TestADatabaseFailureInWaitIsAnErrAbortBatchNotARefusal(t *testing.T) {
	t.Parallel()
	db := &faultyDB{DB: budgetPool(t)}
	b, err := New(db, Config{Key: "acct_1", Rate: 100, Burst: 5})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, made := range []bool{false, true} { // before the bucket is made, and after
		db.fail.Store(true)
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		err := b.Wait(dctx)
		cancel()
		if !errors.Is(err, reconcile.ErrAbortBatch) || !errors.Is(err, errDatabaseDown) || errors.Is(err, reconcile.ErrRateLimited) {
			t.Fatalf("Wait with the database down (bucket made: %v): %v, want an ErrAbortBatch wrapping the database's error", made, err)
		}
		db.fail.Store(false)
		if err := b.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The engine fails such a batch rather than commit the rows not asked as Unverifiable
	// (reconcile's limiter_abort_test.go checks that); the batch's own end is no failure of
	// the database.
	db.hang.Store(true)
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := b.Wait(dctx); errors.Is(err, reconcile.ErrAbortBatch) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait whose context ended in the statement: %v, want the context's error, not an ErrAbortBatch", err)
	}
}

func TestARateLimitAnswerTheDatabaseMissedStillPausesThisProcessAndTheNextAnswerRecordsIt(t *testing.T) {
	t.Parallel()
	db := &faultyDB{DB: budgetPool(t)}
	b, err := New(db, Config{Key: "acct_1", Rate: 100, Burst: 5})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.create(ctx); err != nil {
		t.Fatal(err)
	}
	db.fail.Store(true)
	b.Throttle(3 * time.Second)
	db.fail.Store(false)
	// The database did not hear of the pause, but this process keeps it: a Wait that cannot
	// outlast it is told how long it lasts, without asking the database.
	dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	var rl *reconcile.RateLimitError
	if err := b.Wait(dctx); !errors.As(err, &rl) || rl.RetryAfter <= 2*time.Second || rl.RetryAfter > 3*time.Second {
		t.Fatalf("Wait during a pause the database missed: %v, want a RateLimitError asking for about 3s", err)
	}
	if st, err := b.State(ctx); err != nil || st.Throttles != 0 || st.Granted != 0 {
		t.Fatalf("state %+v, %v; want no throttle recorded, nothing granted", st, err)
	}
	// A later answer within the local pause is not skipped: the pause was never recorded, and
	// now is, for every process.
	b.Throttle(time.Second)
	st, err := b.State(ctx)
	if err != nil || st.Throttles != 1 || time.Until(st.PausedUntil) <= 0 {
		t.Fatalf("state %+v, %v; want the second answer recorded as a pause", st, err)
	}
	// Once recorded, an answer within the recorded pause changes nothing.
	b.Throttle(500 * time.Millisecond)
	if st, err := b.State(ctx); err != nil || st.Throttles != 1 {
		t.Fatalf("state %+v, %v; want still one throttle", st, err)
	}
}

func TestThrottleGivesUpOnAHangingDatabaseWithinASecond(t *testing.T) {
	t.Parallel()
	db := &faultyDB{DB: budgetPool(t)}
	b, err := New(db, Config{Key: "acct_1"})
	if err != nil {
		t.Fatal(err)
	}
	db.hang.Store(true)
	start := time.Now()
	b.Throttle(time.Minute)
	if d := time.Since(start); d > budgetThrottleTimeout+time.Second {
		t.Fatalf("Throttle on a hanging database took %v, want about %v", d, budgetThrottleTimeout)
	}
	if b.paused() <= 0 {
		t.Fatal("the process is not paused")
	}
}

func TestReservationsThatArriveOutOfOrderKeepTheQueueInTimeOrder(t *testing.T) {
	t.Parallel()
	pool := budgetPool(t)
	ctx := context.Background()
	b, err := New(pool, Config{Key: "acct_1", Rate: 10, Burst: 4, Grant: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Another goroutine's later reservation was queued first.
	later := time.Now().Add(time.Hour)
	b.queue = []time.Time{later}
	if _, err := b.reserve(ctx); err != nil {
		t.Fatal(err)
	}
	if len(b.queue) != 4 || !slices.IsSortedFunc(b.queue, func(a, b time.Time) int { return a.Compare(b) }) || !b.queue[3].Equal(later) {
		t.Fatalf("queue %v, want the three new calls before the later one", b.queue)
	}
}
