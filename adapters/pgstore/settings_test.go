package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// plannerSettings are the settings a commit changes for its own statements.
const plannerSettings = `SELECT current_setting('enable_sort') || ' ' || current_setting('enable_incremental_sort') || ' ' ||
	current_setting('jit') || ' ' || current_setting('enable_seqscan') || ' ' || current_setting('plan_cache_mode') || ' ' ||
	current_setting('enable_nestloop') || ' ' || current_setting('enable_hashjoin')`

// settingsSeen is a Deliverer that records the planner settings its transaction has.
type settingsSeen struct{ got string }

func (d *settingsSeen) Deliver(ctx context.Context, tx pgx.Tx, _ []pgstore.QueuedCommand) error {
	return tx.QueryRow(ctx, plannerSettings).Scan(&d.got)
}

// A commit plans its statements with sorts, incremental sorts and JIT off (so that lookups of
// open findings use findings_open, whatever the findings table's statistics), a sweep's
// observations with hash joins, its findings statement and lag mark generic, and gives the
// host's Deliverer, as its triggers, the session's own settings back.
func TestADelivererRunsWithTheSessionsOwnPlannerSettings(t *testing.T) {
	t.Parallel()
	pool, plain := newStore(t, pgstore.Config{})
	insertPayments(t, pool, 1)
	ctx := context.Background()
	var want string
	if err := pool.QueryRow(ctx, plannerSettings).Scan(&want); err != nil {
		t.Fatal(err)
	}
	d := &settingsSeen{}
	cfg := plain.Config()
	cfg.Deliver = d
	s, err := pgstore.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	c := reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true, Outcomes: []reconcile.Outcome{{
		RecordID: "1", ExternalID: "pi_1", Local: "paid", External: "canceled", Verified: true,
		Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "paid_but_canceled", Detail: "canceled", Command: "mark_canceled"},
	}}}
	if res, err := s.Commit(ctx, c); err != nil || res.Commands != 1 {
		t.Fatalf("commit: %+v, %v; want a command delivered", res, err)
	}
	if d.got != want {
		t.Fatalf("the Deliverer ran with enable_sort, enable_incremental_sort, jit, enable_seqscan, plan_cache_mode, enable_nestloop, enable_hashjoin %q; want the session's %q",
			d.got, want)
	}
}
