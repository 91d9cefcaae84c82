package main

import (
	"context"
	"log/slog"
	"sync"
)

// firstFailure keeps the first error the engine logs (a gateway failure, a rate limit): the
// reason rows were left unverifiable, which the engine's outcomes do not carry. It is the
// reconciler's slog.Handler; the engine may log from several goroutines at once.
type firstFailure struct {
	mu  sync.Mutex
	err string
}

var _ slog.Handler = (*firstFailure)(nil)

func (f *firstFailure) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (f *firstFailure) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "error" {
			return true
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.err == "" {
			f.err = a.Value.String()
		}
		return false
	})
	return nil
}

func (f *firstFailure) WithAttrs([]slog.Attr) slog.Handler { return f }
func (f *firstFailure) WithGroup(string) slog.Handler      { return f }

// String is the first error logged, or "".
func (f *firstFailure) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}
