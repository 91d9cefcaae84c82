package stripeadapter_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// An outage (every request answered 503) costs a batch two calls, the failed bulk list and one
// retrieve (or two retrieves without the bulk path), commits nothing, and shows in the job's
// status and health; when it ends, the batch goes through.
func TestAnOutageStopsTheBatchAfterTwoCallsAndShowsInHealth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		perObject   bool
		concurrency int
	}{{"bulk", false, 4}, {"per object", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newCovWorld(t, 300, false)
			ctx := context.Background()
			// Without the look-ahead, whose cache from the first batch's list would answer the
			// next batch without a call.
			g, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: w.srv.Key(), BaseURL: w.srv.URL(), ListCacheTTL: -1}, stripeadapter.PaymentIntents())
			if err != nil {
				t.Fatal(err)
			}
			var gw reconcile.Gateway[*stripe.PaymentIntent] = g
			if tc.perObject {
				gw = reconcile.PerObject(gw)
			}
			cfg := w.config(gw, 100)
			cfg.Concurrency = tc.concurrency
			r, err := reconcile.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep, err := r.RunBatch(ctx); err != nil || rep.Scanned != 100 {
				t.Fatalf("first batch: %+v, %v", rep, err)
			}
			for _, route := range []stripetest.Route{stripetest.RetrievePaymentIntent, stripetest.ListPaymentIntents, stripetest.ListEvents, stripetest.RetrieveEvent} {
				w.srv.Inject(route, stripetest.Fault{Status: http.StatusServiceUnavailable})
			}
			pos := int64(100)
			for i := range 3 {
				w.srv.ResetLog()
				rep, err := r.RunBatch(ctx)
				if err != nil {
					t.Fatalf("outage batch %d: %v", i, err)
				}
				calls := w.srv.Requests(stripetest.RetrievePaymentIntent) + w.srv.Requests(stripetest.ListPaymentIntents)
				want := map[bool][2]int{false: {1, 1}, true: {0, 2}}[tc.perObject] // lists, retrieves
				if calls != 2 || rep.GatewayCalls != 2 || w.srv.Requests(stripetest.ListPaymentIntents) != want[0] ||
					!rep.Unavailable || rep.Scanned > 2 || rep.Verdicts[reconcile.Unverifiable] != rep.Scanned {
					t.Fatalf("outage batch %d: %d requests (%d lists), report %+v; want %d list and %d retrieves, Unavailable, at most the rows asked committed, Unverifiable",
						i, calls, w.srv.Requests(stripetest.ListPaymentIntents), rep, want[0], want[1])
				}
				// The rows asked are Unverifiable (their lag grows); the cursor stops before the
				// first row not asked.
				pos += int64(rep.Scanned)
				if got := w.cursorPosition("sweep"); got != pos {
					t.Fatalf("outage batch %d moved the cursor to %d, want %d", i, got, pos)
				}
				st := w.status("sweep")
				if st.LastFailureAt.IsZero() || !strings.Contains(st.LastFailure, "unavailable") {
					t.Fatalf("outage batch %d: status records no outage: %q at %v", i, st.LastFailure, st.LastFailureAt)
				}
				if h := reconcile.EvaluateHealth(st, reconcile.HealthPolicy{LagSLO: 24 * time.Hour}); h.OK {
					t.Fatalf("outage batch %d: health looks fine during an outage: %s", i, h)
				}
			}
			w.srv.ClearFaults()
			rep, err := r.RunBatch(ctx)
			if err != nil || rep.Scanned != 100 || rep.Verdicts[reconcile.InSync] != 100 || rep.GatewayCalls == 0 {
				t.Fatalf("after the outage: %+v, %v", rep, err)
			}
			if h := reconcile.EvaluateHealth(w.status("sweep"), reconcile.HealthPolicy{LagSLO: 24 * time.Hour}); !h.OK {
				t.Fatalf("after the outage: %s", h)
			}
		})
	}
}
