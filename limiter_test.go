package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// Behaviour 12: a limiter at 50 requests/s makes 11 calls take at least 0.19 s. The first call
// spends the single token of the burst; the other ten wait 20 ms each, 200 ms in all. Only the
// lower bound is asserted: a slow machine may take longer, never shorter.
func TestLimiterPacesGatewayCalls(t *testing.T) {
	const (
		rows    = 11
		minWall = 190 * time.Millisecond
	)
	for _, conc := range []int{1, 4} {
		t.Run(fmt.Sprintf("at 50 per second 11 calls with concurrency %d take at least 190ms", conc), func(t *testing.T) {
			s := newStore(newClock(), rows, always("paid"))
			states := map[string]string{}
			for i := int64(1); i <= rows; i++ {
				states[extID(i)] = "succeeded"
			}
			gw := reconciletest.NewGateway(states)
			cfg := config(s, gw)
			cfg.Concurrency = conc
			cfg.Limiter = rate.NewLimiter(50, 1)
			start := time.Now()
			rep, err := reconcile.RunBatch(context.Background(), cfg)
			elapsed := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if gw.Calls("") != rows || rep.GatewayCalls != rows || rep.Verdicts[reconcile.InSync] != rows {
				t.Fatalf("gateway saw %d calls, report %+v; want exactly %d calls, all in sync", gw.Calls(""), rep, rows)
			}
			if elapsed < minWall {
				t.Fatalf("%d calls took %v, want at least %v at 50 per second", rows, elapsed, minWall)
			}
		})
	}
}
