package stripepayouts_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
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
			// It is recorded as seen, not tied out yet (the console's count), until it is.
			counts := func() reconcile.GroupCounts {
				t.Helper()
				c, err := s.(reconcile.GroupReader).CountGroups(ctx, reconcile.GroupQuery{Jobs: []string{job}})
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			if c := counts(); c.Pending != 1 {
				t.Errorf("while p4 is pending the records count %+v, want 1 not tied out", c)
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
			if c := counts(); c.Pending != 0 {
				t.Errorf("once p4 is tied out the records count %+v, want none not tied out", c)
			}
			// A sweep from the start, and the lane again: no duplicates.
			if n := pass(t, step(t, "sweep-again", lister, ledger, s), 10); n != 0 {
				t.Errorf("a second sweep added %d findings, want 0", n)
			}
			checkFound(t, s, w.want)
		})
	}
}

// Fees are compared only when the host books them: with Policy.Fees, a booked fee that is not
// the line's is a finding and the right one is not; without, neither is, whatever the lines'
// fees.
func TestFeesAreComparedOnlyWhenBooked(t *testing.T) {
	t.Parallel()
	clk := &clock{t: t0}
	srv := newServer(t, clk)
	right := srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 10000, Currency: "usd"})
	wrong := srv.AddPaymentIntent(stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Amount: 20000, Currency: "usd"})
	clk.add(3 * 24 * time.Hour)
	po := srv.AddPayout(stripetest.Payout{})
	if err := srv.SetPayoutStatus(po, stripe.PayoutStatusPaid); err != nil {
		t.Fatal(err)
	}
	var ledger tieout.MemoryLedger // Stripe's fee is 2.9% + 30: 320 on 100.00, 610 on 200.00
	ledger.Book(tieout.Booked{Kind: tieout.KindPayment, ID: right, Amount: 10000, Currency: "usd", Basis: tieout.Presentment, Fee: 320, HasFee: true},
		tieout.Booked{Kind: tieout.KindPayment, ID: wrong, Amount: 20000, Currency: "usd", Basis: tieout.Presentment, Fee: 600, HasFee: true})
	for _, fees := range []bool{false, true} {
		s := memstore.New[string, string](memstore.Options{Now: clk.now})
		st, err := tieout.NewStep(tieout.StepConfig{Job: job, Lane: "sweep", Lister: newLister(t, srv, stripepayouts.Config{}),
			Ledger: &ledger, Sink: s, Policy: tieout.Policy{Fees: fees}})
		if err != nil {
			t.Fatal(err)
		}
		pass(t, st, 3)
		got := found(t, s)
		want := map[[2]string]int{}
		if fees {
			w := &world{t: t, srv: srv}
			want[[2]string{w.line(po, sourceIntent("charge", wrong)), tieout.KindFeeDiffers}] = 1
		}
		if !maps.Equal(got, want) {
			t.Errorf("fees booked %v: findings %v, want %v", fees, got, want)
		}
	}
}
