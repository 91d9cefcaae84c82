package pgstore_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// rangeFixture is a store of payments 1 to rows whose job "sweep" reads them all in one batch.
type rangeFixture struct {
	t    *testing.T
	s    *pgstore.Store[string]
	rows int
}

func newRangeFixture(t *testing.T, rows int) *rangeFixture {
	t.Helper()
	pool, s := newStore(t, pgstore.Config{})
	insertPayments(t, pool, ids(1, int64(rows))...)
	return &rangeFixture{t: t, s: s, rows: rows}
}

// judge returns the verified outcomes d of records recs.
func judge(d reconcile.Decision, recs ...int) []reconcile.Outcome {
	var out []reconcile.Outcome
	for _, id := range recs {
		out = append(out, reconcile.Outcome{RecordID: strconv.Itoa(id), ExternalID: "pi_" + strconv.Itoa(id),
			Local: "paid", External: "succeeded", Verified: true, Decision: d})
	}
	return out
}

// commit commits outcomes in a batch that reads every row and wraps the cycle.
func (f *rangeFixture) commit(outcomes ...reconcile.Outcome) {
	f.t.Helper()
	ctx := context.Background()
	b, err := f.s.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: f.rows})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.s.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true, Outcomes: outcomes}); err != nil {
		f.t.Fatal(err)
	}
}

// check compares the job's findings, "record kind" to "open" or their resolution, with want.
func (f *rangeFixture) check(want map[string]string) {
	f.t.Helper()
	got := map[string]string{}
	for _, fd := range reconciletest.Findings(f.t, f.s, "sweep") {
		k := fd.RecordID + " " + fd.Kind
		if fd.Open() {
			got[k] = "open"
		} else {
			got[k] = fd.Resolution
		}
	}
	for k, v := range want {
		if got[k] != v {
			f.t.Errorf("finding %s: %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		f.t.Errorf("findings %v; want %v", got, want)
	}
}

var (
	rangeDrift  = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "amount_differs", Detail: "amounts differ"}
	rangeLost   = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "lost", Detail: "dispute lost"}
	rangeInSync = reconcile.Decision{Verdict: reconcile.InSync}
)

// A commit reads the open findings of its verified records in one range, from the least
// record id to the greatest in text order, and looks each record up on its own when that range
// holds more open findings than it has records. Either way a verified judgment closes its
// record's findings, and only its record's: records 1 and 2 span 10 to 19 (one lookup each),
// 3 and 4 nothing else (the range), 10 itself alone.
func TestAVerifiedJudgmentClosesItsRecordsFindingsWhateverOpenFindingsLieBetween(t *testing.T) {
	t.Parallel()
	f := newRangeFixture(t, 25)
	f.commit(judge(rangeDrift, append([]int{1, 2, 3, 4}, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19)...)...)
	f.commit(judge(rangeInSync, 1, 2)...)
	f.commit(judge(rangeInSync, 3, 4)...)
	f.commit(judge(rangeLost, 10)...)

	want := map[string]string{
		"1 amount_differs": reconcile.ResolutionCleared, "2 amount_differs": reconcile.ResolutionCleared,
		"3 amount_differs": reconcile.ResolutionCleared, "4 amount_differs": reconcile.ResolutionCleared,
		"10 amount_differs": reconcile.ResolutionSuperseded, "10 lost": "open",
	}
	for id := 11; id <= 19; id++ {
		want[strconv.Itoa(id)+" amount_differs"] = "open"
	}
	f.check(want)
}

// The range's ends are the least and greatest record ids in text order, where 10 and 100 come
// before 2 and 9 (in numeric order the range from 2 to 100 would hold nothing), and both ends
// belong to it: the findings of records 10 and 9 are closed, whether the record is known by a
// judgment without a finding (10, in sync) or by one with a finding of another kind (9, lost).
// The findings of records 11 and 3, inside the range but not judged, stay open.
func TestTheOpenRangeRunsInTextOrderAndHoldsItsEnds(t *testing.T) {
	t.Parallel()
	f := newRangeFixture(t, 120)
	f.commit(judge(rangeDrift, 2, 3, 9, 10, 11, 100)...)
	f.commit(append(judge(rangeInSync, 10, 100, 2, 5, 6, 7, 8), judge(rangeLost, 9)...)...)
	f.check(map[string]string{
		"10 amount_differs": reconcile.ResolutionCleared, "100 amount_differs": reconcile.ResolutionCleared,
		"2 amount_differs": reconcile.ResolutionCleared, "9 amount_differs": reconcile.ResolutionSuperseded, "9 lost": "open",
		"11 amount_differs": "open", "3 amount_differs": "open",
	})
}

// Records 1 and 3 with record 2 between: three open findings in the range, one more than the
// records judged, so the range is read no further and each record is looked up; record 3's
// finding, the one past the cut, is closed too.
func TestAFindingOnePastACutRangeIsStillClosed(t *testing.T) {
	t.Parallel()
	f := newRangeFixture(t, 5)
	f.commit(judge(rangeDrift, 1, 2, 3)...)
	f.commit(judge(rangeInSync, 1, 3)...)
	f.check(map[string]string{
		"1 amount_differs": reconcile.ResolutionCleared, "2 amount_differs": "open", "3 amount_differs": reconcile.ResolutionCleared,
	})
}
