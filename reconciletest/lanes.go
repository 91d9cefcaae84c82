package reconciletest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

// LaneStore is a store that lanes can use too: a Matcher and a LaneSink over the sweep's data.
type LaneStore interface {
	reconcile.Store[string]
	reconcile.Matcher[string]
	reconcile.LaneSink
}

// Feed is a fake reconcile.Feed: each position ("" first) maps to a page. It records the
// positions it was asked from and calls wait once per step.
type Feed struct {
	mu    sync.Mutex
	pages map[string]reconcile.FeedPage[string]
	asked []string
}

// NewFeed returns a feed over the given pages, by the position each is read from.
func NewFeed(pages map[string]reconcile.FeedPage[string]) *Feed {
	return &Feed{pages: pages}
}

// Next implements reconcile.Feed.
func (f *Feed) Next(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[string], error) {
	if err := wait(ctx); err != nil {
		return reconcile.FeedPage[string]{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, pos)
	return f.pages[pos], nil
}

// Asked returns the positions the feed was asked from, in order.
func (f *Feed) Asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

// Objects is a page's objects: each pair is an external id and its state.
func Objects(idState ...string) []reconcile.FeedObject[string] {
	var o []reconcile.FeedObject[string]
	for i := 0; i+1 < len(idState); i += 2 {
		o = append(o, reconcile.FeedObject[string]{ExternalID: idState[i], Object: idState[i+1]})
	}
	return o
}

// LaneConfig returns a lane of job over the fixture's store, which must be a LaneStore, with
// the suite's Classifier.
func LaneConfig(t testing.TB, f Fixture, job, lane string, feed reconcile.Feed[string]) reconcile.LaneConfig[string, string] {
	t.Helper()
	s := laneStore(t, f)
	return reconcile.LaneConfig[string, string]{Job: job, Lane: lane, Feed: feed, Matcher: s, Sink: s, Classifier: Classifier()}
}

func laneStore(t testing.TB, f Fixture) LaneStore {
	t.Helper()
	s, ok := f.Store().(LaneStore)
	if !ok {
		t.Skipf("%T is not a reconcile.Matcher and reconcile.LaneSink: no lanes", f.Store())
	}
	return s
}

// Step runs one step of the lane and fails the test on an error.
func Step(t testing.TB, cfg reconcile.LaneConfig[string, string]) reconcile.Report {
	t.Helper()
	l, err := reconcile.NewLane(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := l.RunBatch(context.Background())
	if err != nil {
		t.Fatalf("lane step: %v", err)
	}
	return rep
}

// laneTests are the suite's cases for stores that lanes use too.
var laneTests = []struct {
	name string
	fn   func(t *testing.T, f Fixture)
}{
	{"a lane matches rows by external id, recent ones within its grace, and no row for an unknown id", testLaneMatch},
	{"a lane's position is kept by its commits and each step resumes from it", testLanePositions},
	{"a lane commit on a moved lane position fails and writes nothing", testLaneConcurrentCommit},
	{"a drift found by the sweep and by a lane is one finding with one command, whichever finds it first", testLaneDedup},
	{"an object no row refers to is one missing_locally finding, never reopened once resolved", testLaneMissingOnce},
}

func testLaneMatch(t *testing.T, f Fixture) {
	s := laneStore(t, f)
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "paid"}, Row{ID: 2, ExternalID: "pi_2", Local: "pending", Recent: true},
		Row{ID: 3, ExternalID: "pi_3", Local: "paid"})
	res, err := s.Match(context.Background(), reconcile.MatchRequest{Job: "sweep", ExternalIDs: []string{"pi_2", "pi_1", "pi_9"},
		Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]reconcile.Record[string]{}
	for _, r := range res.Rows {
		got[r.ExternalID] = r
	}
	if len(res.Rows) != 2 || got["pi_1"].ID != "1" || got["pi_1"].Local != "paid" || got["pi_1"].Recent ||
		got["pi_2"].ID != "2" || !got["pi_2"].Recent || got["pi_1"].Key == "" {
		t.Fatalf("Match = %+v; want rows 1 (not recent) and 2 (recent), with their keys", res.Rows)
	}
}

func testLanePositions(t *testing.T, f Fixture) {
	s := laneStore(t, f)
	ctx := context.Background()
	if c, err := s.ReadLane(ctx, "sweep", "events"); err != nil || c != (reconcile.Cursor{}) {
		t.Fatalf("ReadLane before any step = %+v, %v; want the zero cursor", c, err)
	}
	feed := NewFeed(map[string]reconcile.FeedPage[string]{"": {Next: "p1"}, "p1": {Next: "p2", End: true}})
	cfg := LaneConfig(t, f, "sweep", "events", feed)
	Step(t, cfg)
	c, err := s.ReadLane(ctx, "sweep", "events")
	if err != nil || c.Position != "p1" || c.Version == 0 {
		t.Fatalf("ReadLane after a step = %+v, %v; want position p1 and a version", c, err)
	}
	if rep := Step(t, cfg); !rep.Wrapped {
		t.Fatalf("second step %+v; want the feed's End", rep)
	}
	if other, err := s.ReadLane(ctx, "sweep", "reverse"); err != nil || other != (reconcile.Cursor{}) {
		t.Fatalf("another lane of the job = %+v, %v; want its own zero cursor", other, err)
	}
	if got, want := feed.Asked(), []string{"", "p1"}; !slices.Equal(got, want) {
		t.Fatalf("feed asked from %q; want %q", got, want)
	}
}

func testLaneConcurrentCommit(t *testing.T, f Fixture) {
	s := laneStore(t, f)
	ctx := context.Background()
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "pending"})
	stale, err := s.ReadLane(ctx, "sweep", "events")
	if err != nil {
		t.Fatal(err)
	}
	Step(t, LaneConfig(t, f, "sweep", "events", NewFeed(map[string]reconcile.FeedPage[string]{"": {Next: "p1"}})))
	_, err = s.CommitLane(ctx, reconcile.LaneCommit{Job: "sweep", Lane: "events", Cursor: stale, Next: "stale",
		Outcomes: []reconcile.Outcome{{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "succeeded", Verified: true,
			Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}}}})
	if !errors.Is(err, reconcile.ErrConcurrentRun) {
		t.Fatalf("lane commit on a moved position: err = %v, want ErrConcurrentRun", err)
	}
	if fs, cmds := Findings(t, f.Reviewer(), "sweep"), f.Commands(t, "sweep"); len(fs) != 0 || len(cmds) != 0 {
		t.Fatalf("the losing commit wrote findings %+v, commands %+v", fs, cmds)
	}
	if _, _, ok := f.Verified(t, "sweep", 1); ok {
		t.Fatal("the losing commit wrote an observation")
	}
	if c, err := s.ReadLane(ctx, "sweep", "events"); err != nil || c.Position != "p1" {
		t.Fatalf("ReadLane = %+v, %v; want the winner's position p1", c, err)
	}
}

func testLaneDedup(t *testing.T, f Fixture) {
	gw := drift(f, t) // rows 1-3 repairable, 4-5 for review
	// A lane finds rows 1 and 4 first; the sweep then finds all five.
	feed := NewFeed(map[string]reconcile.FeedPage[string]{"": {Next: "p1", Objects: Objects("pi_1", "succeeded", "pi_4", "canceled")}})
	if rep := Step(t, LaneConfig(t, f, "sweep", "events", feed)); rep.NewFindings != 2 || rep.NewCommands != 1 {
		t.Fatalf("lane step %+v; want 2 findings and 1 command", rep)
	}
	Cycle(t, Config(f, "sweep", gw, 7), 10)
	// Then a lane sees rows 2 and 5 again.
	feed = NewFeed(map[string]reconcile.FeedPage[string]{"p1": {Next: "p2", Objects: Objects("pi_2", "succeeded", "pi_5", "canceled")}})
	if rep := Step(t, LaneConfig(t, f, "sweep", "events", feed)); rep.NewFindings != 0 || rep.NewCommands != 0 {
		t.Fatalf("lane step after the sweep %+v; want nothing new", rep)
	}
	if fs, cmds := Findings(t, f.Reviewer(), "sweep"), f.Commands(t, "sweep"); len(fs) != 5 || len(cmds) != 3 {
		t.Fatalf("%d findings, %d commands; want 5 and 3", len(fs), len(cmds))
	}
}

func testLaneMissingOnce(t *testing.T, f Fixture) {
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "paid"})
	// Three passes of a reverse scan see the same object that no row refers to.
	objs := Objects("pi_1", "succeeded", "pi_orphan", "succeeded")
	cfg := LaneConfig(t, f, "sweep", "reverse", NewFeed(map[string]reconcile.FeedPage[string]{
		"": {Next: "p1", Objects: objs}, "p1": {Next: "p2", Objects: objs}, "p2": {Next: "p3", Objects: objs}}))
	cfg.ReportMissing = true
	step := func() reconcile.Report { return Step(t, cfg) }
	if rep := step(); rep.NewFindings != 1 || rep.NewCommands != 0 {
		t.Fatalf("first pass %+v; want one finding, no command", rep)
	}
	fs := Findings(t, f.Reviewer(), "sweep")
	if len(fs) != 1 || fs[0].Kind != reconcile.KindMissingLocally || fs[0].RecordID != "pi_orphan" {
		t.Fatalf("findings %+v; want one missing_locally finding of pi_orphan", fs)
	}
	if rep := step(); rep.NewFindings != 0 {
		t.Fatalf("second pass %+v; want the open finding kept, nothing new", rep)
	}
	if err := f.Reviewer().ResolveFinding(context.Background(), fs[0].ID, reconcile.Resolution{As: reconcile.ResolutionAccepted, By: "test"}); err != nil {
		t.Fatal(err)
	}
	if rep := step(); rep.NewFindings != 0 {
		t.Fatalf("pass after the finding was resolved %+v; want it not reopened", rep)
	}
	if fs := Findings(t, f.Reviewer(), "sweep"); len(fs) != 1 || fs[0].Open() {
		t.Fatalf("findings %+v; want the one resolved finding", fs)
	}
}
