package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// Two lanes of one job (a tie-out's events lane and its walk) recording the same payouts at
// once, each listing them in its own order: neither deadlocks nor fails, and each payout is
// one record.
func TestTwoLanesRecordingTheSamePayoutsAtOnceNeitherDeadlocksNorDuplicates(t *testing.T) {
	t.Parallel()
	_, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	var ids []string
	for i := range 30 {
		ids = append(ids, fmt.Sprintf("po_%02d", i))
	}
	run := func(lane string, order []string) error {
		for range 15 {
			cur, err := s.ReadLane(ctx, "payouts", lane)
			if err != nil {
				return err
			}
			var gs []reconcile.GroupRecord
			for _, id := range order {
				gs = append(gs, reconcile.GroupRecord{ID: id, Status: "paid", Amount: 1, Currency: "usd", TiedOut: true, Held: true,
					Itemized: true, Expected: 1, ExpectedKnown: true})
			}
			if _, err := s.CommitGroups(ctx, reconcile.LaneCommit{Job: "payouts", Lane: lane, Cursor: cur, Next: "x"}, gs); err != nil {
				return err
			}
		}
		return nil
	}
	reversed := slices.Clone(ids)
	slices.Reverse(reversed)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { errs[0] = run("events", ids) })
	wg.Go(func() { errs[1] = run("walk", reversed) })
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.CountGroups(ctx, reconcile.GroupQuery{Job: "payouts"})
	if err != nil || n.Recorded != 30 {
		t.Fatalf("CountGroups = %+v, %v; want 30 records", n, err)
	}
}

// A store whose groups table is missing (migration 014 not applied) says to migrate, from the
// commit and from the reads, and writes nothing.
func TestGroupsWithoutTheirTableSayToMigrate(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `DROP TABLE reconcile_groups`); err != nil {
		t.Fatal(err)
	}
	_, err := s.CommitGroups(ctx, reconcile.LaneCommit{Job: "payouts", Lane: "tieout", Next: "p1"},
		[]reconcile.GroupRecord{{ID: "po_1", Status: "paid", Currency: "usd"}})
	if !errors.Is(err, pgstore.ErrNotMigrated) {
		t.Errorf("CommitGroups = %v; want ErrNotMigrated", err)
	}
	if cur, _ := s.ReadLane(ctx, "payouts", "tieout"); cur.Position != "" {
		t.Errorf("the lane moved to %q", cur.Position)
	}
	// The same for a plain lane commit whose lanes table is missing.
	if _, err := pool.Exec(ctx, `DROP TABLE reconcile_lanes`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "j", Lane: "events", Next: "p1"}); !errors.Is(err, pgstore.ErrNotMigrated) {
		t.Errorf("CommitLane = %v; want ErrNotMigrated", err)
	}
	if _, err := s.ListGroups(ctx, reconcile.GroupQuery{}); !errors.Is(err, pgstore.ErrNotMigrated) {
		t.Errorf("ListGroups = %v; want ErrNotMigrated", err)
	}
	if _, err := s.CountGroups(ctx, reconcile.GroupQuery{}); !errors.Is(err, pgstore.ErrNotMigrated) {
		t.Errorf("CountGroups = %v; want ErrNotMigrated", err)
	}
}
