package reconciletest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
)

// GroupStore is a store that records a tie-out step's groups with its findings and position,
// and reads them back for the console.
type GroupStore interface {
	reconcile.LaneSink
	reconcile.GroupSink
	reconcile.GroupReader
}

func groupStore(t testing.TB, f Fixture) GroupStore {
	t.Helper()
	s, ok := f.Store().(GroupStore)
	if !ok {
		t.Skipf("%T is not a reconcile.LaneSink, GroupSink and GroupReader: no group records", f.Store())
	}
	return s
}

// groupTests are the suite's cases for stores that record groups.
var groupTests = []struct {
	name string
	fn   func(t *testing.T, f Fixture)
}{
	{"a step's groups are recorded with its findings and position, and a commit on a moved position writes none of them", testGroupsAtomic},
	{"a group record that is not storable fails its commit whole, naming the group, and writes nothing", testGroupsRejected},
	{"a step redone, or a group listed twice, leaves one record per group under its first number", testGroupsRedone},
	{"a pending group never replaces its tied-out record; a tie-out replaces its pending one", testGroupsPending},
	{"group records are listed newest first by keyset, filtered by job, account, status and state, and counted", testGroupsList},
	{"hostile group values made storable are kept, and the other groups of the commit with them", testGroupsHostile},
	{"groups committed from several lanes at once are counted without going back and paged each once", testGroupsConcurrent},
	{"group records read on a cancelled context fail with the context's error", testGroupsCancelled},
}

// tiedGroup is a tied-out record of group id: findings of which unmatched about lines.
func tiedGroup(id string, amount, expected int64, findings, unmatched int) reconcile.GroupRecord {
	g := reconcile.GroupRecord{ID: id, Status: "paid", Amount: amount, Currency: "usd", TiedOut: true, Itemized: true,
		Expected: expected, ExpectedKnown: true, Members: 3, Findings: findings, Unmatched: unmatched, Held: amount == expected}
	for i := range unmatched {
		g.Records = append(g.Records, fmt.Sprintf("txn_%s_%d", id, i))
	}
	if findings > unmatched {
		g.Records = append(g.Records, id)
	}
	return g
}

// commitGroups commits one step of lane "payouts" of job with the groups and outcomes, from
// the lane's position as read.
func commitGroups(t testing.TB, s GroupStore, job, next string, groups []reconcile.GroupRecord, outcomes ...reconcile.Outcome) error {
	t.Helper()
	cur, err := s.ReadLane(context.Background(), job, "payouts")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.CommitGroups(context.Background(), reconcile.LaneCommit{Job: job, Lane: "payouts", Cursor: cur, Next: next,
		Outcomes: outcomes}, groups)
	return err
}

func lineFinding(record string) reconcile.Outcome {
	return reconcile.Outcome{RecordID: record, ExternalID: "ch_" + record, NotARow: true, Once: true,
		Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "unbooked_payment"}}
}

func listGroups(t testing.TB, s GroupStore, q reconcile.GroupQuery) []reconcile.GroupRecord {
	t.Helper()
	gs, err := s.ListGroups(context.Background(), q)
	if err != nil {
		t.Fatalf("ListGroups(%+v): %v", q, err)
	}
	return gs
}

func groupIDs(gs []reconcile.GroupRecord) []string {
	var ids []string
	for _, g := range gs {
		ids = append(ids, g.ID)
	}
	return ids
}

func testGroupsAtomic(t *testing.T, f Fixture) {
	s := groupStore(t, f)
	ctx := context.Background()
	stale, err := s.ReadLane(ctx, "payouts", "payouts")
	if err != nil {
		t.Fatal(err)
	}
	g := tiedGroup("po_1", 1000, 900, 1, 1)
	if err := commitGroups(t, s, "payouts", "p1", []reconcile.GroupRecord{g}, lineFinding("txn_po_1_0")); err != nil {
		t.Fatalf("CommitGroups: %v", err)
	}
	got := listGroups(t, s, reconcile.GroupQuery{})
	if len(got) != 1 {
		t.Fatalf("records after a commit = %+v; want po_1", got)
	}
	r := got[0]
	if r.Job != "payouts" || r.Lane != "payouts" || r.ID != "po_1" || r.Account != "" || r.Status != "paid" || r.Amount != 1000 ||
		r.Currency != "usd" || !r.TiedOut || !r.Itemized || r.Expected != 900 || !r.ExpectedKnown || r.Members != 3 ||
		r.Findings != 1 || r.Unmatched != 1 || r.Held || !slices.Equal(r.Records, []string{"txn_po_1_0"}) || r.Seq <= 0 ||
		r.SeenAt.IsZero() || r.TiedOutAt.IsZero() {
		t.Fatalf("record = %+v; want what was committed, numbered, with its times", r)
	}
	if one, err := s.Group(ctx, r.Seq); err != nil || one.ID != "po_1" || one.Seq != r.Seq {
		t.Fatalf("Group(%d) = %+v, %v; want po_1", r.Seq, one, err)
	}
	if _, err := s.Group(ctx, r.Seq+1000); !errors.Is(err, reconcile.ErrGroupNotFound) {
		t.Fatalf("Group of an unknown number = %v; want ErrGroupNotFound", err)
	}
	if fs := Findings(t, f.Reviewer(), "payouts"); len(fs) != 1 || fs[0].RecordID != "txn_po_1_0" {
		t.Fatalf("findings = %+v; want the line's", fs)
	}

	// A second step from the position read before the first: it lost the race.
	_, err = s.CommitGroups(ctx, reconcile.LaneCommit{Job: "payouts", Lane: "payouts", Cursor: stale, Next: "p9"},
		[]reconcile.GroupRecord{tiedGroup("po_2", 5, 5, 0, 0), tiedGroup("po_1", 1, 1, 0, 0)})
	if !errors.Is(err, reconcile.ErrConcurrentRun) {
		t.Fatalf("commit on a moved position = %v; want ErrConcurrentRun", err)
	}
	got = listGroups(t, s, reconcile.GroupQuery{})
	if len(got) != 1 || got[0].Amount != 1000 || got[0].Findings != 1 {
		t.Fatalf("records after a lost race = %+v; want po_1 as first committed", got)
	}
	if c, _ := s.ReadLane(ctx, "payouts", "payouts"); c.Position != "p1" {
		t.Fatalf("position after a lost race = %q; want p1", c.Position)
	}
}

func testGroupsRejected(t *testing.T, f Fixture) {
	s := groupStore(t, f)
	ctx := context.Background()
	for name, bad := range map[string]reconcile.GroupRecord{
		"an empty id":             {Status: "paid", Currency: "usd"},
		"a NUL in the id":         {ID: "po_\x00", Status: "paid", Currency: "usd"},
		"invalid UTF-8 in status": {ID: "po_x", Status: "paid\xff", Currency: "usd"},
		"a 10 KB id":              {ID: strings.Repeat("p", 10_000), Status: "paid", Currency: "usd"},
		"a 10 KB status":          {ID: "po_x", Status: strings.Repeat("s", 10_000), Currency: "usd"},
		"a record id with NUL":    {ID: "po_x", Status: "paid", Currency: "usd", Records: []string{"txn\x00"}},
	} {
		err := commitGroups(t, s, "payouts", "p1", []reconcile.GroupRecord{tiedGroup("po_ok", 10, 10, 0, 0), bad},
			lineFinding("txn_1"))
		if err == nil || !strings.Contains(err.Error(), "group") {
			t.Fatalf("%s: CommitGroups = %v; want an error naming the group", name, err)
		}
		if errors.Is(err, reconcile.ErrConcurrentRun) {
			t.Fatalf("%s: CommitGroups = %v; not a lost race", name, err)
		}
		if gs := listGroups(t, s, reconcile.GroupQuery{}); len(gs) != 0 {
			t.Fatalf("%s: records = %+v; want none", name, gs)
		}
		if fs := Findings(t, f.Reviewer(), "payouts"); len(fs) != 0 {
			t.Fatalf("%s: findings = %+v; want none", name, fs)
		}
		if c, _ := s.ReadLane(ctx, "payouts", "payouts"); c.Position != "" {
			t.Fatalf("%s: position = %q; want none", name, c.Position)
		}
	}
	// An unstorable entry fails the commit even when a later entry of the same group would be
	// the one recorded: every store checks every entry, not only the last of each group.
	shadowed := reconcile.GroupRecord{ID: "po_ok", Status: "paid\xff", Currency: "usd"}
	err := commitGroups(t, s, "payouts", "p1", []reconcile.GroupRecord{shadowed, tiedGroup("po_ok", 10, 10, 0, 0)})
	if err == nil || !strings.Contains(err.Error(), "group") || errors.Is(err, reconcile.ErrConcurrentRun) {
		t.Fatalf("an unstorable entry before a storable one of its group: CommitGroups = %v; want an error naming the group", err)
	}
	if gs := listGroups(t, s, reconcile.GroupQuery{}); len(gs) != 0 {
		t.Fatalf("an unstorable entry before a storable one of its group: records = %+v; want none", gs)
	}
	if c, _ := s.ReadLane(ctx, "payouts", "payouts"); c.Position != "" {
		t.Fatalf("an unstorable entry before a storable one of its group: position = %q; want none", c.Position)
	}
}

func testGroupsRedone(t *testing.T, f Fixture) {
	s := groupStore(t, f)
	ctx := context.Background()
	g := tiedGroup("po_1", 1000, 1000, 0, 0)
	if err := commitGroups(t, s, "payouts", "p1", []reconcile.GroupRecord{g}); err != nil {
		t.Fatal(err)
	}
	first := listGroups(t, s, reconcile.GroupQuery{})[0]
	// The same step again (a crash before the caller learned of the commit), then a listing
	// that names the group twice: the last entry is recorded.
	if err := commitGroups(t, s, "payouts", "p1", []reconcile.GroupRecord{g}); err != nil {
		t.Fatal(err)
	}
	failed := g
	failed.Status, failed.Findings, failed.Records = "failed", 1, []string{"po_1"}
	if err := commitGroups(t, s, "payouts", "p2", []reconcile.GroupRecord{g, failed}); err != nil {
		t.Fatal(err)
	}
	got := listGroups(t, s, reconcile.GroupQuery{})
	if len(got) != 1 || got[0].Seq != first.Seq || got[0].Status != "failed" || got[0].Findings != 1 ||
		!slices.Equal(got[0].Records, []string{"po_1"}) || got[0].TiedOutAt.Before(first.TiedOutAt) {
		t.Fatalf("records = %+v; want po_1 once, numbered %d, as last listed", got, first.Seq)
	}
	// The same group id under another account, or another job, is another group.
	other := g
	other.Account = "acct_1"
	if err := commitGroups(t, s, "payouts", "p3", []reconcile.GroupRecord{other}); err != nil {
		t.Fatal(err)
	}
	if err := commitGroups(t, s, "payouts@acct_2", "p1", []reconcile.GroupRecord{g}); err != nil {
		t.Fatal(err)
	}
	if got := listGroups(t, s, reconcile.GroupQuery{}); len(got) != 3 {
		t.Fatalf("records = %+v; want po_1 of the platform, of acct_1, and of the other job", got)
	}
	if n, err := s.CountGroups(ctx, reconcile.GroupQuery{Job: "payouts"}); err != nil || n.Recorded != 2 {
		t.Fatalf("CountGroups(payouts) = %+v, %v; want 2", n, err)
	}
}

func testGroupsPending(t *testing.T, f Fixture) {
	s := groupStore(t, f)
	pending := reconcile.GroupRecord{ID: "po_1", Status: "in_transit", Amount: 1000, Currency: "usd", Itemized: true}
	if err := commitGroups(t, s, "payouts", "p1", []reconcile.GroupRecord{pending}); err != nil {
		t.Fatal(err)
	}
	got := listGroups(t, s, reconcile.GroupQuery{})
	if len(got) != 1 || got[0].TiedOut || !got[0].TiedOutAt.IsZero() || got[0].SeenAt.IsZero() || got[0].ExpectedKnown ||
		got[0].Status != "in_transit" {
		t.Fatalf("pending record = %+v; want seen, not tied out", got)
	}
	seq := got[0].Seq
	tied := tiedGroup("po_1", 1000, 1000, 0, 0)
	if err := commitGroups(t, s, "payouts", "p2", []reconcile.GroupRecord{tied}); err != nil {
		t.Fatal(err)
	}
	late := pending
	late.Status = "paid"
	if err := commitGroups(t, s, "payouts", "p3", []reconcile.GroupRecord{late}); err != nil {
		t.Fatal(err)
	}
	got = listGroups(t, s, reconcile.GroupQuery{})
	if len(got) != 1 || got[0].Seq != seq || !got[0].TiedOut || got[0].TiedOutAt.IsZero() || !got[0].Held || !got[0].ExpectedKnown {
		t.Fatalf("record = %+v; want the tie-out, under number %d, a later pending sighting ignored", got, seq)
	}
}

func testGroupsList(t *testing.T, f Fixture) {
	s := groupStore(t, f)
	ctx := context.Background()
	// 7 groups of job payouts: 3 held, 2 not held (sum off; findings), 2 pending; one of
	// acct_1; and one of another job.
	steps := [][]reconcile.GroupRecord{
		{tiedGroup("po_1", 100, 100, 0, 0), tiedGroup("po_2", 200, 150, 2, 1)},
		{{ID: "po_3", Status: "pending", Amount: 300, Currency: "usd", Itemized: true}, tiedGroup("po_4", 400, 400, 0, 0)},
		{tiedGroup("po_5", 500, 500, 1, 1), {ID: "po_6", Status: "in_transit", Amount: 600, Currency: "usd"}},
	}
	acct := tiedGroup("po_7", 700, 700, 0, 0)
	acct.Account = "acct_1"
	steps = append(steps, []reconcile.GroupRecord{acct})
	for i, gs := range steps {
		if err := commitGroups(t, s, "payouts", fmt.Sprint("p", i), gs); err != nil {
			t.Fatal(err)
		}
	}
	if err := commitGroups(t, s, "other", "p1", []reconcile.GroupRecord{tiedGroup("po_8", 800, 1, 1, 0)}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		q    reconcile.GroupQuery
		want []string
	}{
		{reconcile.GroupQuery{Job: "payouts"}, []string{"po_7", "po_6", "po_5", "po_4", "po_3", "po_2", "po_1"}},
		{reconcile.GroupQuery{Jobs: []string{"other"}}, []string{"po_8"}},
		{reconcile.GroupQuery{}, []string{"po_8", "po_7", "po_6", "po_5", "po_4", "po_3", "po_2", "po_1"}},
		{reconcile.GroupQuery{Job: "payouts", State: reconcile.GroupsPending}, []string{"po_6", "po_3"}},
		{reconcile.GroupQuery{Job: "payouts", State: reconcile.GroupsHeld}, []string{"po_7", "po_4", "po_1"}},
		{reconcile.GroupQuery{Job: "payouts", State: reconcile.GroupsNotHeld}, []string{"po_5", "po_2"}},
		{reconcile.GroupQuery{Account: "acct_1"}, []string{"po_7"}},
		{reconcile.GroupQuery{Job: "payouts", Status: "in_transit"}, []string{"po_6"}},
		{reconcile.GroupQuery{Job: "nobody"}, nil},
		// Seq is a 64-bit number: a keyset beyond 32 bits (a busy store's, or a hand-edited
		// link's) lists what is below it, never fails.
		{reconcile.GroupQuery{Job: "payouts", BeforeSeq: math.MaxInt32 + 1}, []string{"po_7", "po_6", "po_5", "po_4", "po_3", "po_2", "po_1"}},
		{reconcile.GroupQuery{BeforeSeq: math.MaxInt64, Limit: math.MaxInt32 + 1}, []string{"po_8", "po_7", "po_6", "po_5", "po_4", "po_3", "po_2", "po_1"}},
	} {
		if got := groupIDs(listGroups(t, s, tt.q)); !slices.Equal(got, tt.want) {
			t.Errorf("ListGroups(%+v) = %v; want %v", tt.q, got, tt.want)
		}
	}
	// Pages of 3 by keyset: every record once, in order.
	var paged []string
	q := reconcile.GroupQuery{Job: "payouts", Limit: 3}
	for range 10 {
		page := listGroups(t, s, q)
		paged = append(paged, groupIDs(page)...)
		if len(page) < q.Limit {
			break
		}
		q.BeforeSeq = page[len(page)-1].Seq
	}
	if want := []string{"po_7", "po_6", "po_5", "po_4", "po_3", "po_2", "po_1"}; !slices.Equal(paged, want) {
		t.Fatalf("pages = %v; want %v", paged, want)
	}
	n, err := s.CountGroups(ctx, reconcile.GroupQuery{Job: "payouts", State: reconcile.GroupsHeld, Limit: 1})
	if err != nil || n != (reconcile.GroupCounts{Recorded: 7, Pending: 2, NotHeld: 2}) {
		t.Fatalf("CountGroups = %+v, %v; want 7 recorded, 2 pending, 2 not held", n, err)
	}
	if _, err := s.ListGroups(ctx, reconcile.GroupQuery{State: "bogus"}); err == nil {
		t.Fatal("ListGroups with an unknown state: no error")
	}
}

func testGroupsHostile(t *testing.T, f Fixture) {
	s := groupStore(t, f)
	long := strings.Repeat("é", 6000) // 12 KB
	hostile := []reconcile.GroupRecord{
		{ID: "po_\x00nul", Account: "acct_\xff", Status: "paid\x00", Currency: "us\xffd" + long, TiedOut: true},
		{ID: long, Status: long, Currency: "usd", Records: []string{long, "txn_\x00", long, ""}},
		{ID: "po_<script>alert(1)</script>", Status: "=HYPERLINK(\"x\")", Currency: "usd"},
	}
	var groups []reconcile.GroupRecord
	for _, g := range hostile {
		groups = append(groups, reconcile.StorableGroupRecord(g))
	}
	groups = append(groups, tiedGroup("po_ok", 10, 10, 0, 0), tiedGroup("po_extreme", math.MinInt64, math.MaxInt64, 0, 0))
	if err := commitGroups(t, s, "payouts", "p1", groups, lineFinding("txn_1")); err != nil {
		t.Fatalf("CommitGroups of storable hostile records: %v", err)
	}
	got := listGroups(t, s, reconcile.GroupQuery{})
	if len(got) != 5 {
		t.Fatalf("records = %d; want 5", len(got))
	}
	for _, g := range got {
		if err := reconcile.CheckGroupRecord(g); err != nil {
			t.Fatalf("record %.40q as read: %v", g.ID, err)
		}
	}
	byID := map[string]reconcile.GroupRecord{}
	for _, g := range got {
		byID[g.ID] = g
	}
	if g, ok := byID["po_\uFFFDnul"]; !ok || g.Account != "acct_\uFFFD" || g.Status != "paid\uFFFD" {
		t.Fatalf("the NUL and invalid bytes record = %+v; want them as U+FFFD", byID)
	}
	if g := byID["po_extreme"]; g.Amount != math.MinInt64 || g.Expected != math.MaxInt64 || !g.ExpectedKnown {
		t.Fatalf("the extreme amounts record = %+v; want them exact", g)
	}
	if len(byID["po_ok"].Records) != 0 || !byID["po_ok"].Held {
		t.Fatalf("the plain record beside them = %+v", byID["po_ok"])
	}
	cut := reconcile.StorableGroupRecord(hostile[1])
	if g, ok := byID[cut.ID]; !ok || len(g.ID) > reconcile.MaxExternalID || len(g.Records) != 2 {
		t.Fatalf("the 12 KB record: %v, %d bytes, records %d; want it cut, its records each once", ok, len(g.ID), len(g.Records))
	}
	if fs := Findings(t, f.Reviewer(), "payouts"); len(fs) != 1 {
		t.Fatalf("findings = %d; want the commit's one", len(fs))
	}
}
