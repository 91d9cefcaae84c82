package deliverytest

import (
	"context"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/reconciletest"
)

var cases = []struct {
	name string
	fn   func(t *testing.T, w *world)
}{
	{"a command applies once through its writer and resolves its finding", testOnce},
	{"a command whose finding a person resolved first is not applied", testResolvedFirst},
	{"a command read while a commit supersedes its finding waits for that commit and is not applied", testSupersededMeanwhile},
	{"a command read while a person resolves its finding waits for them and is not applied", testResolvedMeanwhile},
	{"a second delivery of an applied command, its finding reopened, applies nothing", replay(Harness.Duplicate)},
	{"a retry of the delivery that applied a command, its finding reopened, applies nothing", replay(Harness.Retry)},
	{"a delivery made again after the first was cleaned up, the finding reopened, applies nothing", replay(Harness.Reinsert)},
	{"a delivery naming the command's tables another way, the finding reopened, applies nothing", replay(Harness.Rename)},
	{"an outbox row set back to pending by hand, its finding reopened, is applied again by no delivery", testSetBack},
	{"a forged delivery naming an outbox row that does not exist applies nothing", testForgedMissing},
	{"a forged delivery naming another command's row and another row's finding applies nothing", testForgedOther},
	{"concurrent deliveries of one command apply it once", testConcurrent},
	{"a delivery whose commit fails after the writer ran leaves nothing, and the command applies once after", testCrash},
}

func testOnce(t *testing.T, w *world) {
	w.h.Drain(t)
	w.check(t, w.applied())
	w.h.Drain(t)
	w.check(t, w.applied())
}

// A person who resolved a finding before its command applied is not overruled.
func testResolvedFirst(t *testing.T, w *world) {
	ctx := context.Background()
	if err := w.store.ResolveFinding(ctx, w.c1.FindingID, reconcile.Resolution{
		As: reconcile.ResolutionAccepted, By: "ana", Note: "refunded by hand"}); err != nil {
		t.Fatal(err)
	}
	w.h.Drain(t)
	want := w.applied()
	delete(want.Calls, w.c1.FindingID)
	want.Payments[w.c1.RecordID] = "pending"
	w.check(t, want)
	f, err := w.store.Finding(ctx, w.c1.FindingID)
	if err != nil {
		t.Fatal(err)
	}
	if f.Resolution != reconcile.ResolutionAccepted || f.ResolvedBy != "ana" {
		t.Errorf("payment 1's finding resolved %q by %q; want accepted by ana", f.Resolution, f.ResolvedBy)
	}
}

// replay applies both commands, has a person set payment 1 back to pending and reopen its
// finding, and delivers payment 1's command again the way deliver does: nothing applies.
func replay(deliver func(Harness, testing.TB, Command)) func(t *testing.T, w *world) {
	return func(t *testing.T, w *world) {
		w.h.Drain(t)
		w.check(t, w.applied())
		w.reopen(t, w.c1)
		deliver(w.h, t, w.c1)
		w.h.Drain(t)
		w.check(t, w.reopened())
	}
}

// A person who sets the outbox row back to pending too does not make it deliverable again:
// the documented re-drives are the only way back.
func testSetBack(t *testing.T, w *world) {
	w.h.Drain(t)
	w.check(t, w.applied())
	w.reopen(t, w.c1)
	if _, err := w.pool.Exec(context.Background(), `UPDATE `+w.outbox()+` SET status = 'pending' WHERE id = $1`, w.c1.OutboxID); err != nil {
		t.Fatal(err)
	}
	want := w.reopened()
	want.Outbox[w.c1.OutboxID] = "pending"
	w.h.Drain(t)
	w.check(t, want)
	for _, deliver := range []func(Harness, testing.TB, Command){Harness.Retry, Harness.Duplicate, Harness.Reinsert, Harness.Rename} {
		deliver(w.h, t, w.c1)
		w.h.Drain(t)
	}
	w.check(t, want)
}

// A forged delivery naming an outbox row that does not exist, another payment (unpaid) and
// another row's finding for review neither marks that payment paid nor resolves the finding.
func testForgedMissing(t *testing.T, w *world) {
	w.h.Forge(t, w.forged(max(w.c1.OutboxID, w.c2.OutboxID)+1000))
	w.h.Drain(t)
	w.check(t, w.applied())
}

// A forged delivery naming a command's outbox row that is still waiting applies nothing of its
// own; the command applies once, with its own finding.
func testForgedOther(t *testing.T, w *world) {
	w.h.Forge(t, w.forged(w.c2.OutboxID))
	w.h.Drain(t)
	w.check(t, w.applied())
}

// Three deliveries of one command at once, each held inside the writer (or before it) until
// every one got as far as it can, apply it once.
func testConcurrent(t *testing.T, w *world) {
	pid, release := w.hold(t, w.c1)
	unfinished, wait := w.h.Concurrently(t, w.c1, 3)
	Eventually(t, "every delivery finished or waiting for payment 1", func() bool {
		n := unfinished()
		b := w.blockedBy(t, pid)
		return b >= 1 && b >= n
	})
	release()
	wait()
	w.h.Drain(t)
	w.check(t, w.applied())
}

// The writer's transaction fails at its commit, after the writer and whatever the delivery
// does after it: nothing of it stays, and the delivery tries again.
func testCrash(t *testing.T, w *world) {
	w.crash.Store(true)
	w.h.Drain(t)
	if w.crash.Load() {
		t.Fatal("no delivery reached the writer")
	}
	w.check(t, w.applied())
}

// A command read for delivery while a commit is superseding its finding is not applied: the
// delivery waits for that commit and finds the finding superseded. The commit (a lane judging
// payment 1 anew) is held on the finding's lock until the delivery got as far as it can.
func testSupersededMeanwhile(t *testing.T, w *world) {
	lane, err := reconcile.NewLane(reconcile.LaneConfig[string, string]{Job: "sweep", Lane: "events", Matcher: w.store, Sink: w.store,
		Classifier: reconciletest.Classifier(), Feed: reconciletest.NewFeed(map[string]reconcile.FeedPage[string]{
			"": {Next: "p1", Objects: reconciletest.Objects("pi_1", "canceled")}})})
	if err != nil {
		t.Fatal(err)
	}
	closedMeanwhile(t, w, reconcile.ResolutionSuperseded, func(ctx context.Context) error {
		_, err := lane.RunBatch(ctx)
		return err
	})
}

// A command read for delivery while a person resolves its finding is not applied: the delivery
// waits for the person and finds the finding resolved.
func testResolvedMeanwhile(t *testing.T, w *world) {
	closedMeanwhile(t, w, reconcile.ResolutionAccepted, func(ctx context.Context) error {
		return w.store.ResolveFinding(ctx, w.c1.FindingID, reconcile.Resolution{As: reconcile.ResolutionAccepted, By: "ana", Note: "refunded by hand"})
	})
}

// closedMeanwhile runs close, which closes payment 1's finding as resolution, and delivers
// payment 1's command while close waits on the finding's lock, which the suite holds until
// the delivery got as far as it can: the command is not applied.
func closedMeanwhile(t *testing.T, w *world, resolution string, close func(context.Context) error) {
	ctx := context.Background()
	pid, release := w.holdFinding(t, w.c1.FindingID)
	closed := make(chan error, 1)
	go func() { closed <- close(ctx) }()
	Eventually(t, "the finding's closing waiting for its lock", func() bool { return w.blockedBy(t, pid) >= 1 })
	_, wait := w.h.Concurrently(t, w.c1, 1)
	Eventually(t, "payment 1's delivery waiting too", func() bool { return w.blockedBy(t, pid) >= 2 })
	release()
	if err := <-closed; err != nil {
		t.Fatalf("closing the finding: %v", err)
	}
	wait()
	w.h.Drain(t)
	want := w.applied()
	delete(want.Calls, w.c1.FindingID)
	want.Payments[w.c1.RecordID] = "pending"
	w.check(t, want)
	if f, err := w.store.Finding(ctx, w.c1.FindingID); err != nil || f.Resolution != resolution {
		t.Errorf("payment 1's finding %+v (%v); want it %s", f.Finding, err, resolution)
	}
}
