package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

var _ reconcile.WriteCounter = (*pgstore.Store[string])(nil)

// A store's write count moves with its own writes only: a Monitor keeping one store's status
// does not drop it for another store's batch in the same process.
func TestWritesCountsTheStoresOwnWritesOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, a := newStore(t, pgstore.Config{})
	_, b := newStore(t, pgstore.Config{})
	before := a.Writes()
	if err := b.RecordFailure(ctx, "sweep", errors.New("down")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Commit(ctx, reconcile.Commit{Job: "sweep", Wrap: true}); err != nil {
		t.Fatal(err)
	}
	if got := a.Writes(); got != before {
		t.Errorf("store a's writes went from %d to %d after two writes through store b, want unchanged", before, got)
	}
	if err := a.RecordFailure(ctx, "sweep", errors.New("down")); err != nil {
		t.Fatal(err)
	}
	if got := a.Writes(); got != before+1 {
		t.Errorf("store a's writes went from %d to %d after one write through it, want one more", before, got)
	}
}
