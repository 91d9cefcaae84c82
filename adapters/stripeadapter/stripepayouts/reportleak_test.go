package stripepayouts_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/leaktest"
)

// A report path ended every way (a run that never finishes within the step's deadline, a
// download that hangs until the step's context ends, a step cancelled while it waits) leaves
// no goroutine behind once the server is gone.
func TestTheReportPathLeaksNoGoroutine(t *testing.T) {
	defer leaktest.VerifyNone(t, leaktest.IgnoreCurrent())
	w := newWorld(t)
	defer w.srv.Close() // before VerifyNone, deferred first: its connections end
	s := memstore.New[string, string](memstore.Options{Now: w.clk.now})
	ledger := &ledgerRef{}
	ledger.set(w.memLedger())
	l := reportLister(t, w.srv, stripepayouts.ReportOptions{}, nil)
	run := func(lane string, d time.Duration, cancel bool) error {
		ctx, stop := context.WithTimeout(context.Background(), d)
		defer stop()
		if cancel {
			time.AfterFunc(100*time.Millisecond, stop)
		}
		_, err := step(t, lane, l, ledger, s).RunBatch(ctx)
		return err
	}
	// Never finishes: the step waits half its time, then lists its page.
	w.srv.SetReporting(stripetest.Reporting{DataAvailableEnd: t0.Add(365 * 24 * time.Hour), Polls: 1 << 20})
	if err := run("never", 400*time.Millisecond, false); err != nil {
		t.Fatalf("a run that never finishes: %v", err)
	}
	// Cancelled while it waits for the run.
	if err := run("cancelled", time.Minute, true); !errors.Is(err, context.Canceled) {
		t.Errorf("a step cancelled while it waits: %v", err)
	}
	// A download that hangs: the step's deadline ends it.
	w.srv.SetReporting(stripetest.Reporting{DataAvailableEnd: t0.Add(365 * 24 * time.Hour)})
	w.srv.Inject(stripetest.DownloadFile, stripetest.Fault{Hang: true})
	l = reportLister(t, w.srv, stripepayouts.ReportOptions{}, nil) // not the pending run above
	if err := run("hangs", 300*time.Millisecond, false); err == nil {
		t.Error("a hanging download: no error")
	}
}
