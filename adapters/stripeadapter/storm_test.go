package stripeadapter_test

// End-to-end regression tests of rate limits and outages (engine invariant 8): pgstore over
// real PostgreSQL, the Stripe gateway over HTTP against stripetest answering 429 or 503.

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// cursorPosition is the job's cursor as a row id; 0 at the start of a cycle.
func (w *covWorld) cursorPosition(job string) int64 {
	w.t.Helper()
	var pos int64
	if err := w.pool.QueryRow(context.Background(), `SELECT coalesce((SELECT (position->>0)::bigint FROM reconcile_cursors WHERE job = $1), 0)`, job).Scan(&pos); err != nil {
		w.t.Fatal(err)
	}
	return pos
}

// notAskedBehindCursor counts the rows at or before the cursor that were not verified since
// the cycle began: rows the cursor walked over without asking Stripe.
func (w *covWorld) notAskedBehindCursor(job string, c cycleStart) int {
	w.t.Helper()
	var n int
	if err := w.pool.QueryRow(context.Background(), `SELECT count(*) FROM payments p WHERE p.id <= $1
		AND NOT EXISTS (SELECT 1 FROM reconcile_observations o WHERE o.job = $2 AND o.record_id = p.id::text AND o.verified_at >= $3)`,
		w.cursorPosition(job), job, c.at).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

func TestARateLimitStormDelaysRowsAndNeverSkipsThem(t *testing.T) {
	t.Parallel()
	for _, perObject := range []bool{false, true} {
		name := "bulk"
		if perObject {
			name = "per object"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const batch, perRun, stormRuns = 200, 20, 5
			w := newCovWorld(t, 500, false)
			ctx := context.Background()
			// Without the look-ahead: its cache, fresh from the first batch's list, would answer
			// the storm's first batches without a call (rightly), and this test is about calls.
			g, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: w.srv.Key(), BaseURL: w.srv.URL(), ListCacheTTL: -1}, stripeadapter.PaymentIntents())
			if err != nil {
				t.Fatal(err)
			}
			var gw reconcile.Gateway[*stripe.PaymentIntent] = g
			if perObject {
				gw = reconcile.PerObject(gw)
			}
			r, err := reconcile.New(w.config(gw, batch))
			if err != nil {
				t.Fatal(err)
			}
			policy := reconcile.HealthPolicy{LagSLO: 24 * time.Hour}
			start := w.startCycle()
			run := func(i int) reconcile.Report {
				t.Helper()
				rep, err := r.RunBatch(ctx)
				if err != nil {
					t.Fatalf("run %d: %v", i, err)
				}
				if n := w.notAskedBehindCursor("sweep", start); n > 0 {
					t.Fatalf("run %d (%+v): the cursor (at %d) passed %d rows never asked in the cycle", i, rep, w.cursorPosition("sweep"), n)
				}
				w.add(perRun)
				return rep
			}

			// One good batch, then every retrieve and list answers 429.
			if rep := run(0); rep.Scanned != batch || rep.Wrapped {
				t.Fatalf("first batch: %+v", rep)
			}
			for _, route := range []stripetest.Route{stripetest.RetrievePaymentIntent, stripetest.ListPaymentIntents} {
				w.srv.Inject(route, stripetest.Fault{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"1"}}})
			}
			for i := 1; i <= stormRuns; i++ {
				rep := run(i)
				if !rep.RateLimited || rep.Wrapped || rep.Scanned != 0 {
					t.Fatalf("storm run %d: %+v, want rate limited with no row committed", i, rep)
				}
				st := w.status("sweep")
				if st.CyclesCompleted != 0 {
					t.Fatalf("storm run %d: %d cycles completed while rows were never asked", i, st.CyclesCompleted)
				}
				if h := reconcile.EvaluateHealth(st, policy); h.OK {
					t.Fatalf("storm run %d: health looks fine during a rate-limit storm: %s", i, h)
				}
			}
			if pos := w.cursorPosition("sweep"); pos != batch {
				t.Fatalf("after the storm the cursor is at %d, want %d (where the storm found it)", pos, batch)
			}

			// The storm ends: the cycle completes covering every row present at its start, and
			// so does the next.
			w.srv.ClearFaults()
			for cycle := 0; cycle < 2; cycle++ {
				for i := 0; ; i++ {
					if i == 10 {
						t.Fatalf("cycle %d did not complete in 10 runs after the storm", cycle)
					}
					rep := run(stormRuns + 1 + i)
					if rep.RateLimited || rep.Verdicts[reconcile.Unverifiable] > 0 {
						t.Fatalf("after the storm: %+v", rep)
					}
					if rep.Wrapped {
						break
					}
				}
				w.covered("sweep", start, cycle)
				if h := reconcile.EvaluateHealth(w.status("sweep"), policy); !h.OK {
					t.Fatalf("cycle %d after the storm: %s", cycle, h)
				}
				start = w.startCycle()
			}
			if st := w.status("sweep"); st.CyclesCompleted != 2 {
				t.Fatalf("%d cycles completed, want 2", st.CyclesCompleted)
			}
		})
	}
}

// A 429 in the middle of a batch stops the cursor just before the row it refused, and the
// next batch asks that row first.
func TestARateLimitMidBatchStopsTheCursorBeforeTheRowNotAsked(t *testing.T) {
	t.Parallel()
	w := newCovWorld(t, 300, false)
	ctx := context.Background()
	r, err := reconcile.New(w.config(reconcile.PerObject(w.gw), 100))
	if err != nil {
		t.Fatal(err)
	}
	var pi string
	if err := w.pool.QueryRow(ctx, `SELECT external_id FROM payments WHERE id = 150`).Scan(&pi); err != nil {
		t.Fatal(err)
	}
	w.srv.Inject(stripetest.RetrievePaymentIntent, stripetest.Fault{Status: http.StatusTooManyRequests, ID: pi, Times: 1})
	start := w.startCycle()
	var reps []reconcile.Report
	for i := 0; ; i++ {
		if i == 10 {
			t.Fatalf("the cycle did not complete in 10 runs: %+v", reps)
		}
		rep, err := r.RunBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, rep)
		if n := w.notAskedBehindCursor("sweep", start); n > 0 {
			t.Fatalf("run %d (%+v): the cursor (at %d) passed %d rows never asked", i, rep, w.cursorPosition("sweep"), n)
		}
		if i == 1 {
			if pos := w.cursorPosition("sweep"); !rep.RateLimited || pos != 149 {
				t.Fatalf("the rate-limited batch: %+v, cursor at %d; want rate limited and the cursor at 149", rep, pos)
			}
		}
		if rep.Wrapped {
			break
		}
	}
	w.covered("sweep", start, 0)
	if n := w.srv.Requests(stripetest.RetrievePaymentIntent); n != 301 {
		t.Fatalf("%d retrieves, want 301 (every row once, the refused one twice)", n)
	}
}
