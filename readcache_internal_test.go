package reconcile

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gatedStatus is a StatusReader whose reads wait for release, and count themselves.
type gatedStatus struct {
	calls       atomic.Int64
	inFlight    atomic.Int64
	maxInFlight atomic.Int64
	release     chan struct{}
	stale       atomic.Int64 // what the next read returns, as StaleFindings
}

func (g *gatedStatus) Status(ctx context.Context, job string) (Status, error) {
	g.calls.Add(1)
	n := g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	for m := g.maxInFlight.Load(); n > m && !g.maxInFlight.CompareAndSwap(m, n); m = g.maxInFlight.Load() {
	}
	stale := int(g.stale.Load()) // read as the read begins
	select {
	case <-g.release:
	case <-ctx.Done():
		return Status{}, ctx.Err()
	}
	return Status{Job: job, StaleFindings: stale}, nil
}

// read is g's Status of job, as the cache reads it.
func (g *gatedStatus) read(job string) func(context.Context) (any, error) {
	return func(ctx context.Context) (any, error) { return g.Status(ctx, job) }
}

// waitInFlight waits until n reads of g are under way.
func (g *gatedStatus) waitInFlight(n int64) {
	for g.inFlight.Load() < n {
		time.Sleep(time.Millisecond)
	}
}

var sweep = readKey{what: "status", job: "sweep"}

func testCache(ttl time.Duration) *readCache {
	return newReadCache(ttl, time.Minute, time.Now, nil)
}

func staleOf(t *testing.T, v any, err error) int {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return v.(Status).StaleFindings
}

func TestTheStatusCacheDoesNotKeepAReadThatBeganBeforeAClear(t *testing.T) {
	t.Parallel()
	c := testCache(time.Hour)
	g := &gatedStatus{release: make(chan struct{})}
	g.stale.Store(1) // before the write

	got := make(chan int, 1)
	go func() {
		v, err := c.get(context.Background(), sweep, nil, g.read("sweep"))
		if err != nil {
			t.Error(err)
		}
		got <- v.(Status).StaleFindings
	}()
	g.waitInFlight(1)
	// A write lands while the read is under way, and clears the cache.
	g.stale.Store(2)
	c.forget()
	close(g.release)
	if st := <-got; st != 1 {
		t.Fatalf("the read under way returned %d, want its own 1", st)
	}
	v, err := c.get(context.Background(), sweep, nil, g.read("sweep"))
	if st := staleOf(t, v, err); st != 2 {
		t.Fatalf("after the write the cache answers the status read before it (%d stale findings, want 2)", st)
	}
	if n := g.calls.Load(); n != 2 {
		t.Errorf("%d reads, want 2", n)
	}
}

func TestConcurrentStatusReadsOfAJobAreOne(t *testing.T) {
	t.Parallel()
	c := testCache(time.Hour)
	g := &gatedStatus{release: make(chan struct{})}
	const n = 8
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := c.get(context.Background(), sweep, nil, g.read("sweep")); err != nil {
				t.Error(err)
			}
		})
	}
	// Give them time to pile up (all would be in flight at once without coalescing).
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline) && g.inFlight.Load() < n; {
		time.Sleep(time.Millisecond)
	}
	close(g.release)
	wg.Wait()
	if got := g.calls.Load(); got != 1 {
		t.Fatalf("%d concurrent overview reads made %d status reads, want 1", n, got)
	}
}

func TestAReaderThatGivesUpDoesNotFailTheOthers(t *testing.T) {
	t.Parallel()
	c := testCache(-1)
	g := &gatedStatus{release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c.get(ctx, sweep, nil, g.read("sweep"))
		first <- err
	}()
	g.waitInFlight(1)
	second := make(chan error, 1)
	go func() {
		_, err := c.get(context.Background(), sweep, nil, g.read("sweep"))
		second <- err
	}()
	time.Sleep(20 * time.Millisecond) // the second joins the first's read
	cancel()
	if err := <-first; err == nil {
		t.Error("the canceled reader got no error")
	}
	close(g.release)
	if err := <-second; err != nil {
		t.Errorf("the other reader failed with the first's cancellation: %v", err)
	}
}

// A request that comes after a write waits for the read under way, begun before the write, and
// then reads again: it never takes what was read before the write, and the store never has two
// reads of the job at once, whatever the writes (a store that hangs holds one goroutine).
func TestAfterAWriteTheNextReadWaitsForTheOneUnderWay(t *testing.T) {
	t.Parallel()
	c := testCache(time.Hour)
	g := &gatedStatus{release: make(chan struct{})}
	g.stale.Store(1)
	before := make(chan int, 1)
	go func() {
		v, err := c.get(context.Background(), sweep, nil, g.read("sweep"))
		before <- staleOf(t, v, err)
	}()
	g.waitInFlight(1)
	g.stale.Store(2)
	c.forget()
	after := make(chan int, 8)
	var wg sync.WaitGroup
	for range cap(after) {
		wg.Go(func() {
			v, err := c.get(context.Background(), sweep, nil, g.read("sweep"))
			after <- staleOf(t, v, err)
		})
	}
	// Until the read under way ends, those requests wait rather than read.
	time.Sleep(20 * time.Millisecond)
	if n := g.calls.Load(); n != 1 {
		t.Fatalf("%d reads while the first was under way, want 1", n)
	}
	close(g.release)
	wg.Wait()
	close(after)
	if v := <-before; v != 1 {
		t.Errorf("the request before the write got %d, want 1", v)
	}
	for v := range after {
		if v != 2 {
			t.Errorf("a request after the write got %d, what was read before it; want 2", v)
		}
	}
	if n, m := g.calls.Load(), g.maxInFlight.Load(); n != 2 || m != 1 {
		t.Errorf("%d reads, at most %d at once; want 2, one at a time", n, m)
	}
}

// counted counts writes, as pgstore.Store.Writes does.
type counted struct {
	*gatedStatus
	writes atomic.Uint64
}

func (c *counted) Writes() uint64 { return c.writes.Load() }

func TestAWriteTheReaderCountsDropsWhatIsKept(t *testing.T) {
	t.Parallel()
	c := testCache(time.Hour)
	g := &counted{gatedStatus: &gatedStatus{release: make(chan struct{})}}
	close(g.release)
	read := func() {
		t.Helper()
		if _, err := c.get(context.Background(), sweep, writesOf(g), g.read("sweep")); err != nil {
			t.Fatal(err)
		}
	}
	read()
	read()
	if n := g.calls.Load(); n != 1 {
		t.Fatalf("%d reads with no write between, want 1", n)
	}
	g.writes.Add(1)
	read()
	read()
	if n := g.calls.Load(); n != 2 {
		t.Fatalf("%d reads after a write, want 2", n)
	}
}

func TestTheCacheKeepsAReadForItsTTLByItsClock(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		ttl       time.Duration
		advance   time.Duration
		wantReads int64
	}{
		{"within the TTL", time.Minute, 59 * time.Second, 1},
		{"exactly at the TTL", time.Minute, time.Minute, 2},
		{"after the TTL", time.Minute, time.Hour, 2},
		{"the clock gone back", time.Minute, -time.Second, 2},
		{"a negative TTL keeps nothing", -1, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			var mu sync.Mutex
			c := newReadCache(tt.ttl, time.Minute, func() time.Time { mu.Lock(); defer mu.Unlock(); return now }, nil)
			g := &gatedStatus{release: make(chan struct{})}
			close(g.release)
			for i := range 2 {
				if i == 1 {
					mu.Lock()
					now = now.Add(tt.advance)
					mu.Unlock()
				}
				if _, err := c.get(context.Background(), sweep, nil, g.read("sweep")); err != nil {
					t.Fatal(err)
				}
			}
			if n := g.calls.Load(); n != tt.wantReads {
				t.Errorf("%d reads, want %d", n, tt.wantReads)
			}
		})
	}
}

func TestAFailedOrPanickingReadIsNotKeptAndIsToldOnce(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var told []string
	c := newReadCache(time.Hour, time.Minute, time.Now, func(k readKey, err error) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, k.job+": "+err.Error())
	})
	var reads atomic.Int64
	fail := func(context.Context) (any, error) { reads.Add(1); return nil, errors.New("connection refused") }
	boom := func(context.Context) (any, error) { reads.Add(1); panic("bug in a reader") }
	for range 2 {
		if _, err := c.get(context.Background(), sweep, nil, fail); err == nil {
			t.Fatal("a failed read returned no error")
		}
	}
	_, err := c.get(context.Background(), readKey{what: "status", job: "panicky"}, nil, boom)
	if err == nil || !strings.Contains(err.Error(), "panicked: bug in a reader") {
		t.Fatalf("a panicking read returned %v", err)
	}
	if n := reads.Load(); n != 3 {
		t.Errorf("%d reads, want 3: a failure is not kept", n)
	}
	if len(told) != 3 || !strings.Contains(told[0], "sweep: connection refused") || !strings.HasPrefix(told[2], "panicky: ") {
		t.Errorf("told %q; want each failure once", told)
	}
}
