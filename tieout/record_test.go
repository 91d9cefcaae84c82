package tieout

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
)

// pendingLister is a pagedLister whose page also lists groups whose members are not final.
type pendingLister struct {
	pagedLister
	pending []Group
}

func (l *pendingLister) Groups(ctx context.Context, pos string) (GroupPage, error) {
	p, err := l.pagedLister.Groups(ctx, pos)
	p.Pending = l.pending
	return p, err
}

// laneOnly hides a store's other abilities: a LaneSink that records no groups.
type laneOnly struct{ reconcile.LaneSink }

func TestAStepRecordsEachPayoutTiedOutAndEachSeenPendingWithItsFindings(t *testing.T) {
	ctx := context.Background()
	// po_1: three refunds, the last not booked; it holds. po_2: pays 10.00, its line 9.00.
	// po_3: a manual payout. po_4: not final yet, and po_1 listed pending too.
	g1, ms1, bs := refunds(3)
	g2 := payout(1000)
	g2.ID = "po_2"
	ms2 := []Member{charge("txn_c", "pi_c", 900, 0)}
	g3 := payout(500)
	g3.ID, g3.Itemized = "po_3", false
	g4 := payout(700)
	g4.ID, g4.Status, g4.State = "po_4", "in_transit", GroupPending
	lister := &pendingLister{pagedLister: pagedLister{groups: []Group{g1, g2, g3},
		members: map[string][]Member{g1.ID: ms1, g2.ID: ms2}, perPage: 100}, pending: []Group{g4, g1}}
	var ledger MemoryLedger
	ledger.Book(append(bs, book(KindPayment, "pi_c", 900))...)
	store := memstore.New[string, string](memstore.Options{})
	step, err := NewStep(StepConfig{Job: "payouts", Lane: "tieout", Lister: lister, Ledger: &ledger, Sink: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := step.RunBatch(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := store.ListGroups(ctx, reconcile.GroupQuery{})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]reconcile.GroupRecord{}
	for _, r := range got {
		by[r.ID] = r
	}
	if len(got) != 4 {
		t.Fatalf("records = %+v; want po_1 to po_4", got)
	}
	type want struct {
		tied, known, held            bool
		expected                     int64
		members, findings, unmatched int
		records                      []string
	}
	for id, w := range map[string]want{
		"po_1": {tied: true, known: true, held: true, expected: -300, members: 4, findings: 1, unmatched: 1, records: []string{"txn_2"}},
		"po_2": {tied: true, known: true, expected: 900, members: 1, findings: 1, records: []string{"po_2"}},
		"po_3": {tied: true, findings: 1, records: []string{"po_3"}},
		"po_4": {},
	} {
		r := by[id]
		if r.TiedOut != w.tied || r.ExpectedKnown != w.known || r.Held != w.held || r.Expected != w.expected ||
			r.Members != w.members || r.Findings != w.findings || r.Unmatched != w.unmatched || !slices.Equal(r.Records, w.records) {
			t.Errorf("%s = %+v; want %+v", id, r, w)
		}
	}
	if r := by["po_4"]; r.Status != "in_transit" || r.Amount != 700 || r.Job != "payouts" || r.Lane != "tieout" {
		t.Errorf("pending po_4 = %+v", r)
	}

	// A sink that records no groups still gets the findings and the position.
	plain := memstore.New[string, string](memstore.Options{})
	step, err = NewStep(StepConfig{Job: "payouts", Lane: "tieout", Lister: lister, Ledger: &ledger, Sink: laneOnly{plain}})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := step.RunBatch(ctx); err != nil || rep.NewFindings != 3 {
		t.Fatalf("step over a plain LaneSink = %+v, %v", rep, err)
	}
	if gs, _ := plain.ListGroups(ctx, reconcile.GroupQuery{}); len(gs) != 0 {
		t.Fatalf("records through a plain LaneSink = %+v", gs)
	}
}

func TestAStepRecordsHostilePayoutsAsAStoreKeepsThemWithTheOthers(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("p", 10_000)
	var groups []Group
	for _, id := range []string{"po_\x00nul", "po_\xff\xfe", long, "", "po_ok"} {
		g := payout(0)
		g.ID, g.Status, g.Account, g.Currency = id, "paid\x00"+long, "acct_\xff", "usd"
		groups = append(groups, g)
	}
	lister := &pagedLister{groups: groups, members: map[string][]Member{}, perPage: 100}
	store := memstore.New[string, string](memstore.Options{})
	step, err := NewStep(StepConfig{Job: "payouts", Lane: "tieout", Lister: lister, Ledger: &MemoryLedger{}, Sink: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := step.RunBatch(ctx); err != nil {
		t.Fatalf("a step over hostile payouts: %v", err)
	}
	got, _ := store.ListGroups(ctx, reconcile.GroupQuery{})
	var ids []string
	for _, r := range got {
		if err := reconcile.CheckGroupRecord(r); err != nil {
			t.Errorf("record %.30q: %v", r.ID, err)
		}
		if len(r.ID) > 20 {
			ids = append(ids, "long "+strconv.Itoa(len(r.ID)))
			continue
		}
		ids = append(ids, r.ID)
	}
	// The one without an id is not recorded; the others are, as storable text.
	if want := []string{"po_ok", "long 1000", "po_\uFFFD", "po_\uFFFDnul"}; !slices.Equal(ids, want) {
		t.Errorf("records = %q; want %q", ids, want)
	}
	if cur, _ := store.ReadLane(ctx, "payouts", "tieout"); cur.Position == "" {
		t.Error("the step's position was not committed")
	}
}
