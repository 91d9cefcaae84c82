package main

import (
	"maps"
	"testing"

	"github.com/reconcilekit/reconcile"
)

// Two findings on one row are two findings: the bulk and per-object cycles are compared on
// both, and neither hides the other.
func TestMoneyRunKeepsEveryFindingOfARow(t *testing.T) {
	partial := reconcile.Finding{RecordID: "7", Kind: "partial_capture", Detail: "Stripe captured USD 6.00 of USD 10.00"}
	lost := reconcile.Finding{RecordID: "7", Kind: "dispute_lost", Detail: "dispute dp_1 was lost"}
	won := reconcile.Finding{RecordID: "7", Kind: "dispute_won", Detail: "dispute dp_1 was won"}

	a, b := newMoneyRun(), newMoneyRun()
	a.record(partial)
	a.record(lost)
	b.record(partial)
	b.record(won)
	if len(a.findings) != 2 {
		t.Errorf("a row's two findings counted as %d", len(a.findings))
	}
	if maps.Equal(a.findings, b.findings) {
		t.Error("runs that differ in a row's second finding compare equal")
	}
	c := newMoneyRun()
	c.record(lost)
	c.record(partial)
	if !maps.Equal(a.findings, c.findings) {
		t.Error("the same findings, recorded in another order, compare unequal")
	}
}
