package pgstore_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// A commit reads the open findings of its verified records in one range, from the least
// record id to the greatest in text order, and looks each record up on its own when that range
// holds more open findings than it has records. Either way a verified judgment closes its
// record's findings, and only its record's: records 1 and 2 span 10 to 19 (one lookup each),
// 3 and 4 nothing else (the range), 10 itself alone.
func TestAVerifiedJudgmentClosesItsRecordsFindingsWhateverOpenFindingsLieBetween(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	insertPayments(t, pool, ids(1, 25)...)
	ctx := context.Background()
	// commit judges recs in a batch that reads every row and wraps the cycle.
	commit := func(d reconcile.Decision, recs ...int) {
		t.Helper()
		b, err := s.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 25})
		if err != nil {
			t.Fatal(err)
		}
		c := reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true}
		for _, id := range recs {
			c.Outcomes = append(c.Outcomes, reconcile.Outcome{RecordID: strconv.Itoa(id), ExternalID: "pi_" + strconv.Itoa(id),
				Local: "paid", External: "succeeded", Verified: true, Decision: d})
		}
		if _, err := s.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	state := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, f := range reconciletest.Findings(t, s, "sweep") {
			k := f.RecordID + " " + f.Kind
			if f.Open() {
				out[k] = "open"
			} else {
				out[k] = f.Resolution
			}
		}
		return out
	}
	drift := reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "amount_differs", Detail: "amounts differ"}
	commit(drift, append([]int{1, 2, 3, 4}, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19)...)
	commit(reconcile.Decision{Verdict: reconcile.InSync}, 1, 2)
	commit(reconcile.Decision{Verdict: reconcile.InSync}, 3, 4)
	commit(reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "lost", Detail: "dispute lost"}, 10)

	want := map[string]string{
		"1 amount_differs": reconcile.ResolutionCleared, "2 amount_differs": reconcile.ResolutionCleared,
		"3 amount_differs": reconcile.ResolutionCleared, "4 amount_differs": reconcile.ResolutionCleared,
		"10 amount_differs": reconcile.ResolutionSuperseded, "10 lost": "open",
	}
	for id := 11; id <= 19; id++ {
		want[strconv.Itoa(id)+" amount_differs"] = "open"
	}
	got := state()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("finding %s: %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("findings %v; want %v", got, want)
	}
}
