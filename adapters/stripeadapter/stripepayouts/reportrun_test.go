package stripepayouts_test

import (
	"context"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// A step that fails after its page's report run was created (a rate limit on the retrieve or
// the download, an outage) is redone with that run, not a new one: Stripe runs each report
// once however often the step is deferred. The findings are listing's.
func TestAStepRedoneReusesItsReportRun(t *testing.T) {
	for _, route := range []stripetest.Route{stripetest.RetrieveReportRun, stripetest.DownloadFile} {
		for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
			t.Run(string(route)+"/"+http.StatusText(status), func(t *testing.T) {
				t.Parallel()
				w := newWorld(t)
				w.srv.SetReporting(stripetest.Reporting{DataAvailableEnd: t0.Add(365 * 24 * time.Hour), Polls: 1})
				w.srv.ResetLog()
				s := memstore.New[string, string](memstore.Options{Now: w.clk.now})
				ledger := &ledgerRef{}
				ledger.set(w.memLedger())
				st := step(t, "sweep", reportLister(t, w.srv, stripepayouts.ReportOptions{}, nil), ledger, s)
				w.srv.Inject(route, stripetest.Fault{Status: status, Times: 2})
				for range 2 {
					if rep, err := st.RunBatch(context.Background()); err == nil && !rep.Deferred {
						t.Fatalf("a %d on %s: %+v", status, route, rep)
					}
				}
				pass(t, st, 10)
				if n := w.srv.Requests(stripetest.CreateReportRun); n != 1 {
					t.Errorf("%d report runs created for one page, want 1", n)
				}
				if n := w.srv.Requests(stripetest.ListBalanceTransactions); n != 0 {
					t.Errorf("%d listings", n)
				}
				viaList := sweepTwice(t, w, newLister(t, w.srv, stripepayouts.Config{PerPage: 2}), "list")
				if got := found(t, s); !maps.Equal(got, viaList) {
					t.Errorf("through the report %v\nthrough listing %v", got, viaList)
				}
			})
		}
	}
}
