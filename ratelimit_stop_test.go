package reconcile_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/reconcilekit/reconcile"
)

// gateLimiter lets the first caller through once all `workers` callers are waiting, and holds
// the others until release is closed.
type gateLimiter struct {
	workers int
	mu      sync.Mutex
	waiting int
	first   bool
	all     chan struct{}
	release chan struct{}
}

func (l *gateLimiter) Wait(ctx context.Context) error {
	l.mu.Lock()
	l.waiting++
	if l.waiting == l.workers {
		close(l.all)
	}
	isFirst := !l.first
	l.first = true
	l.mu.Unlock()
	if isFirst {
		<-l.all
		return nil
	}
	select {
	case <-l.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type warnHandler struct {
	warned chan struct{}
	once   sync.Once
}

func (h *warnHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *warnHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		h.once.Do(func() { close(h.warned) })
	}
	return nil
}
func (h *warnHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *warnHandler) WithGroup(string) slog.Handler      { return h }

func TestNoCallLeavesAfterA429EvenFromWorkersWaitingOnTheLimiter(t *testing.T) {
	const conc = 4
	s := newStore(newClock(), 20, always("paid"))
	gw := newFakeGateway(0, func(_ context.Context, call int, _ string) (string, error) {
		if call == 1 {
			return "", &reconcile.RateLimitError{}
		}
		return "succeeded", nil
	})
	lim := &gateLimiter{workers: conc, all: make(chan struct{}), release: make(chan struct{})}
	h := &warnHandler{warned: make(chan struct{})}
	go func() {
		<-h.warned // the 429 has been recorded (the engine stops before it logs)
		close(lim.release)
	}()
	cfg := config(s, gw)
	cfg.Concurrency, cfg.Limiter, cfg.Logger = conc, lim, slog.New(h)
	rep, err := reconcile.RunBatch(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if gw.Calls() != 1 {
		t.Fatalf("%d gateway calls, want 1: the %d workers waiting on the limiter called after the 429 (report %+v)", gw.Calls(), conc-1, rep)
	}
}
