package stripeadapter_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripemoney"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// lookaheadGateway is a Gateway over w's fake Stripe whose look-ahead keeps what it listed for
// an hour, so that no test depends on how fast the machine runs; ttl -1 turns it off.
func (w *covWorld) lookaheadGateway(ttl time.Duration) *stripeadapter.ObjectGateway[*stripe.PaymentIntent] {
	w.t.Helper()
	g, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: w.srv.Key(), BaseURL: w.srv.URL(), ListCacheTTL: ttl}, stripeadapter.PaymentIntents())
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

// An outage costs two calls a batch whatever the look-ahead holds: answers listed by an
// earlier batch are answers, but not news that Stripe is up. 150 rows created a second apart
// and 50 created two hours later (still in the past), in batches of 100: the first batch's list shows rows 101-150's
// intents too. Then Stripe answers 503 to everything; the second batch has half its answers
// kept, lists for the other half (503), and must then ask one row alone and stop, not ask
// every row one by one.
func TestAnOutageCostsTwoCallsWhateverTheLookAheadHolds(t *testing.T) {
	t.Parallel()
	w := newCovWorld(t, 150, false)
	later := make([]time.Time, 50)
	for i := range later {
		later[i] = w.base.Add(2*time.Hour + time.Duration(i)*time.Second)
	}
	w.insertAt(later...)
	r, err := reconcile.New(w.config(w.lookaheadGateway(time.Hour), 100))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if rep, err := r.RunBatch(ctx); err != nil || rep.Verdicts[reconcile.InSync] != 100 {
		t.Fatalf("first batch: %+v, %v", rep, err)
	}
	for _, route := range []stripetest.Route{stripetest.RetrievePaymentIntent, stripetest.ListPaymentIntents} {
		w.srv.Inject(route, stripetest.Fault{Status: http.StatusServiceUnavailable})
	}
	w.srv.ResetLog()
	rep, err := r.RunBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	calls := w.srv.Requests(stripetest.ListPaymentIntents) + w.srv.Requests(stripetest.RetrievePaymentIntent)
	if calls != 2 || rep.GatewayCalls != 2 || !rep.Unavailable {
		t.Fatalf("outage batch: %d requests, report %+v; want 2 calls (the list and one retrieve) and Unavailable", calls, rep)
	}
	// The rows the look-ahead answered are verified (their answers are this cycle's); the row
	// asked alone is Unverifiable, and the cursor stops after it.
	if rep.Scanned != 51 || rep.Verdicts[reconcile.InSync] != 50 || rep.Verdicts[reconcile.Unverifiable] != 1 {
		t.Fatalf("outage batch: %+v; want the 50 kept answers in sync and one row unverifiable", rep)
	}
	if pos := w.cursorPosition("sweep"); pos != 151 {
		t.Fatalf("the cursor is at %d, want 151", pos)
	}
}

// The same for the money gateway, whose kept intents may need a disputes call each: when the
// list has failed, none is made; when the look-ahead answered every row, so that the first
// call is a disputes call, none after it fails. The outage costs two calls.
func TestAnOutageCostsTwoCallsWhateverTheLookAheadHoldsOfDisputedPayments(t *testing.T) {
	t.Parallel()
	for name, listed := range map[string]bool{"half the rows to list": true, "every row kept": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newCovWorld(t, 150, false)
			if listed {
				later := make([]time.Time, 50)
				for i := range later {
					later[i] = w.base.Add(2*time.Hour + time.Duration(i)*time.Second)
				}
				w.insertAt(later...)
			}
			// Rows 101-150's payments are disputed, their outcome still open: each costs a
			// disputes call when it is judged.
			var ids []string
			if err := w.pool.QueryRow(context.Background(), `SELECT array_agg(external_id ORDER BY id) FROM payments WHERE id BETWEEN 101 AND 150`).Scan(&ids); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				if err := w.srv.SetStatus(id, stripe.PaymentIntentStatusSucceeded); err != nil {
					t.Fatal(err)
				}
				if _, err := w.srv.Dispute(id, 0, stripe.DisputeStatusNeedsResponse, w.base.Add(7*24*time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			inSync := reconcile.ClassifierFunc[string, *stripepolicy.Payment](func(string, *stripepolicy.Payment) reconcile.Decision {
				return reconcile.Decision{Verdict: reconcile.InSync}
			})
			payments, err := stripemoney.New(w.lookaheadGateway(time.Hour), stripemoney.Config{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := reconcile.New(reconcile.Config[string, *stripepolicy.Payment]{Job: "sweep", Source: w.store, Sink: w.store,
				Gateway: payments, Classifier: inSync, BatchSize: 100,
				LocalState: func(s string) string { return s }, ExternalState: func(p *stripepolicy.Payment) string { return string(p.Intent.Status) }})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if rep, err := r.RunBatch(ctx); err != nil || rep.Verdicts[reconcile.InSync] != 100 {
				t.Fatalf("first batch: %+v, %v", rep, err)
			}
			for _, route := range []stripetest.Route{stripetest.RetrievePaymentIntent, stripetest.ListPaymentIntents, stripetest.ListDisputes} {
				w.srv.Inject(route, stripetest.Fault{Status: http.StatusServiceUnavailable})
			}
			w.srv.ResetLog()
			rep, err := r.RunBatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if calls := len(w.srv.Log()); calls != 2 || rep.GatewayCalls != 2 || !rep.Unavailable || rep.Scanned != 1 {
				t.Fatalf("outage batch: %d requests, report %+v; want 2 calls, Unavailable, the row asked alone committed", calls, rep)
			}
		})
	}
}
