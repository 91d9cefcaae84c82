package reconciletest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

// datedGateway is a reconcile.DatedBatchGateway over a fake external system whose bulk answers
// are dated: pi_1's at the earliest moment the engine allows (since), pi_3's in the future (a
// clock gone wrong), the others' left to the engine (the call's start). It remembers since and
// when its calls began.
type datedGateway struct {
	*Gateway

	mu     sync.Mutex
	since  time.Time
	called time.Time
}

func (g *datedGateway) FetchBatch(ctx context.Context, lookups []reconcile.Lookup, wait func(context.Context) error) (map[string]string, error) {
	panic("the engine calls FetchBatchSince of a DatedBatchGateway")
}

func (g *datedGateway) FetchBatchSince(ctx context.Context, lookups []reconcile.Lookup, since time.Time,
	wait func(context.Context) error) (map[string]reconcile.Answer[string], error) {
	g.mu.Lock()
	g.since, g.called = since, time.Now()
	g.mu.Unlock()
	if err := wait(ctx); err != nil {
		return nil, err
	}
	out := map[string]reconcile.Answer[string]{}
	for _, l := range lookups {
		state, err := g.Fetch(ctx, l.ExternalID)
		if err != nil {
			continue
		}
		a := reconcile.Answer[string]{Object: state}
		switch l.ExternalID {
		case "pi_1":
			a.At = since
		case "pi_3":
			a.At = time.Now().Add(time.Hour)
		}
		out[l.ExternalID] = a
	}
	return out, nil
}

// CommitTimeFixture is an optional ability of a Fixture whose store records a row's verified
// time as its commit's, not as its answer's (pgstore with observations in host columns, whose
// own-write test compares the host's updated_at with that time): testAnswerTime then checks
// that the time lies between the answer and the end of the batch.
type CommitTimeFixture interface {
	VerifiedAtCommit() bool
}

// testAnswerTime checks that a store records a row's verified time as the moment its answer
// was obtained (reconcile.Outcome.VerifiedAt), not the commit's, and never later than the
// commit, and that Status's lag counts it.
func testAnswerTime(t *testing.T, f Fixture) {
	if c, ok := f.(CommitTimeFixture); ok && c.VerifiedAtCommit() {
		testCommitTime(t, f)
		return
	}
	f.Insert(t, rows(4, paidRow)...)
	gw := &datedGateway{Gateway: NewGateway(states(4, "succeeded"))}
	cfg := Config(f, "sweep", gw, 10)
	for cycle := range 2 { // the second reads what the first recorded (pgstore's lag marks)
		before := time.Now()
		Cycle(t, cfg, 2)
		after := time.Now()
		gw.mu.Lock()
		since, called := gw.since, gw.called
		gw.mu.Unlock()
		at := func(id int64) time.Time {
			t.Helper()
			v, ext, ok := f.Verified(t, "sweep", id)
			if !ok || ext != "succeeded" {
				t.Fatalf("cycle %d: row %d not verified (%v, %q)", cycle, id, ok, ext)
			}
			return v
		}
		// Stores keep microseconds.
		near := func(a, b time.Time) bool { d := a.Sub(b); return -time.Microsecond < d && d < time.Microsecond }
		if v := at(1); !near(v, since) {
			t.Errorf("cycle %d: row 1 verified at %v; want %v, when its answer was obtained (the commit came %v later)",
				cycle, v, since, after.Sub(since))
		}
		if v := at(2); v.Before(before.Add(-time.Microsecond)) || v.After(called) {
			t.Errorf("cycle %d: row 2 verified at %v; want the bulk call's start, between %v and %v", cycle, v, before, called)
		}
		if v := at(3); v.After(after) {
			t.Errorf("cycle %d: row 3 verified at %v, after the batch ended (%v): an answer dated later is the commit's at most", cycle, v, after)
		}
	}
	sr, ok := f.Store().(reconcile.StatusReader)
	if !ok {
		return
	}
	st, err := sr.Status(context.Background(), "sweep")
	if err != nil {
		t.Fatal(err)
	}
	oldest, _, _ := f.Verified(t, "sweep", 1)
	if want := st.Now.Sub(oldest); st.Lag < want-time.Microsecond {
		t.Errorf("lag %v; want at least %v, since row 1's answer", st.Lag, want)
	}
}

// testCommitTime checks a store that records the commit's time (CommitTimeFixture): each row's
// verified time is no earlier than its answer and no later than the end of its batch.
func testCommitTime(t *testing.T, f Fixture) {
	f.Insert(t, rows(4, paidRow)...)
	gw := &datedGateway{Gateway: NewGateway(states(4, "succeeded"))}
	cfg := Config(f, "sweep", gw, 10)
	for cycle := range 2 {
		Cycle(t, cfg, 2)
		after := time.Now()
		gw.mu.Lock()
		since := gw.since
		gw.mu.Unlock()
		for id := int64(1); id <= 4; id++ {
			v, ext, ok := f.Verified(t, "sweep", id)
			if !ok || ext != "succeeded" {
				t.Fatalf("cycle %d: row %d not verified (%v, %q)", cycle, id, ok, ext)
			}
			if v.Before(since.Add(-time.Microsecond)) || v.After(after) {
				t.Errorf("cycle %d: row %d verified at %v; want between its answer (%v) and the batch's end (%v)", cycle, id, v, since, after)
			}
		}
	}
}
