package stripepayouts_test

// Rate limits and outages: a payout's tie-out is delayed by them, never skipped, and never
// recorded on a listing cut short.

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/tieout"
)

// throttles is a Limiter that grants every call and counts the rate limits it is told of.
type throttles struct{ n atomic.Int64 }

func (l *throttles) Wait(ctx context.Context) error    { return ctx.Err() }
func (l *throttles) Throttle(retryAfter time.Duration) { l.n.Add(1) }

// The fault injected before each batch of the storm, in turn: 429s (Stripe's JSON and a
// proxy's page), 5xx, a hang past the call's timeout, on every route the tie-out uses.
var storm = []struct {
	route stripetest.Route
	fault stripetest.Fault
}{
	{stripetest.ListBalanceTransactions, stripetest.Fault{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"1"}}}},
	{stripetest.ListPayouts, stripetest.Fault{Status: http.StatusTooManyRequests}},
	{stripetest.ListBalanceTransactions, stripetest.Fault{Status: http.StatusServiceUnavailable}},
	{stripetest.ListBalanceTransactions, stripetest.Fault{Status: http.StatusTooManyRequests, Body: "<html>slow down</html>"}},
	{stripetest.ListPayouts, stripetest.Fault{Status: http.StatusBadGateway, Body: "<html>bad gateway</html>"}},
	{stripetest.ListBalanceTransactions, stripetest.Fault{Hang: true}},
	{stripetest.ListEvents, stripetest.Fault{Status: http.StatusTooManyRequests}},
	{stripetest.RetrievePayout, stripetest.Fault{Status: http.StatusTooManyRequests}},
	{stripetest.RetrievePayout, stripetest.Fault{Status: http.StatusInternalServerError}},
}

// Through a storm of rate limits and outages on every route, the sweep and the events lane
// find every planted finding exactly once and nothing else: a batch that meets a fault writes
// nothing (no finding from a listing cut short, no position past a payout not tied out), a
// rate limit defers it (Report.RateLimited, no error) and an outage fails it
// (reconcile.ErrUnavailable), the limiter is told of each 429, every fault meets a request, and
// the next batch does the work.
func TestAStormDelaysPayoutsAndNeverSkipsThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	s := memstore.New[string, string](memstore.Options{Now: w.clk.now})
	ledger := &ledgerRef{}
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: w.srv.Key(), BaseURL: w.srv.URL(), Timeout: 200 * time.Millisecond},
		stripeadapter.Payouts())
	if err != nil {
		t.Fatal(err)
	}
	limiter := &throttles{}
	lister, err := stripepayouts.New(gw, stripepayouts.Config{PerPage: 3, Limiter: limiter})
	if err != nil {
		t.Fatal(err)
	}
	events, err := lister.EventsLister(stripeadapter.EventsOptions{Now: w.clk.now})
	if err != nil {
		t.Fatal(err)
	}
	sweep, lane := step(t, "sweep", lister, ledger, s), step(t, "events", events, ledger, s)
	// The events lane starts before p1 fails, so that it reads p1's failure and the later
	// payouts' events through the storm.
	ledger.set(w.memLedger())
	pass(t, lane, 5)
	w.later()
	if err := w.srv.SetPayoutStatus(w.p4, "paid"); err != nil {
		t.Fatal(err)
	}
	ledger.set(w.memLedger())

	failed, limited, partial := 0, 0, 0
	hit := make([]bool, len(storm)) // the faults some request met
	// run runs st to the end of a pass, its first batches each meeting the next fault of order
	// (indexes into storm), then every other batch, until the order is done twice.
	run := func(st *tieout.Step, name string, order ...int) {
		for i := 0; ; i++ {
			if i == 60 {
				t.Fatalf("%s: no end of pass in 60 batches", name)
			}
			k := order[i%len(order)]
			f := storm[k]
			w.srv.ClearFaults()
			faulted := i < 2*len(order) && i%2 == 0 || i < len(order)
			if faulted {
				f.fault.Times = 1
				w.srv.Inject(f.route, f.fault)
			}
			requests := w.srv.Requests(f.route)
			before := len(found(t, s))
			cur, _ := s.ReadLane(ctx, job, name)
			rep, err := st.RunBatch(ctx)
			if faulted && w.srv.Requests(f.route) > requests {
				hit[k] = true // a fault with Times 1 meets the route's first request
			}
			if err != nil || rep.Deferred {
				switch {
				case err == nil && rep.RateLimited:
					limited++
				case err == nil:
					t.Fatalf("%s: batch %d deferred without a rate limit: %+v", name, i, rep)
				case errors.Is(err, reconcile.ErrRateLimited):
					t.Fatalf("%s: batch %d failed on a rate limit (%v): a rate limit delays a step, it does not fail it", name, i, err)
				case !errors.Is(err, reconcile.ErrUnavailable):
					t.Fatalf("%s: batch %d: %v, want unavailable", name, i, err)
				default:
					failed++
				}
				after, _ := s.ReadLane(ctx, job, name)
				if n := len(found(t, s)); n != before || after.Position != cur.Position {
					t.Fatalf("%s: a batch that met a fault wrote: findings %d → %d, position %q → %q", name, before, n, cur.Position, after.Position)
				}
				continue
			}
			if rep.RateLimited {
				partial++ // groups tied out before the rate limit, committed
			}
			if rep.Wrapped {
				return
			}
		}
	}
	// Each lane meets the faults of its routes first: the events lane's pass is short.
	run(sweep, "sweep", 0, 1, 2, 3, 4, 5)
	run(lane, "events", 6, 7, 8, 0, 2, 3, 5)
	w.srv.ClearFaults()
	unpaid(t, w, ledger, s)
	checkFound(t, s, w.want)
	t.Logf("%d batches failed, %d deferred by a rate limit, %d committed some payouts before one; %d throttles", failed, limited, partial, limiter.n.Load())
	if failed == 0 || limited == 0 {
		t.Errorf("%d batches failed, %d rate limited: the storm did not reach the tie-out", failed, limited)
	}
	for i, h := range hit {
		if !h {
			t.Errorf("fault %d (%v on %v) met no request: the storm did not test it", i, storm[i].fault, storm[i].route)
		}
	}
	if limiter.n.Load() == 0 {
		t.Error("the limiter was told of no rate limit")
	}
}
