package reconciletest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

// A commit judges only rows that are as they were read: a row changed between its batch's read
// and the commit (a webhook, a repair, a person) is left for the next cycle, as a row in grace
// would be: no finding, no command, no verification.

// changedRowTests are the suite's cases for rows changed between a batch's read and its commit.
var changedRowTests = []struct {
	name string
	fn   func(t *testing.T, f Fixture)
}{
	{"a row changed while its batch waits on the gateway gets no second finding, no command and no verification", testChangedDuringCall},
	{"a row changed between a lane's match and its commit gets no second finding, no command and no verification", testChangedBeforeLaneCommit},
	{"a row in sync again but changed while its batch waits on the gateway keeps its open findings and its verified time", testChangedInSyncKeepsFindings},
}

// callHook is a gateway that runs a function before answering about one id, once: a host that
// changes a row while its batch waits on the external system.
type callHook struct {
	*Gateway
	id   string
	once sync.Once
	fn   func()
}

func (g *callHook) Fetch(ctx context.Context, id string) (string, error) {
	if id == g.id {
		g.once.Do(g.fn)
	}
	return g.Gateway.Fetch(ctx, id)
}

// matchHook is a Matcher that runs a function after the rows are read, once.
type matchHook struct {
	reconcile.Matcher[string]
	once sync.Once
	fn   func()
}

func (m *matchHook) Match(ctx context.Context, req reconcile.MatchRequest) (reconcile.MatchResult[string], error) {
	res, err := m.Matcher.Match(ctx, req)
	m.once.Do(m.fn)
	return res, err
}

// Updater is an optional ability of a Fixture: changing rows in place, as a host's writer
// does (an UPDATE), keeping their last-verified times. The suite changes rows of a fixture
// without it by deleting them and inserting them again.
type Updater interface {
	// Update sets the rows' external ids, statuses and updated_at (Row.Recent) by id.
	Update(t testing.TB, rows ...Row)
}

// repaired changes rows as the canonical writer applying a repair would leave them (paid,
// last changed an hour ago, so that only the row's version tells the change) and resolves
// their open findings as repaired.
func repaired(t testing.TB, f Fixture, ids ...int64) {
	t.Helper()
	rows := make([]Row, len(ids))
	for i, id := range ids {
		rows[i] = paidRow(id)
	}
	if u, ok := f.(Updater); ok {
		u.Update(t, rows...)
	} else {
		f.Delete(t, ids...)
		f.Insert(t, rows...)
	}
	for _, fd := range Findings(t, f.Reviewer(), "sweep") {
		if fd.Open() && slices.Contains(ids, atoi(fd.RecordID)) {
			if err := f.Reviewer().ResolveFinding(context.Background(), fd.ID, reconcile.Resolution{
				As: reconcile.ResolutionRepaired, By: reconcile.ResolvedByReconciler}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func atoi(s string) int64 {
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// verifiedTimes returns the last-verified times of rows 1..n.
func verifiedTimes(t testing.TB, f Fixture, n int64) []time.Time {
	out := make([]time.Time, n+1)
	for i := int64(1); i <= n; i++ {
		out[i], _, _ = f.Verified(t, "sweep", i)
	}
	return out
}

// unverified checks that the rows ids, changed after they were read, kept the last-verified
// times they had before.
func unverified(t testing.TB, f Fixture, before []time.Time, ids ...int64) {
	t.Helper()
	after := verifiedTimes(t, f, int64(len(before)-1))
	for _, i := range ids {
		if !after[i].Equal(before[i]) {
			t.Errorf("row %d changed after its read, yet its last-verified time moved from %v to %v", i, before[i], after[i])
		}
	}
}

func testChangedDuringCall(t *testing.T, f Fixture) {
	// Rows 1 and 2 missed their success; row 3 is in sync.
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "pending"}, Row{ID: 2, ExternalID: "pi_2", Local: "pending"}, paidRow(3))
	gw := NewGateway(states(3, "succeeded"))
	cfg := Config(f, "sweep", gw, 10)
	Cycle(t, cfg, 3)
	if fs, cmds := Findings(t, f.Reviewer(), "sweep"), f.Commands(t, "sweep"); len(fs) != 2 || len(cmds) != 2 {
		t.Fatalf("first cycle: findings %+v, commands %+v; want one each for rows 1 and 2", fs, cmds)
	}
	before := verifiedTimes(t, f, 3)

	// The next batch reads the three rows; while it waits on the gateway for row 2, row 2's
	// repair is applied (paid, its finding resolved) and row 3 is rewritten.
	cfg.Gateway = &callHook{Gateway: gw, id: "pi_2", fn: func() { repaired(t, f, 2, 3) }}
	rep, err := reconcile.RunBatch(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.NewFindings != 0 || rep.NewCommands != 0 {
		t.Errorf("report %+v: %d new findings, %d new commands; want none: row 2 changed after it was read", rep, rep.NewFindings, rep.NewCommands)
	}
	if rep.Changed != 2 {
		t.Errorf("report %+v: %d rows changed since read; want rows 2 and 3", rep, rep.Changed)
	}
	var open []string
	for _, fd := range Findings(t, f.Reviewer(), "sweep") {
		if fd.Open() {
			open = append(open, fd.RecordID)
		}
	}
	if !slices.Equal(open, []string{"1"}) {
		t.Errorf("open findings of rows %v; want row 1's only (row 2 was repaired while its batch waited)", open)
	}
	if cmds := f.Commands(t, "sweep"); len(cmds) != 2 {
		t.Errorf("%d commands: %+v; want the first cycle's 2, no second one for row 2", len(cmds), cmds)
	}
	unverified(t, f, before, 2, 3)

	// Next cycle judges the rows as they are now.
	Cycle(t, Config(f, "sweep", gw, 10), 3)
	for _, i := range []int64{2, 3} {
		if at, ext, ok := f.Verified(t, "sweep", i); !ok || !at.After(before[i]) || ext != "succeeded" {
			t.Errorf("row %d after the next cycle: verified %v at %v (%q); want verified again", i, ok, at, ext)
		}
	}
}

func testChangedBeforeLaneCommit(t *testing.T, f Fixture) {
	s := laneStore(t, f)
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "pending"}, paidRow(2))
	feed := NewFeed(map[string]reconcile.FeedPage[string]{
		"":   {Objects: Objects("pi_1", "succeeded", "pi_2", "succeeded"), Next: "p1"},
		"p1": {Objects: Objects("pi_1", "succeeded", "pi_2", "succeeded"), Next: "p2"},
	})
	cfg := LaneConfig(t, f, "sweep", "reverse", feed)
	Step(t, cfg)
	if fs, cmds := Findings(t, f.Reviewer(), "sweep"), f.Commands(t, "sweep"); len(fs) != 1 || len(cmds) != 1 {
		t.Fatalf("first step: findings %+v, commands %+v; want one each for row 1", fs, cmds)
	}
	before := verifiedTimes(t, f, 2)

	// The next step matches both rows; then row 1's repair is applied and row 2 is rewritten,
	// before the step commits.
	cfg.Matcher = &matchHook{Matcher: s, fn: func() { repaired(t, f, 1, 2) }}
	rep := Step(t, cfg)
	if rep.NewFindings != 0 || rep.NewCommands != 0 || rep.Changed != 2 {
		t.Errorf("report %+v; want no new finding or command, both rows changed since matched", rep)
	}
	for _, fd := range Findings(t, f.Reviewer(), "sweep") {
		if fd.Open() {
			t.Errorf("finding %+v is open; row 1 was repaired before the step committed", fd)
		}
	}
	if cmds := f.Commands(t, "sweep"); len(cmds) != 1 {
		t.Errorf("%d commands: %+v; want the first step's only", len(cmds), cmds)
	}
	unverified(t, f, before, 1, 2)
}

func testChangedInSyncKeepsFindings(t *testing.T, f Fixture) {
	// Rows 1 and 2 are disputed: one finding each. Row 3 is in sync.
	f.Insert(t, paidRow(1), paidRow(2), paidRow(3))
	moneyCycle(t, f, "sweep", map[string]string{"pi_1": "disputed", "pi_2": "disputed", "pi_3": "succeeded"})
	if fs := Findings(t, f.Reviewer(), "sweep"); len(fs) != 2 {
		t.Fatalf("first cycle: findings %+v; want one each for rows 1 and 2", fs)
	}
	before := verifiedTimes(t, f, 3)

	// The disputes are won: in sync again. While the next batch waits on the gateway for row
	// 2, the host rewrites rows 1 and 3 (leaving the findings as they are): the batch's
	// verdicts about them are about rows as they no longer are.
	gw := NewGateway(states(3, "succeeded"))
	cfg := Config(f, "sweep", gw, 10)
	cfg.Classifier = money
	cfg.Gateway = &callHook{Gateway: gw, id: "pi_2", fn: func() {
		if u, ok := f.(Updater); ok {
			u.Update(t, paidRow(1), paidRow(3))
		} else {
			f.Delete(t, 1, 3)
			f.Insert(t, paidRow(1), paidRow(3))
		}
	}}
	rep, err := reconcile.RunBatch(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Changed != 2 {
		t.Errorf("report %+v: %d rows changed since read; want rows 1 and 3", rep, rep.Changed)
	}
	if _, open := byRecord(t, f, "sweep", "1"); len(open) != 1 {
		t.Errorf("row 1's open findings %+v; want its dispute still open: the row changed after it was read", open)
	}
	if _, open := byRecord(t, f, "sweep", "2"); len(open) != 0 {
		t.Errorf("row 2's open findings %+v; want its dispute cleared", open)
	}
	unverified(t, f, before, 1, 3)

	// The next cycle judges row 1 as it is now, and clears its finding.
	cfg.Gateway = gw
	Cycle(t, cfg, 3)
	if _, open := byRecord(t, f, "sweep", "1"); len(open) != 0 {
		t.Errorf("row 1's open findings %+v after the next cycle; want none", open)
	}
}
