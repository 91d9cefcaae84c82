package tieout_test

import (
	"context"
	"fmt"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/tieout"
)

// payouts is a Lister over groups and members held in memory, one page of each.
type payouts struct {
	groups  []tieout.Group
	members map[string][]tieout.Member
}

func (p payouts) Groups(ctx context.Context, pos string) (tieout.GroupPage, error) {
	return tieout.GroupPage{Groups: p.groups, Next: "end", End: true}, nil
}

func (p payouts) Members(ctx context.Context, g tieout.Group, after string) (tieout.MemberPage, error) {
	return tieout.MemberPage{Members: p.members[g.ID]}, nil
}

// A payout of a USD charge, a EUR charge settled in USD, a refund made in the Dashboard and a
// fee, tied out against a ledger that booked the charges only: the refund is repaired, the
// rest holds.
func ExampleStep() {
	ctx := context.Background()
	po := tieout.Group{ID: "po_1", Status: "paid", State: tieout.GroupPaid, Amount: 941 + 1234 - 500 - 25, Currency: "usd", Itemized: true}
	lister := payouts{groups: []tieout.Group{po}, members: map[string][]tieout.Member{"po_1": {
		{ID: "txn_1", Type: "charge", Kind: tieout.KindPayment, SourceID: "ch_1", BookedID: "pi_1", Amount: 1000, Fee: 59, Net: 941,
			Currency: "usd", SourceAmount: 1000, SourceCurrency: "usd"},
		{ID: "txn_2", Type: "charge", Kind: tieout.KindPayment, SourceID: "ch_2", BookedID: "pi_2", Amount: 1234, Net: 1234,
			Currency: "usd", ExchangeRate: 1.234},
		{ID: "txn_3", Type: "refund", Kind: tieout.KindRefund, SourceID: "re_1", BookedID: "pi_1", Amount: -500, Net: -500,
			Currency: "usd", SourceAmount: -500, SourceCurrency: "usd"},
		{ID: "txn_4", Type: "stripe_fee", Kind: tieout.KindFee, Amount: -25, Net: -25, Currency: "usd"},
		{ID: "txn_5", Type: "payout", Kind: tieout.KindGroup, SourceID: "po_1", Amount: -po.Amount, Net: -po.Amount, Currency: "usd"},
	}}}
	var ledger tieout.MemoryLedger
	ledger.Book(
		tieout.Booked{Kind: tieout.KindPayment, ID: "pi_1", Amount: 1000, Currency: "usd", Basis: tieout.Presentment},
		tieout.Booked{Kind: tieout.KindPayment, ID: "pi_2", Amount: 1000, Currency: "eur", Basis: tieout.Presentment},
	)
	store := memstore.New[string, string](memstore.Options{})
	step, err := tieout.NewStep(tieout.StepConfig{Job: "payouts", Lane: "tieout", Lister: lister, Ledger: &ledger, Sink: store})
	if err != nil {
		panic(err)
	}
	rep, err := step.RunBatch(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("payouts %d, new findings %d, commands %d\n", rep.Scanned, rep.NewFindings, rep.NewCommands)
	findings, err := store.ListFindings(ctx, reconcile.FindingQuery{})
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		fmt.Printf("%s %s %s: %s\n", f.RecordID, f.Kind, f.Command, f.Detail)
	}
	// The payout's record, committed with the findings: what it paid against what its lines
	// add up to.
	recs, err := store.ListGroups(ctx, reconcile.GroupQuery{Job: "payouts"})
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		fmt.Printf("%s %s: paid %s, lines %s, held %v, %d of %d lines unmatched\n", r.ID, r.Status,
			reconcile.FormatAmount(r.Amount, r.Currency), reconcile.FormatAmount(r.Expected, r.Currency), r.Held, r.Unmatched, r.Members)
	}
	// Output:
	// payouts 1, new findings 1, commands 1
	// txn_3 unbooked_refund BookRefund: refund re_1 in payout po_1
	// po_1 paid: paid USD 16.50, lines USD 16.50, held true, 1 of 5 lines unmatched
}
