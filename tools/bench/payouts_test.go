package main

import (
	"io"
	"testing"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// A small payouts bench finds every drift it planted, once, and nothing else, and counts
// every request the lister made: one payout list per ten payouts plus one, and one
// transaction list per hundred lines of each itemized payout.
func TestThePayoutsBenchFindsWhatItPlanted(t *testing.T) {
	pool, schema := pgtest.PoolSchema(t)
	res, err := runPayouts(t.Context(), pool, schema, payoutsOptions{Payouts: 24, Transactions: 24 * 150, PlantEvery: 2, Progress: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if res.Planted == 0 || res.Found != res.Planted || res.FalsePositives != 0 || res.Duplicates != 0 {
		t.Errorf("planted %d, found %d, false positives %d, duplicates %d", res.Planted, res.Found, res.FalsePositives, res.Duplicates)
	}
	if res.Calls != res.PayoutListCalls+res.TransactionListCalls || res.PayoutListCalls != 3 {
		t.Errorf("calls %d: %d payout lists (want 3), %d transaction lists", res.Calls, res.PayoutListCalls, res.TransactionListCalls)
	}
	if res.BalanceTransactions != 24*150 {
		t.Errorf("%d balance transactions listed, want %d", res.BalanceTransactions, 24*150)
	}
}
