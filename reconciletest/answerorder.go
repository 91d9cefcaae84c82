package reconciletest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

// An answer older than the verified time a store holds for its row (written by a lane, the
// sweep or a sharded worker of the job) is not recorded: it would overturn what a newer answer
// found. Its commit treats the row as changed since its read: no observation, no finding
// opened, superseded or closed, no command, counted in Report.Changed, asked again later.

// answerOrderTests are the suite's cases for answers committed out of the order they were
// obtained in.
var answerOrderTests = []struct {
	name string
	fn   func(t *testing.T, f Fixture)
}{
	{"a sweep's answer older than a lane's committed one supersedes nothing and queues no second command", testOlderSweepAnswerLast},
	{"a lane's answer older than the sweep's committed one clears nothing and leaves the newer observation", testOlderLaneAnswerLast},
}

// answeredFirst is a gateway that obtains its answer about id, then runs fn once before
// returning it: the answer is older than anything fn commits.
type answeredFirst struct {
	*Gateway
	id   string
	once sync.Once
	fn   func()
}

func (g *answeredFirst) Fetch(ctx context.Context, id string) (string, error) {
	s, err := g.Gateway.Fetch(ctx, id)
	if id == g.id {
		g.once.Do(g.fn)
	}
	return s, err
}

// listedFirst is a feed that runs fn once when asked for a page, after the lane took the time
// its page is listed at and before it returns the page: the page is older than anything fn
// commits.
type listedFirst struct {
	*Feed
	once sync.Once
	fn   func()
}

func (f *listedFirst) Next(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[string], error) {
	f.once.Do(f.fn)
	return f.Feed.Next(ctx, pos, wait)
}

// tick returns once the clock has moved a few microseconds past its call, so that an answer
// obtained after it is later than one obtained before, however a store rounds times (to the
// microsecond).
func tick() {
	for from := time.Now(); time.Since(from) < 3*time.Microsecond; {
	}
}

// laneStep runs one step of a lane of job sweep over feed with the Money policy. It reports
// failures with t.Errorf: it may run on a goroutine of the engine's.
func laneStep(t testing.TB, s LaneStore, feed reconcile.Feed[string]) reconcile.Report {
	l, err := reconcile.NewLane(reconcile.LaneConfig[string, string]{Job: "sweep", Lane: "events", Feed: feed,
		Matcher: s, Sink: s, Classifier: money})
	if err != nil {
		t.Errorf("lane: %v", err)
		return reconcile.Report{}
	}
	rep, err := l.RunBatch(context.Background())
	if err != nil {
		t.Errorf("lane step: %v", err)
	}
	return rep
}

// oneOpen checks that row 1 of job sweep has one finding, open, of kind, with one command,
// and that its observation is external.
func oneOpen(t testing.TB, f Fixture, kind, external string) {
	t.Helper()
	all, open := byRecord(t, f, "sweep", "1")
	if len(all) != 1 || len(open) != 1 || open[0].Kind != kind {
		t.Errorf("findings of row 1 %+v; want one, open, %s (the newer answer's)", all, kind)
	}
	if cmds := f.Commands(t, "sweep"); len(cmds) != 1 || len(open) == 1 && cmds[0].FindingID != open[0].ID {
		t.Errorf("commands %+v; want the newer finding's alone", cmds)
	}
	if _, ext, ok := f.Verified(t, "sweep", 1); !ok || ext != external {
		t.Errorf("row 1 observed as %q (verified %v); want %q, the newer answer", ext, ok, external)
	}
}

// againLater checks that the next cycle asks row 1 again, verifies it as of its new answer,
// and leaves the newer finding as it is.
func againLater(t testing.TB, f Fixture, gw *Gateway, kind, external string) {
	t.Helper()
	before, _, _ := f.Verified(t, "sweep", 1)
	calls := gw.Calls("pi_1")
	reps := moneyCycleOn(t, f, gw)
	if gw.Calls("pi_1") != calls+1 || reps[0].Changed != 0 || reps[0].NewFindings != 0 {
		t.Errorf("next cycle %+v, pi_1 asked %d more times; want it asked once, nothing new", reps[0], gw.Calls("pi_1")-calls)
	}
	if at, _, _ := f.Verified(t, "sweep", 1); !at.After(before) {
		t.Errorf("row 1 verified at %v after the next cycle; want later than %v", at, before)
	}
	oneOpen(t, f, kind, external)
}

// moneyCycleOn runs a cycle of job sweep over gw with the Money policy.
func moneyCycleOn(t testing.TB, f Fixture, gw reconcile.Gateway[string]) []reconcile.Report {
	t.Helper()
	cfg := Config(f, "sweep", gw, 10)
	cfg.Classifier = money
	return Cycle(t, cfg, 3)
}

func testOlderSweepAnswerLast(t *testing.T, f Fixture) {
	s := laneStore(t, f)
	f.Insert(t, paidRow(1))
	// The sweep asks first: partly refunded. Before its batch commits, the payment is refunded
	// in full and a lane commits that newer answer.
	gw := NewGateway(map[string]string{"pi_1": "partly_refunded"})
	var lane reconcile.Report
	hook := &answeredFirst{Gateway: gw, id: "pi_1", fn: func() {
		tick()
		gw.Set("pi_1", "refunded")
		lane = laneStep(t, s, NewFeed(map[string]reconcile.FeedPage[string]{"": {Next: "p1", Objects: Objects("pi_1", "refunded")}}))
	}}
	cfg := Config(f, "sweep", hook, 10)
	cfg.Classifier = money
	rep, err := reconcile.RunBatch(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if lane.NewFindings != 1 || lane.NewCommands != 1 {
		t.Fatalf("lane step %+v; want refund_missed found, with its command", lane)
	}
	if rep.Changed != 1 || rep.NewFindings != 0 || rep.NewCommands != 0 {
		t.Errorf("sweep batch %+v; want row 1 counted changed (its answer is older than the lane's), nothing new", rep)
	}
	oneOpen(t, f, "refund_missed", "refunded")
	againLater(t, f, gw, "refund_missed", "refunded")
}

func testOlderLaneAnswerLast(t *testing.T, f Fixture) {
	s := laneStore(t, f)
	f.Insert(t, paidRow(1))
	// A lane lists the payment in sync; before its step commits, the payment is refunded and
	// a sweep commits that newer answer.
	gw := NewGateway(map[string]string{"pi_1": "refunded"})
	var sweep []reconcile.Report
	feed := &listedFirst{Feed: NewFeed(map[string]reconcile.FeedPage[string]{"": {Next: "p1", Objects: Objects("pi_1", "succeeded")}}),
		fn: func() {
			tick()
			cfg := Config(f, "sweep", gw, 10)
			cfg.Classifier = money
			rep, err := reconcile.RunBatch(context.Background(), cfg)
			if err != nil {
				t.Errorf("sweep: %v", err)
			}
			sweep = append(sweep, rep)
		}}
	lane := laneStep(t, s, feed)
	if len(sweep) != 1 || sweep[0].NewFindings != 1 || sweep[0].NewCommands != 1 {
		t.Fatalf("sweep batch %+v; want refund_missed found, with its command", sweep)
	}
	if lane.Changed != 1 || lane.NewFindings != 0 {
		t.Errorf("lane step %+v; want row 1 counted changed (its answer is older than the sweep's), nothing new", lane)
	}
	oneOpen(t, f, "refund_missed", "refunded")
	for _, e := range detail(t, f, Findings(t, f.Reviewer(), "sweep")[0].ID).History {
		if e.Action == reconcile.ActionResolved {
			t.Errorf("history has %+v; the older answer, in sync, must not clear the finding", e)
		}
	}
	againLater(t, f, gw, "refund_missed", "refunded")
}
