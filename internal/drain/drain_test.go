package drain

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	cause := errors.New("stopping")
	t.Run("work that ends in time is waited for", func(t *testing.T) {
		var wg sync.WaitGroup
		wg.Go(func() { time.Sleep(20 * time.Millisecond) })
		killed := false
		if !Wait(context.Background(), &wg, func(error) { killed = true }, cause) || killed {
			t.Fatal("Wait cut short work that finished, or cancelled it")
		}
	})
	t.Run("work that ends when cancelled is cancelled with the cause", func(t *testing.T) {
		work, kill := context.WithCancelCause(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { <-work.Done() })
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if Wait(ctx, &wg, kill, cause) || context.Cause(work) != cause {
			t.Fatalf("Wait reported the work whole, or cancelled it with %v", context.Cause(work))
		}
	})
	t.Run("work that ignores cancellation holds Wait no longer than Grace", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		var wg sync.WaitGroup
		wg.Go(func() { <-release })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		start := time.Now()
		if Wait(ctx, &wg, func(error) {}, cause) {
			t.Fatal("Wait reported stuck work as finished")
		}
		if d := time.Since(start); d < Grace {
			t.Fatalf("Wait returned after %v, before the grace of %v", d, Grace)
		}
	})
}
