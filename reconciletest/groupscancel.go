package reconciletest

import (
	"context"
	"errors"
	"testing"

	"github.com/reconcilekit/reconcile"
)

// testGroupsCancelled reads group records with a cancelled context: each read fails with the
// context's error rather than answering, as every other read of a store does, so that a
// console page whose client went away stops its work.
func testGroupsCancelled(t *testing.T, f Fixture) {
	s := groupStore(t, f)
	if err := commitGroups(t, s, "payouts", "p1", []reconcile.GroupRecord{tiedGroup("po_1", 10, 10, 0, 0)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.ListGroups(ctx, reconcile.GroupQuery{}); !errors.Is(err, context.Canceled) {
		t.Errorf("ListGroups on a cancelled context: err = %v, want context.Canceled", err)
	}
	if _, err := s.Group(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Group on a cancelled context: err = %v, want context.Canceled", err)
	}
	if _, err := s.CountGroups(ctx, reconcile.GroupQuery{}); !errors.Is(err, context.Canceled) {
		t.Errorf("CountGroups on a cancelled context: err = %v, want context.Canceled", err)
	}
}
