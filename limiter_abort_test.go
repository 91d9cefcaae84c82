package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/reconcilekit/reconcile"
)

// failingLimiter grants its first ok calls, then fails every Wait with err.
type failingLimiter struct {
	ok    int64
	err   error
	waits atomic.Int64
}

func (l *failingLimiter) Wait(ctx context.Context) error {
	if l.waits.Add(1) > l.ok {
		return l.err
	}
	return ctx.Err()
}

// swallowingGateway is a bulk gateway that reports any failure of wait as its own
// unavailability, hiding the limiter's error from the engine.
type swallowingGateway struct{ *batchGateway }

func (g swallowingGateway) FetchBatch(ctx context.Context, lookups []reconcile.Lookup, wait func(context.Context) error) (map[string]string, error) {
	found, err := g.batchGateway.FetchBatch(ctx, lookups, wait)
	if err != nil {
		return found, reconcile.ErrUnavailable
	}
	return found, nil
}

// A limiter whose own infrastructure fails (a shared budget's database) says so with an error
// wrapping ErrAbortBatch: the batch fails and commits nothing, rather than marking the rows not
// yet asked Unverifiable and moving the cursor past them.
func TestALimiterThatFailsWithErrAbortBatchFailsTheBatchAndCommitsNothing(t *testing.T) {
	const n = 40
	limErr := fmt.Errorf("rate budget: reserve: connection refused: %w", reconcile.ErrAbortBatch)
	all := paymentsWorld(n)
	listed := map[string]string{}
	for id, s := range all {
		listed[id] = s
	}
	gateways := map[string]func() reconcile.Gateway[string]{
		"per-object calls": func() reconcile.Gateway[string] {
			return reconcile.GatewayFunc[string](newFakeGateway(0, answerFrom(all)).Fetch)
		},
		"a bulk gateway": func() reconcile.Gateway[string] {
			return &batchGateway{fakeGateway: newFakeGateway(0, answerFrom(all)), listed: listed, pageSize: 5}
		},
		"a bulk gateway that hides wait's error": func() reconcile.Gateway[string] {
			return swallowingGateway{&batchGateway{fakeGateway: newFakeGateway(0, answerFrom(all)), listed: listed, pageSize: 5}}
		},
	}
	for name, gw := range gateways {
		for _, conc := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s with concurrency %d", name, conc), func(t *testing.T) {
				s := newStore(newClock(), n, always("paid"))
				sink := &countingSink{Sink: s}
				lim := &failingLimiter{ok: 3, err: limErr}
				cfg := config(s, gw())
				cfg.Sink, cfg.Limiter, cfg.BatchSize, cfg.Concurrency = sink, lim, n, conc
				rep, err := reconcile.RunBatch(context.Background(), cfg)
				if !errors.Is(err, reconcile.ErrAbortBatch) || errors.Is(err, reconcile.ErrRateLimited) {
					t.Fatalf("RunBatch: %v (report %+v), want the limiter's ErrAbortBatch", err, rep)
				}
				if rep.RateLimited || rep.Deferred {
					t.Fatalf("report %+v: a failed limiter is not a rate limit", rep)
				}
				assertNothingWritten(t, s, sink, n)
			})
		}
	}
}

// The limiter's refusal for want of time is still no failure: the rows asked commit and the
// cursor stops before the first row not asked.
func TestALimiterOutOfTimeStillLetsTheBatchCommit(t *testing.T) {
	const n = 10
	s := newStore(newClock(), n, always("paid"))
	cfg := config(s, reconcile.GatewayFunc[string](newFakeGateway(0, answerFrom(paymentsWorld(n))).Fetch))
	cfg.Limiter, cfg.BatchSize = &failingLimiter{ok: 3, err: errors.New("the next call is past the deadline")}, n
	rep, err := reconcile.RunBatch(context.Background(), cfg)
	if err != nil || !rep.RateLimited || rep.GatewayCalls != 3 || rep.Scanned != 3 || rep.Verdicts[reconcile.Unverifiable] != 0 || rep.Wrapped {
		t.Fatalf("RunBatch: %+v, %v; want 3 calls, those 3 rows committed, the other %d left for the next batch", rep, err, n-3)
	}
	if cur := s.Cursor(job); cur.Position != "3" || cur.Version != 1 {
		t.Fatalf("cursor %+v, want it committed at row 3", cur)
	}
}
