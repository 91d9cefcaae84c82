package riverdelivery_test

import (
	"context"
	"testing"

	"github.com/riverqueue/river"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// A finding superseded before its job ran (the drift changed kind) is not repaired: the job
// completes without calling the writer, as for a finding a person resolved.
func TestAJobWhoseFindingWasSupersededCompletesWithoutCallingTheWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, 0, nil)
	reconciletest.Cycle(t, w.config(), 3)
	// Payment 1's intent was canceled since: its missed success is superseded by the new drift.
	w.gw.Set("pi_1", "canceled")
	reconciletest.Cycle(t, w.config(), 3)
	fs, err := w.store.ListFindings(ctx, reconcile.FindingQuery{Job: "sweep", RecordID: "1", State: reconcile.FindingsAll})
	if err != nil || len(fs) != 2 || fs[0].Resolution != reconcile.ResolutionSuperseded || fs[0].SupersededBy != fs[1].ID {
		t.Fatalf("findings of row 1: %+v, %v; want the missed success superseded by the new drift", fs, err)
	}
	await(t, w.start(t), river.EventKindJobCompleted, 2)
	if n := w.count(t, `SELECT count(*) FROM effects`); n != 1 {
		t.Errorf("the writer changed %d rows; want 1 (row 2 only)", n)
	}
	if n := w.count(t, `SELECT count(*) FROM payments WHERE id = 1 AND status = 'pending'`); n != 1 {
		t.Error("payment 1 was marked paid though its finding was superseded")
	}
}
