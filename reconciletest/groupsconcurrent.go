package reconciletest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/reconcilekit/reconcile"
)

// testGroupsConcurrent commits new groups from several lanes at once while a reader counts and
// pages them: what the console's overview and payouts list do as a tie-out runs.
func testGroupsConcurrent(t *testing.T, f Fixture) {
	s := groupStore(t, f)
	ctx := context.Background()
	const lanes, steps = 4, 6
	var wg sync.WaitGroup
	errs := make(chan error, lanes+1)
	done := make(chan struct{})
	for l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lane := fmt.Sprint("lane", l)
			for i := range steps {
				cur, err := s.ReadLane(ctx, "payouts", lane)
				if err != nil {
					errs <- err
					return
				}
				// Step i of each lane: held, not held, then pending, in turn.
				var g reconcile.GroupRecord
				switch id := fmt.Sprintf("po_%d_%d", l, i); i % 3 {
				case 0:
					g = tiedGroup(id, 10, 10, 0, 0)
				case 1:
					g = tiedGroup(id, 10, 9, 1, 1)
				default:
					g = reconcile.GroupRecord{ID: id, Status: "in_transit", Amount: 10, Currency: "usd"}
				}
				if _, err := s.CommitGroups(ctx, reconcile.LaneCommit{Job: "payouts", Lane: lane, Cursor: cur,
					Next: fmt.Sprint("p", i)}, []reconcile.GroupRecord{g}); err != nil {
					errs <- fmt.Errorf("%s step %d: %w", lane, i, err)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	// The reader: counts never go back (only new groups are recorded) nor disagree with
	// themselves, and a walk by keyset never lists a record twice nor out of order.
	var last reconcile.GroupCounts
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		n, err := s.CountGroups(ctx, reconcile.GroupQuery{Job: "payouts"})
		if err != nil {
			t.Fatalf("CountGroups during commits: %v", err)
		}
		if n.Recorded < last.Recorded || n.Pending < last.Pending || n.NotHeld < last.NotHeld ||
			n.Pending+n.NotHeld > n.Recorded || n.Recorded > lanes*steps {
			t.Fatalf("counts went from %+v to %+v during commits", last, n)
		}
		last = n
		seen := map[int64]bool{}
		q := reconcile.GroupQuery{Job: "payouts", Limit: 2}
		for {
			page, err := s.ListGroups(ctx, q)
			if err != nil {
				t.Fatalf("ListGroups during commits: %v", err)
			}
			for _, g := range page {
				if seen[g.Seq] || (q.BeforeSeq != 0 && g.Seq >= q.BeforeSeq) {
					t.Fatalf("record %d (%s) listed twice or above its keyset %d", g.Seq, g.ID, q.BeforeSeq)
				}
				seen[g.Seq] = true
				q.BeforeSeq = g.Seq
			}
			if len(page) < q.Limit {
				break
			}
		}
	}
	close(errs)
	for err := range errs {
		t.Fatalf("a commit: %v", err)
	}
	n, err := s.CountGroups(ctx, reconcile.GroupQuery{Job: "payouts"})
	if want := (reconcile.GroupCounts{Recorded: lanes * steps, Pending: lanes * steps / 3, NotHeld: lanes * steps / 3}); err != nil || n != want {
		t.Fatalf("counts after the commits = %+v, %v; want %+v", n, err, want)
	}
	if all := listGroups(t, s, reconcile.GroupQuery{Job: "payouts", Limit: 1000}); len(all) != lanes*steps {
		t.Fatalf("records after the commits = %d; want %d", len(all), lanes*steps)
	}
}
