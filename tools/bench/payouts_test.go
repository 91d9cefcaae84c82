package main

import (
	"io"
	"testing"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// A small payouts bench finds every drift it planted, once, and nothing else, itemizing by
// listing and by report, and counts every request the lister made: one payout list per ten
// payouts plus one; by listing, one transaction list per hundred lines of each itemized payout;
// by report, a report type read, then a run created, polled once and downloaded per page, and
// the lines of the payouts no report covers (those that failed after paid) listed.
func TestThePayoutsBenchFindsWhatItPlanted(t *testing.T) {
	for _, itemize := range []string{"list", "report"} {
		pool, schema := pgtest.PoolSchema(t)
		res, err := runPayouts(t.Context(), pool, schema, payoutsOptions{Payouts: 24, Transactions: 24 * 150, PlantEvery: 2,
			Itemize: itemize, Progress: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		if res.Planted == 0 || res.Found != res.Planted || res.FalsePositives != 0 || res.Duplicates != 0 {
			t.Errorf("%s: planted %d, found %d, false positives %d, duplicates %d", itemize, res.Planted, res.Found, res.FalsePositives, res.Duplicates)
		}
		if res.Calls != res.PayoutListCalls+res.TransactionListCalls+res.ReportCalls || res.PayoutListCalls != 3 {
			t.Errorf("%s: calls %d: %d payout lists (want 3), %d transaction lists, %d report calls", itemize, res.Calls, res.PayoutListCalls,
				res.TransactionListCalls, res.ReportCalls)
		}
		// Report: 3 pages of 10; listed, 150 lines in 2 calls each, the payout that failed after
		// paid (j = 18) and the one whose lines do not sum to it (j = 16), which no report decides.
		if itemize == "report" && (res.ReportCalls != 1+3*3 || res.TransactionListCalls != 4) {
			t.Errorf("report: %d report calls (want 10), %d transaction lists (want 4)", res.ReportCalls, res.TransactionListCalls)
		}
		if res.BalanceTransactions != 24*150 {
			t.Errorf("%s: %d balance transactions listed, want %d", itemize, res.BalanceTransactions, 24*150)
		}
	}
}
