package console

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

// gatedStatus is a StatusReader whose reads wait for release, and count themselves.
type gatedStatus struct {
	calls    atomic.Int64
	inFlight atomic.Int64
	release  chan struct{}
	stale    atomic.Int64 // what the next read returns, as StaleFindings
}

func (g *gatedStatus) Status(ctx context.Context, job string) (reconcile.Status, error) {
	g.calls.Add(1)
	g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	stale := int(g.stale.Load()) // read as the read begins
	select {
	case <-g.release:
	case <-ctx.Done():
		return reconcile.Status{}, ctx.Err()
	}
	return reconcile.Status{Job: job, StaleFindings: stale}, nil
}

// read is g's Status of job, as the cache reads it.
func (g *gatedStatus) read(job string) func(context.Context) (reconcile.Status, error) {
	return func(ctx context.Context) (reconcile.Status, error) { return g.Status(ctx, job) }
}

func TestTheStatusCacheDoesNotKeepAReadThatBeganBeforeAClear(t *testing.T) {
	t.Parallel()
	c := newReadCache[reconcile.Status]("status", time.Hour, time.Minute)
	g := &gatedStatus{release: make(chan struct{})}
	g.stale.Store(1) // before the write

	got := make(chan reconcile.Status, 1)
	go func() {
		st, err := c.get(context.Background(), "sweep", g.read("sweep"))
		if err != nil {
			t.Error(err)
		}
		got <- st
	}()
	for g.inFlight.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// A write lands while the read is under way, and clears the cache.
	g.stale.Store(2)
	c.clear()
	close(g.release)
	if st := <-got; st.StaleFindings != 1 {
		t.Fatalf("the read under way returned %d, want its own 1", st.StaleFindings)
	}
	st, err := c.get(context.Background(), "sweep", g.read("sweep"))
	if err != nil {
		t.Fatal(err)
	}
	if st.StaleFindings != 2 {
		t.Fatalf("after the write the cache answers the status read before it (%d stale findings, want 2)", st.StaleFindings)
	}
	if n := g.calls.Load(); n != 2 {
		t.Errorf("%d reads, want 2", n)
	}
}

func TestConcurrentStatusReadsOfAJobAreOne(t *testing.T) {
	t.Parallel()
	c := newReadCache[reconcile.Status]("status", time.Hour, time.Minute)
	g := &gatedStatus{release: make(chan struct{})}
	const n = 8
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := c.get(context.Background(), "sweep", g.read("sweep")); err != nil {
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
	c := newReadCache[reconcile.Status]("status", -1, time.Minute)
	g := &gatedStatus{release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c.get(ctx, "sweep", g.read("sweep"))
		first <- err
	}()
	for g.inFlight.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	second := make(chan error, 1)
	go func() {
		_, err := c.get(context.Background(), "sweep", g.read("sweep"))
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
