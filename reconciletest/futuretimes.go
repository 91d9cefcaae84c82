package reconciletest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

// futureTimeTests check that a row whose updated_at or created_at lies further in the future
// than reconcile.MaxClockSkew (a skewed clock, a bad import, a hostile writer) is an impossible
// time: an invalid_row finding, not a row in flight at every cycle whose drift is never found,
// while a time within the skew is taken as it always was.
var futureTimeTests = []struct {
	name string
	fn   func(t *testing.T, f Fixture)
}{
	{"a row changed years in the future is an invalid_row finding at every cycle, whatever the grace, and is never asked; within the clock skew it is in flight", testFutureUpdatedAt},
	{"a row created years in the future is an invalid_row finding and is never asked; within the clock skew it is judged", testFutureCreatedAt},
	{"a lane's match returns a row changed years in the future invalid, and the lane's step makes it the invalid_row finding", testLaneFutureUpdatedAt},
}

// decade is far enough ahead of any clock to be no skew.
const decade = 10 * 365 * 24 * time.Hour

// skewed is well within reconcile.MaxClockSkew.
const skewed = reconcile.MaxClockSkew / 5

// invalidRows returns the record ids of job's invalid_row findings, sorted, failing t on one
// that is resolved, queued a command or does not say why.
func invalidRows(t *testing.T, f Fixture, job string) []string {
	t.Helper()
	var ids []string
	for _, fd := range Findings(t, f.Reviewer(), job) {
		if fd.Kind != reconcile.KindInvalidRow {
			continue
		}
		if !fd.Open() || fd.Command != "" || fd.Detail == "" {
			t.Fatalf("finding %+v; want an open invalid_row finding that says why, with no command", fd)
		}
		ids = append(ids, fd.RecordID)
	}
	slices.Sort(ids)
	return ids
}

// kinds returns the kinds of job's findings by record id.
func kinds(t *testing.T, f Fixture, job string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, fd := range Findings(t, f.Reviewer(), job) {
		out[fd.RecordID] = append(out[fd.RecordID], fd.Kind)
	}
	return out
}

// verdicts adds up the reports' verdicts.
func verdicts(reps []reconcile.Report) map[reconcile.Verdict]int {
	v := map[reconcile.Verdict]int{}
	for _, r := range reps {
		for k, n := range r.Verdicts {
			v[k] += n
		}
	}
	return v
}

func testFutureUpdatedAt(t *testing.T, f Fixture) {
	// Row 1 is paid here and canceled at Stripe (drift for review), changed a decade ahead;
	// row 2 misses a success but was changed a moment ahead, within the skew; row 3 is in sync.
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "paid", UpdatedAhead: decade},
		Row{ID: 2, ExternalID: "pi_2", Local: "pending", UpdatedAhead: skewed},
		Row{ID: 3, ExternalID: "pi_3", Local: "paid"})
	gw := NewGateway(map[string]string{"pi_1": "canceled", "pi_2": "succeeded", "pi_3": "succeeded"})
	for cycle := 1; cycle <= 2; cycle++ {
		v := verdicts(Cycle(t, Config(f, "sweep", gw, 10), 5))
		if v[reconcile.NeedsReview] != 1 || v[reconcile.InFlight] != 1 || v[reconcile.InSync] != 1 {
			t.Fatalf("cycle %d: verdicts %v; want row 1 for review (an impossible time), row 2 in flight, row 3 in sync", cycle, v)
		}
		if k := kinds(t, f, "sweep"); len(k) != 1 || !slices.Equal(invalidRows(t, f, "sweep"), []string{"1"}) {
			t.Fatalf("cycle %d: findings by record %v; want one invalid_row finding, of row 1", cycle, k)
		}
	}
	if n, m := gw.Calls("pi_1"), gw.Calls("pi_2"); n != 0 || m != 0 {
		t.Fatalf("asked about pi_1 %d times, pi_2 %d times; want neither asked (an impossible time, a row in flight)", n, m)
	}
	if _, _, ok := f.Verified(t, "sweep", 1); ok {
		t.Fatal("a row with an impossible time got a last-verified time")
	}
	// With the grace period off, a time a decade ahead is still impossible; row 2, within the
	// skew, is judged.
	cfg := Config(f, "nograce", gw, 10)
	cfg.Grace = -1
	Cycle(t, cfg, 5)
	k := kinds(t, f, "nograce")
	if !slices.Equal(invalidRows(t, f, "nograce"), []string{"1"}) || !slices.Equal(k["2"], []string{"missed_success"}) || len(k) != 2 {
		t.Fatalf("without grace: findings by record %v; want row 1 invalid_row and row 2 missed_success", k)
	}
	if n, m := gw.Calls("pi_1"), gw.Calls("pi_2"); n != 0 || m != 1 {
		t.Fatalf("without grace: asked about pi_1 %d times, pi_2 %d times; want 0 and 1", n, m)
	}
}

func testFutureCreatedAt(t *testing.T, f Fixture) {
	// Row 1 is paid here and canceled at Stripe, created a decade ahead; row 2, created a
	// moment ahead, within the skew, misses a success.
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "paid", CreatedAhead: decade},
		Row{ID: 2, ExternalID: "pi_2", Local: "pending", CreatedAhead: skewed})
	gw := NewGateway(map[string]string{"pi_1": "canceled", "pi_2": "succeeded"})
	Cycle(t, Config(f, "sweep", gw, 10), 5)
	k := kinds(t, f, "sweep")
	if !slices.Equal(invalidRows(t, f, "sweep"), []string{"1"}) || !slices.Equal(k["2"], []string{"missed_success"}) || len(k) != 2 {
		t.Fatalf("findings by record %v; want row 1 invalid_row (an impossible time) and row 2 missed_success", k)
	}
	if n, m := gw.Calls("pi_1"), gw.Calls("pi_2"); n != 0 || m != 1 {
		t.Fatalf("asked about pi_1 %d times, pi_2 %d times; want 0 and 1", n, m)
	}
	if _, _, ok := f.Verified(t, "sweep", 1); ok {
		t.Fatal("a row with an impossible time got a last-verified time")
	}
}

func testLaneFutureUpdatedAt(t *testing.T, f Fixture) {
	s := laneStore(t, f)
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "paid", UpdatedAhead: decade},
		Row{ID: 2, ExternalID: "pi_2", Local: "paid", UpdatedAhead: skewed})
	now := time.Now()
	res, err := s.Match(context.Background(), reconcile.MatchRequest{Job: "sweep", ExternalIDs: []string{"pi_1", "pi_2"},
		Since: []time.Time{now, now}, Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]reconcile.Record[string]{}
	for _, r := range res.Rows {
		got[r.ExternalID] = r
	}
	if len(res.Rows) != 2 || got["pi_1"].Invalid == "" || got["pi_2"].Invalid != "" || !got["pi_2"].Recent {
		t.Fatalf("Match = %+v; want row 1 invalid (an impossible time) and row 2 valid and recent", res.Rows)
	}
	// An event about each, observed now: row 1 is the invalid_row finding, row 2 in flight.
	objs := Objects("pi_1", "canceled", "pi_2", "canceled")
	objs[0].ObservedAt, objs[1].ObservedAt = now, now
	rep := Step(t, LaneConfig(t, f, "sweep", "events", NewFeed(map[string]reconcile.FeedPage[string]{"": {Next: "p1", Objects: objs}})))
	if rep.Verdicts[reconcile.NeedsReview] != 1 || rep.Verdicts[reconcile.InFlight] != 1 {
		t.Fatalf("lane step verdicts %v; want row 1 for review and row 2 in flight", rep.Verdicts)
	}
	if k := kinds(t, f, "sweep"); len(k) != 1 || !slices.Equal(invalidRows(t, f, "sweep"), []string{"1"}) {
		t.Fatalf("findings by record %v; want one invalid_row finding, of row 1", k)
	}
}
