package stripepayouts_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/tieout"
)

// backend is where a world's tie-out records and the host's ledger: in memory, or in
// PostgreSQL. load books what the world has booked so far and returns the ledger.
type backend struct {
	name string
	open func(w *world) (s sink, load func() tieout.Ledger)
}

var backends = []backend{
	{"memstore and MemoryLedger", func(w *world) (sink, func() tieout.Ledger) {
		return memstore.New[string, string](memstore.Options{Now: w.clk.now}), w.memLedger
	}},
	{"pgstore and pgledger", func(w *world) (sink, func() tieout.Ledger) {
		pool, store := shardtest.NewStore(w.t, pgstore.Config{Table: "payments"}, shardtest.PaymentsDDL)
		return store, w.pgLedger(pool)
	}},
}

// Every finding the issue names is planted at Stripe (over HTTP, stripetest) and in the
// host's ledger; the sweep, the events lane and the never-paid-out walk find each exactly
// once and nothing else, in memory and in PostgreSQL. A payout not final yet is not tied out
// until it is; a paid payout that fails is judged again by the events lane; a second sweep
// from the start adds nothing.
func TestEveryPlantedPayoutFindingIsFoundOnceAndNothingElse(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := newWorld(t)
			s, load := b.open(w)
			ledger := &ledgerRef{}
			ledger.set(load())
			lister := newLister(t, w.srv, stripepayouts.Config{PerPage: 2})
			events, err := lister.EventsLister(stripeadapter.EventsOptions{Now: w.clk.now})
			if err != nil {
				t.Fatal(err)
			}
			sweep := step(t, "sweep", lister, ledger, s)
			lane := step(t, "events", events, ledger, s)
			pass(t, lane, 5)   // the lane starts at the newest event
			pass(t, sweep, 10) // p1, paid: its lines

			w.later()
			ledger.set(load())
			pass(t, lane, 10)  // p1 failed: judged again; p2 and p3 finished
			pass(t, sweep, 10) // p2 and p3 again (nothing new), waits at p4
			unpaid(t, w, ledger, s)
			if len(w.want) != 14 {
				t.Errorf("%d findings planted, want 14", len(w.want))
			}
			checkFound(t, s, w.want)

			// p4 is pending: the sweep waits before it.
			cur, err := s.ReadLane(ctx, job, "sweep")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(cur.Position, `"after":"`+w.p3+`"`) {
				t.Errorf("the sweep's position is %s, want it after p3 %s, waiting at p4", cur.Position, w.p3)
			}
			// Once p4 is paid the sweep ties it out (it holds nothing to find) and moves past it.
			if err := w.srv.SetPayoutStatus(w.p4, "paid"); err != nil {
				t.Fatal(err)
			}
			if n := pass(t, sweep, 10); n != 0 {
				t.Errorf("p4's tie-out added %d findings, want 0", n)
			}
			if cur, _ = s.ReadLane(ctx, job, "sweep"); !strings.Contains(cur.Position, `"after":"`+w.p4+`"`) {
				t.Errorf("the sweep's position is %s, want it after p4 %s", cur.Position, w.p4)
			}
			// A sweep from the start, and the lane again: no duplicates.
			if n := pass(t, step(t, "sweep-again", lister, ledger, s), 10); n != 0 {
				t.Errorf("a second sweep added %d findings, want 0", n)
			}
			checkFound(t, s, w.want)
		})
	}
}
