package stripepayouts_test

import (
	"context"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/tieout"
)

// During a rolling deploy an old binary (per-payout listing) and a new one (reports) tie out
// the same job, lane and store, batch by batch in turn, and each also sweeps the job again in
// a lane of its own; again in new lanes once p1 failed (a sweep does not go back): every
// planted drift is found once, nothing else, never twice.
func TestOldAndNewBinariesTieOutOneJobOnce(t *testing.T) {
	w := newWorld(t)
	w.srv.SetReporting(stripetest.Reporting{DataAvailableEnd: t0.Add(365 * 24 * time.Hour), Polls: 1})
	s := memstore.New[string, string](memstore.Options{Now: w.clk.now})
	ledger := &ledgerRef{}
	byList := newLister(t, w.srv, stripepayouts.Config{PerPage: 2})
	byReport := reportLister(t, w.srv, stripepayouts.ReportOptions{}, nil)
	inTurn := func(round string) {
		t.Helper()
		ledger.set(w.memLedger())
		steps := []*tieout.Step{step(t, "sweep"+round, byList, ledger, s), step(t, "sweep"+round, byReport, ledger, s)}
		for i := 0; ; i++ {
			if i == 20 {
				t.Fatal("no end of pass in 20 batches")
			}
			rep, err := steps[i%2].RunBatch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Wrapped {
				break
			}
		}
		pass(t, step(t, "old"+round, byList, ledger, s), 10)
		pass(t, step(t, "new"+round, byReport, ledger, s), 10)
	}
	inTurn("1")
	w.later() // p1 fails after it was tied out: the lanes of a second round find it
	inTurn("2")
	unpaid(t, w, ledger, s)
	checkFound(t, s, w.want)
	if w.srv.Requests(stripetest.CreateReportRun) == 0 {
		t.Error("the new binary ran no report")
	}
}
