package drain

import (
	"context"
	"sync"
	"time"
)

// Grace is how long Wait still waits after cancelling: work that ignores cancellation (a
// gateway or handler that does not watch its context) may outlive it, but not by more.
const Grace = time.Second

// Wait waits for wg. If ctx ends first, it calls kill(cause), waits at most Grace more, and
// reports false: the work was cut short.
func Wait(ctx context.Context, wg *sync.WaitGroup, kill context.CancelCauseFunc, cause error) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
	}
	kill(cause)
	t := time.NewTimer(Grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	return false
}
