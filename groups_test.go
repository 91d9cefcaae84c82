package reconcile_test

import (
	"math"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
)

func TestAStorableGroupRecordPassesItsCheck(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	for name, r := range map[string]reconcile.GroupRecord{
		"NUL everywhere":       {ID: "po\x00", Account: "a\x00", Status: "s\x00", Currency: "u\x00", Records: []string{"t\x00"}},
		"invalid UTF-8":        {ID: "po\xff", Account: "\xfe", Status: "\xff", Currency: "\xff", Records: []string{"\xff"}},
		"10 KB values":         {ID: long, Account: long, Status: long, Currency: long, Records: []string{long, long}},
		"too many records":     {ID: "po", Records: strings.Split(strings.Repeat("t,", 500), ",")},
		"negative counts":      {ID: "po", Members: -1, Findings: -2, Unmatched: -3},
		"an empty record":      {ID: "po", Records: []string{""}},
		"a plain record as is": {ID: "po_1", Status: "paid", Currency: "usd", Records: []string{"txn_1", "po_1"}},
	} {
		if err := reconcile.CheckGroupRecord(r); err == nil && name != "a plain record as is" {
			t.Errorf("%s: CheckGroupRecord accepted it before it was made storable", name)
		}
		s := reconcile.StorableGroupRecord(r)
		if err := reconcile.CheckGroupRecord(s); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if len(s.Records) > reconcile.MaxGroupRecords {
			t.Errorf("%s: %d records", name, len(s.Records))
		}
	}
	if err := reconcile.CheckGroupRecord(reconcile.StorableGroupRecord(reconcile.GroupRecord{})); err == nil {
		t.Error("a record without an id passed")
	}
}

func TestAGroupQuerySelectsByState(t *testing.T) {
	pending := reconcile.GroupRecord{ID: "p"}
	held := reconcile.GroupRecord{ID: "h", TiedOut: true, Held: true}
	findings := reconcile.GroupRecord{ID: "f", TiedOut: true, Held: true, Findings: 1}
	off := reconcile.GroupRecord{ID: "o", TiedOut: true}
	for _, tt := range []struct {
		state string
		want  string
	}{{"", "phfo"}, {reconcile.GroupsPending, "p"}, {reconcile.GroupsHeld, "h"}, {reconcile.GroupsNotHeld, "fo"}} {
		q, err := reconcile.GroupQuery{State: tt.state}.Normalize()
		if err != nil || q.Limit != reconcile.DefaultGroupsLimit {
			t.Fatalf("Normalize(%q) = %+v, %v", tt.state, q, err)
		}
		got := ""
		for _, r := range []reconcile.GroupRecord{pending, held, findings, off} {
			if q.Matches(r) {
				got += r.ID
			}
		}
		if got != tt.want {
			t.Errorf("state %q selects %q; want %q", tt.state, got, tt.want)
		}
	}
	for _, q := range []reconcile.GroupQuery{{State: "open"}, {Limit: -1}, {BeforeSeq: -1}, {Limit: math.MinInt},
		{BeforeSeq: math.MinInt64}, {State: "HELD"}, {State: " pending"}, {State: "pending\x00"}, {State: "not_held", Limit: -1}} {
		if _, err := q.Normalize(); err == nil {
			t.Errorf("Normalize(%+v) accepted", q)
		}
	}
	// The largest numbers are kept as given: a store pages below them.
	if q, err := (reconcile.GroupQuery{Limit: math.MaxInt, BeforeSeq: math.MaxInt64}).Normalize(); err != nil ||
		q.Limit != math.MaxInt || q.BeforeSeq != math.MaxInt64 {
		t.Errorf("Normalize of the largest limit and keyset = %+v, %v", q, err)
	}
}

func TestLastGroupRecordsKeepsEachGroupsLastEntry(t *testing.T) {
	in := []reconcile.GroupRecord{{ID: "a", Status: "1"}, {ID: "b"}, {ID: "a", Account: "x"}, {ID: "a", Status: "2"}}
	got := reconcile.LastGroupRecords(in)
	if len(got) != 3 || got[0].ID != "b" || got[1].Account != "x" || got[2].Status != "2" {
		t.Fatalf("LastGroupRecords = %+v", got)
	}
}

// FuzzStorableGroupRecord: whatever an external system sent for a payout, the record made of
// it is one a store keeps (or has no id), and what was already storable is kept as it is.
func FuzzStorableGroupRecord(f *testing.F) {
	f.Add("po_1", "acct_1", "paid", "usd", "txn_1", "txn_2")
	f.Add("po_\x00", "\xff\xfe", strings.Repeat("s", 10_000), "us\x00d", "", strings.Repeat("é", 600))
	f.Fuzz(func(t *testing.T, id, account, status, currency, rec1, rec2 string) {
		r := reconcile.GroupRecord{ID: id, Account: account, Status: status, Currency: currency, Records: []string{rec1, rec2, rec1}}
		s := reconcile.StorableGroupRecord(r)
		if err := reconcile.CheckGroupRecord(s); err != nil && s.ID != "" {
			t.Fatalf("StorableGroupRecord(%+v) = %+v: %v", r, s, err)
		}
		if reconcile.CheckGroupRecord(reconcile.GroupRecord{ID: id, Account: account, Status: status, Currency: currency}) == nil &&
			(s.ID != id || s.Account != account || s.Status != status || s.Currency != currency) {
			t.Fatalf("a storable record was changed: %+v -> %+v", r, s)
		}
	})
}
