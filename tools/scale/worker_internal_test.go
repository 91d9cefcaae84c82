package scale

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/reconcilekit/reconcile/adapters/pgshard"
)

// The tick that takes a killed worker's shard over usually completes the job's cycle, and the
// worker's watcher then cancels its context, possibly before the tick returns: the takeover
// (and the rest of the tick) must be counted all the same, as must a takeover whose tick
// failed; the database counted the claim either way.
func TestAWorkerCountsATakeoverWhoseTickEndedTheRunOrFailed(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(cancel context.CancelFunc) error
	}{
		{"the job completed its cycles during the tick", func(cancel context.CancelFunc) error { cancel(); return nil }},
		{"the tick completed the cycles and failed after", func(cancel context.CancelFunc) error { cancel(); return context.Canceled }},
		{"the tick failed", func(context.CancelFunc) error { return errors.New("a batch failed") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rep := WorkerReport{Owner: "worker-1"}
			n := 0
			err := work(ctx, &rep, io.Discard, func(context.Context) (pgshard.Tick, error) {
				n++
				if n == 1 {
					return pgshard.Tick{Leased: true, Shard: 3, TookOver: true}, tc.end(cancel)
				}
				cancel() // the job's cycles are done
				return pgshard.Tick{}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if rep.TookOver != 1 || rep.Ticks != 1 || len(rep.ShardsRun) != 1 || rep.ShardsRun[0] != 3 {
				t.Fatalf("report %+v: want the takeover of shard 3 counted", rep)
			}
		})
	}
}
