package stripepayouts_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// A report file that echoes the API key in a cell that is served (an id column, a reporting
// category: the fake's key is letters and underscores, shaped as either) puts it in no
// finding, stored row or log: the payout is listed one by one instead.
func TestAReportEchoingTheKeyStoresItNowhere(t *testing.T) {
	for _, col := range []string{"source_id", "charge_id", "payment_intent_id", "reporting_category"} {
		t.Run(col, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			key := w.srv.Key()
			w.srv.SetReporting(stripetest.Reporting{DataAvailableEnd: t0.Add(365 * 24 * time.Hour),
				Contents: editRows(t, category("charge"), col, func(string) string { return key })})
			log := &logBuffer{}
			s := memstore.New[string, string](memstore.Options{Now: w.clk.now})
			ledger := &ledgerRef{}
			ledger.set(w.memLedger())
			pass(t, step(t, "report", reportLister(t, w.srv, stripepayouts.ReportOptions{}, log), ledger, s), 10)
			fs, err := s.ListFindings(context.Background(), reconcile.FindingQuery{Job: job, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				if text := fmt.Sprintf("%+v", f); strings.Contains(text, key) {
					t.Errorf("a finding holds the key: %s", text)
				}
			}
			if strings.Contains(log.String(), key) {
				t.Errorf("the log holds the key: %s", log.String())
			}
			if len(fs) == 0 {
				t.Error("no findings")
			}
		})
	}
}

// Listing, too, stores no key a list answer echoes as a line's source.
func TestAListingEchoingTheKeyStoresItNowhere(t *testing.T) {
	w := newWorld(t)
	key := w.srv.Key()
	w.srv.AddBalanceTransaction(stripetest.BalanceTransaction{Type: "mystery_credit", Amount: 100, Source: key, Payout: w.p1})
	s := memstore.New[string, string](memstore.Options{Now: w.clk.now})
	ledger := &ledgerRef{}
	ledger.set(w.memLedger())
	pass(t, step(t, "list", newLister(t, w.srv, stripepayouts.Config{PerPage: 2}), ledger, s), 10)
	fs, err := s.ListFindings(context.Background(), reconcile.FindingQuery{Job: job, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if text := fmt.Sprintf("%+v", f); strings.Contains(text, key) {
			t.Errorf("a finding holds the key: %s", text)
		}
	}
}
