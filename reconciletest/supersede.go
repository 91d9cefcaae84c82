package reconciletest

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

// A verified judgment of a record's pair decides its findings: a finding whose drift changed
// kind is closed as superseded by the one that replaced it, a finding whose pair is in sync
// again as cleared, both by the reconciler, in the history; at most one stays open.

// supersedeTests are the suite's cases for findings that no longer describe the drift.
var supersedeTests = []struct {
	name string
	fn   func(t *testing.T, f Fixture)
}{
	{"a finding whose drift changed kind is closed as superseded, naming the finding that replaced it", testSuperseded},
	{"a repairable finding superseded by another leaves one open finding, each with its own command", testSupersededRepair},
	{"a finding whose pair is in sync again is closed as cleared, its history saying what was observed", testCleared},
	{"judgments that are not verified close nothing: unverifiable, in flight, an event's state", testUnverifiedClosesNothing},
	{"a verified judgment closes none of another job's findings, nor a missing_locally one", testClosesOnlyItsOwn},
}

// Money returns the policy of the supersede cases, whose drifts change kind: a paid row against
// a payment that the external system holds succeeded (in sync), processing (in flight),
// disputed or lost (NeedsReview dispute_needs_response, dispute_lost), partly_refunded or
// refunded (Repairable partial_refund_missed, refund_missed, each an ApplyRefund command).
func Money() reconcile.Classifier[string, string] { return money }

var money = func() reconcile.Classifier[string, string] {
	id := func(s string) string { return s }
	review := func(kind string) reconcile.Decision {
		return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: kind, Detail: "respond by " + kind}
	}
	repair := func(kind string) reconcile.Decision {
		return reconcile.Decision{Verdict: reconcile.Repairable, Kind: kind, Command: "ApplyRefund"}
	}
	t, err := reconcile.NewRuleTable(id, id,
		reconcile.Rule[string, string]{Local: []string{"paid"}, External: []string{"succeeded"}, Decision: reconcile.Decision{Verdict: reconcile.InSync}},
		reconcile.Rule[string, string]{Local: []string{"paid"}, External: []string{"disputed"}, Decision: review("dispute_needs_response")},
		reconcile.Rule[string, string]{Local: []string{"paid"}, External: []string{"lost"}, Decision: review("dispute_lost")},
		reconcile.Rule[string, string]{Local: []string{"paid"}, External: []string{"partly_refunded"}, Decision: repair("partial_refund_missed")},
		reconcile.Rule[string, string]{Local: []string{"paid"}, External: []string{"refunded"}, Decision: repair("refund_missed")},
		reconcile.Rule[string, string]{Local: []string{"paid"}, External: []string{"processing"}, Decision: reconcile.Decision{Verdict: reconcile.InFlight}},
		reconcile.Rule[string, string]{Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "other"}},
	)
	if err != nil {
		panic(err)
	}
	return t
}()

// moneyCycle runs a cycle of job over the fixture's rows, with the external states given.
func moneyCycle(t testing.TB, f Fixture, job string, st map[string]string) []reconcile.Report {
	t.Helper()
	cfg := Config(f, job, NewGateway(st), 10)
	cfg.Classifier = money
	return Cycle(t, cfg, 3)
}

// byRecord returns the job's findings of one record, oldest first, and its open ones.
func byRecord(t testing.TB, f Fixture, job, record string) (all, open []reconcile.Finding) {
	t.Helper()
	for _, fd := range Findings(t, f.Reviewer(), job) {
		if fd.RecordID == record {
			all = append(all, fd)
			if fd.Open() {
				open = append(open, fd)
			}
		}
	}
	return all, open
}

func detail(t testing.TB, f Fixture, id int64) reconcile.FindingDetail {
	t.Helper()
	d, err := f.Reviewer().Finding(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// closedBy checks that finding d was closed by the reconciler as resolution, in its history
// too, with a note holding each of words.
func closedBy(t testing.TB, d reconcile.FindingDetail, resolution string, words ...string) {
	t.Helper()
	last := d.History[len(d.History)-1]
	if d.Open() || d.Resolution != resolution || d.ResolvedBy != reconcile.ResolvedByReconciler ||
		last.Action != reconcile.ActionResolved || last.Resolution != resolution || last.Actor != reconcile.ResolvedByReconciler || last.Note != d.ResolutionNote {
		t.Fatalf("finding %d: %+v; want it resolved as %s by %s, in its history", d.ID, d, resolution, reconcile.ResolvedByReconciler)
	}
	for _, w := range words {
		if !strings.Contains(d.ResolutionNote, w) {
			t.Errorf("finding %d's note %q does not say %q", d.ID, d.ResolutionNote, w)
		}
	}
}

func testSuperseded(t *testing.T, f Fixture) {
	f.Insert(t, paidRow(1), paidRow(2))
	moneyCycle(t, f, "sweep", map[string]string{"pi_1": "disputed", "pi_2": "succeeded"})
	_, open := byRecord(t, f, "sweep", "1")
	if len(open) != 1 || open[0].Kind != "dispute_needs_response" {
		t.Fatalf("open findings of row 1 %+v; want the dispute needing a response", open)
	}
	first := open[0]

	reps := moneyCycle(t, f, "sweep", map[string]string{"pi_1": "lost", "pi_2": "succeeded"})
	all, open := byRecord(t, f, "sweep", "1")
	if len(all) != 2 || len(open) != 1 || open[0].Kind != "dispute_lost" || reps[0].NewFindings != 1 {
		t.Fatalf("findings of row 1 %+v (%d reported new); want the lost dispute's alone open", all, reps[0].NewFindings)
	}
	second := open[0]
	d := detail(t, f, first.ID)
	closedBy(t, d, reconcile.ResolutionSuperseded, strconv.FormatInt(second.ID, 10), "dispute_lost")
	if d.SupersededBy != second.ID {
		t.Errorf("finding %d superseded by %d; want %d", first.ID, d.SupersededBy, second.ID)
	}
	if d2 := detail(t, f, second.ID); !slices.Equal(d2.Supersedes, []int64{first.ID}) || d2.SupersededBy != 0 {
		t.Errorf("finding %d supersedes %v (superseded by %d); want [%d]", second.ID, d2.Supersedes, d2.SupersededBy, first.ID)
	}
	if fs, err := f.Reviewer().ListFindings(context.Background(), reconcile.FindingQuery{State: reconcile.FindingsAll, RecordID: "1"}); err != nil ||
		len(fs) != 2 || fs[0].SupersededBy != second.ID {
		t.Errorf("listed findings of row 1 %+v, %v; want the first superseded by %d", fs, err, second.ID)
	}

	// The same judgment again, as a batch redone after a crash would make it, changes nothing.
	history := len(d.History)
	reps = moneyCycle(t, f, "sweep", map[string]string{"pi_1": "lost", "pi_2": "succeeded"})
	if all, open := byRecord(t, f, "sweep", "1"); len(all) != 2 || len(open) != 1 || open[0].ID != second.ID || reps[0].NewFindings != 0 {
		t.Errorf("after the same judgment again: findings %+v; want them as they were", all)
	}
	if d := detail(t, f, first.ID); len(d.History) != history {
		t.Errorf("history of the superseded finding grew to %+v", d.History)
	}

	// A finding that a person reopened is theirs no more than before: the next verified
	// judgment that it no longer describes closes it again.
	if err := f.Reviewer().ReopenFinding(context.Background(), first.ID, "alice", "the customer called"); err != nil {
		t.Fatal(err)
	}
	if d := detail(t, f, first.ID); d.SupersededBy != 0 {
		t.Errorf("a reopened finding still says it was superseded by %d", d.SupersededBy)
	}
	moneyCycle(t, f, "sweep", map[string]string{"pi_1": "lost", "pi_2": "succeeded"})
	if _, open := byRecord(t, f, "sweep", "1"); len(open) != 1 || open[0].ID != second.ID {
		t.Errorf("open findings of row 1 %+v; want %d alone", open, second.ID)
	}
}

func testSupersededRepair(t *testing.T, f Fixture) {
	f.Insert(t, paidRow(1))
	moneyCycle(t, f, "sweep", map[string]string{"pi_1": "partly_refunded"})
	moneyCycle(t, f, "sweep", map[string]string{"pi_1": "refunded"})
	all, open := byRecord(t, f, "sweep", "1")
	if len(all) != 2 || len(open) != 1 || open[0].Kind != "refund_missed" {
		t.Fatalf("findings of row 1 %+v; want the full refund's alone open", all)
	}
	closedBy(t, detail(t, f, all[0].ID), reconcile.ResolutionSuperseded, strconv.FormatInt(open[0].ID, 10))
	// Each finding queued its command when it was opened; the superseded one's is left to
	// the dispatcher, which does not apply a command whose finding is resolved.
	cmds := f.Commands(t, "sweep")
	if len(cmds) != 2 || cmds[0].FindingID != all[0].ID || cmds[1].FindingID != open[0].ID {
		t.Fatalf("commands %+v; want one for each finding", cmds)
	}
}

func testCleared(t *testing.T, f Fixture) {
	f.Insert(t, paidRow(1), paidRow(2), paidRow(3))
	moneyCycle(t, f, "sweep", map[string]string{"pi_1": "disputed", "pi_2": "refunded", "pi_3": "!notfound"})
	if fs := Findings(t, f.Reviewer(), "sweep"); len(fs) != 3 {
		t.Fatalf("findings %+v; want one for each row", fs)
	}
	moneyCycle(t, f, "sweep", map[string]string{"pi_1": "succeeded", "pi_2": "succeeded", "pi_3": "succeeded"})
	for _, fd := range Findings(t, f.Reviewer(), "sweep") {
		// The note says what was observed: both sides' states.
		closedBy(t, detail(t, f, fd.ID), reconcile.ResolutionCleared, "paid", "succeeded")
		if fd.SupersededBy != 0 {
			t.Errorf("cleared finding %+v names a successor", fd)
		}
	}
	// In sync again, then drifting again: a new finding.
	reps := moneyCycle(t, f, "sweep", map[string]string{"pi_1": "disputed", "pi_2": "succeeded", "pi_3": "succeeded"})
	if _, open := byRecord(t, f, "sweep", "1"); len(open) != 1 || reps[0].NewFindings != 1 {
		t.Errorf("open findings of row 1 %+v; want a new one", open)
	}
}

func testUnverifiedClosesNothing(t *testing.T, f Fixture) {
	f.Insert(t, paidRow(1), paidRow(2), paidRow(3))
	moneyCycle(t, f, "sweep", map[string]string{"pi_1": "disputed", "pi_2": "disputed", "pi_3": "disputed"})
	// Row 1: the external system does not answer. Row 2: the payment is still moving (in
	// flight). Row 3: changed just now, in the grace period.
	f.Delete(t, 3)
	f.Insert(t, Row{ID: 3, ExternalID: "pi_3", Local: "paid", Recent: true})
	moneyCycle(t, f, "sweep", map[string]string{"pi_1": "!unavailable", "pi_2": "processing", "pi_3": "succeeded"})
	for _, r := range []string{"1", "2", "3"} {
		if all, open := byRecord(t, f, "sweep", r); len(all) != 1 || len(open) != 1 {
			t.Errorf("findings of row %s %+v; want the dispute still open", r, all)
		}
	}
	// A lane judging a state taken from an event (older than now, so not a verification)
	// opens its finding but closes none.
	s, ok := f.Store().(LaneStore)
	if !ok {
		return
	}
	objs := Objects("pi_1", "succeeded", "pi_2", "lost")
	for i := range objs {
		objs[i].ObservedAt = time.Now().Add(-30 * time.Minute) // after the rows' last change
	}
	cfg := reconcile.LaneConfig[string, string]{Job: "sweep", Lane: "events", Matcher: s, Sink: s, Classifier: money,
		Feed: NewFeed(map[string]reconcile.FeedPage[string]{"": {Objects: objs, Next: "p1"}})}
	Step(t, cfg)
	if all, open := byRecord(t, f, "sweep", "1"); len(all) != 1 || len(open) != 1 {
		t.Errorf("findings of row 1 %+v; an event's state in sync must not clear the open one", all)
	}
	if all, open := byRecord(t, f, "sweep", "2"); len(all) != 2 || len(open) != 2 {
		t.Errorf("findings of row 2 %+v; an event's state opens its finding and closes none", all)
	}
}

func testClosesOnlyItsOwn(t *testing.T, f Fixture) {
	f.Insert(t, paidRow(1))
	moneyCycle(t, f, "other", map[string]string{"pi_1": "disputed"})
	if s, ok := f.Store().(LaneStore); ok {
		// A missing_locally finding whose record id happens to be a row's id names an external
		// object, not the row.
		if _, err := s.CommitLane(context.Background(), reconcile.LaneCommit{Job: "sweep", Lane: "reverse", Next: "p1",
			Outcomes: []reconcile.Outcome{{RecordID: "1", ExternalID: "1", External: "succeeded", NotARow: true, Once: true,
				Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: reconcile.KindMissingLocally}}}}); err != nil {
			t.Fatal(err)
		}
	}
	moneyCycle(t, f, "sweep", map[string]string{"pi_1": "lost"})
	moneyCycle(t, f, "sweep", map[string]string{"pi_1": "succeeded"})
	if _, open := byRecord(t, f, "other", "1"); len(open) != 1 {
		t.Errorf("open findings of job other %+v; another job's judgment closed them", open)
	}
	_, open := byRecord(t, f, "sweep", "1")
	want := 0
	if _, ok := f.Store().(LaneStore); ok {
		want = 1
	}
	if len(open) != want || (want == 1 && open[0].Kind != reconcile.KindMissingLocally) {
		t.Errorf("open findings of job sweep %+v; want only the missing_locally one", open)
	}
}
