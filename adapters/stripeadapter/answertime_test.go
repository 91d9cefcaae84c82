package stripeadapter_test

import (
	"context"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// lookaheadGateway is a Gateway over w's fake Stripe whose look-ahead keeps what it listed for
// an hour, so that no test depends on how fast the machine runs; ttl -1 turns it off.
func (w *covWorld) lookaheadGateway(ttl time.Duration) *stripeadapter.Gateway {
	w.t.Helper()
	g, err := stripeadapter.NewGateway(stripeadapter.GatewayConfig{Key: w.srv.Key(), BaseURL: w.srv.URL(), ListCacheTTL: ttl})
	if err != nil {
		w.t.Fatal(err)
	}
	return g
}

// reversed inserts n rows whose intents were created in the opposite order of their keys: the
// first row's intent is the newest.
func (w *covWorld) reversed(n int) []string {
	w.t.Helper()
	times := make([]time.Time, n)
	for i := range times {
		times[i] = w.base.Add(time.Duration(n-i) * time.Second)
	}
	w.insertAt(times...)
	var ids []string
	if err := w.pool.QueryRow(context.Background(), `SELECT array_agg(external_id ORDER BY id) FROM payments`).Scan(&ids); err != nil {
		w.t.Fatal(err)
	}
	return ids
}

// A cycle judges no row on an answer obtained before it started. 200 rows whose intents were
// created in the opposite order of their keys, in batches of 100: the first cycle's second
// batch lists the first batch's intents again (they are the newest in its window), and the
// look-ahead keeps them. Then every payment changes at Stripe, after the cycle ended; the next
// cycle must see all 200 changes, as it does without the look-ahead, not judge its first batch
// on the first cycle's listing.
func TestANewCycleIsNotJudgedOnThePreviousCyclesListing(t *testing.T) {
	t.Parallel()
	for name, ttl := range map[string]time.Duration{"look-ahead on": time.Hour, "look-ahead off": -1} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newCovWorld(t, 0, false)
			ids := w.reversed(200)
			r, err := reconcile.New(w.config(w.lookaheadGateway(ttl), 100))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for run := 0; ; run++ {
				rep, err := r.RunBatch(ctx)
				if err != nil || rep.Verdicts[reconcile.InSync] != rep.Scanned {
					t.Fatalf("first cycle, run %d: %+v, %v; want every row in sync", run, rep, err)
				}
				if rep.Wrapped {
					break
				}
			}
			for _, id := range ids {
				if err := w.srv.SetStatus(id, stripe.PaymentIntentStatusSucceeded); err != nil {
					t.Fatal(err)
				}
			}
			found := 0
			for run := 0; ; run++ {
				rep, err := r.RunBatch(ctx)
				if err != nil {
					t.Fatalf("second cycle, run %d: %v", run, err)
				}
				found += rep.Verdicts[reconcile.Repairable]
				if rep.Wrapped {
					break
				}
			}
			if found != 200 {
				t.Fatalf("the second cycle found %d of the 200 payments that succeeded at Stripe after the first ended", found)
			}
		})
	}
}

// A row's verified time is never later than the moment Stripe gave the answer it was judged
// on. 200 rows created in order, in batches of 100: the first batch's list shows the second
// batch's intents too, and the look-ahead answers the second batch without a call. Every
// verified time must then be no later than the last request Stripe received, not the second
// batch's commit.
func TestAVerifiedTimeIsNoLaterThanTheAnswer(t *testing.T) {
	t.Parallel()
	w := newCovWorld(t, 200, false)
	cfg := w.config(w.lookaheadGateway(time.Hour), 100)
	reps := reconciletest.Cycle(t, cfg, 3)
	if reps[1].Scanned != 100 || reps[1].GatewayCalls != 0 {
		t.Fatalf("second batch: %+v; want its 100 rows answered by the look-ahead, without a call", reps[1])
	}
	log := w.srv.Log()
	last := log[len(log)-1].Time
	var late int
	var latest time.Time
	if err := w.pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE verified_at > $1), max(verified_at)
		FROM reconcile_observations WHERE job = 'sweep'`, last).Scan(&late, &latest); err != nil {
		t.Fatal(err)
	}
	if late > 0 {
		t.Fatalf("%d rows have a verified time after Stripe's last answer (%v): the latest is %v, %v later",
			late, last, latest, latest.Sub(last))
	}
}
