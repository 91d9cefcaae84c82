package main

import (
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

func TestTheStoreFindsAPaymentsFindingsByOrderID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, stripepolicy.CommandApplyRefund, 2)
	for _, pay := range f.p.payments {
		got, err := f.store.ListFindings(t.Context(), reconcile.FindingQuery{Search: pay.orderID, State: reconcile.FindingsAll})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ExternalID != pay.externalID || got[0].Kind != stripepolicy.KindMissedPartialRefund {
			t.Errorf("findings of order %s: %+v, want its payment's one missed_partial_refund", pay.orderID, got)
		}
	}
	if got, err := f.store.ListFindings(t.Context(), reconcile.FindingQuery{Search: "ord_999999"}); err != nil || len(got) != 0 {
		t.Errorf("findings of an order no payment has: %+v, %v; want none", got, err)
	}
}
