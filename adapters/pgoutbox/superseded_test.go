package pgoutbox_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// A payment partly refunded, then refunded in full, before the dispatcher ran: the first
// finding is superseded by the second, and only the second's command is applied. The first
// one's completes without calling the writer, as a command whose finding a person resolved.
func TestACommandWhoseFindingWasSupersededIsNotApplied(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, updated_at) VALUES (1, 'pi_1', 'paid', now() - interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	for _, state := range []string{"partly_refunded", "refunded"} {
		reconciletest.Cycle(t, reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Classifier: reconciletest.Money(),
			Gateway: reconciletest.NewGateway(map[string]string{"pi_1": state})}, 3)
	}
	fs := reconciletest.Findings(t, s, "sweep")
	if len(fs) != 2 || fs[0].Resolution != reconcile.ResolutionSuperseded || !fs[1].Open() {
		t.Fatalf("findings %+v; want the partial refund's superseded by the full one's", fs)
	}

	d := newDispatcher(t, pool, pgoutbox.Config{Tables: s.Tables()}, nil)
	var applied []int64
	if err := pgoutbox.HandleCommand(d, "ApplyRefund", func(ctx context.Context, tx pgx.Tx, cmd reconcile.Command) error {
		applied = append(applied, cmd.FindingID)
		return s.ResolveFindingIn(ctx, tx, cmd.FindingID, reconcile.Resolution{As: reconcile.ResolutionRepaired, By: reconcile.ResolvedByReconciler})
	}); err != nil {
		t.Fatal(err)
	}
	drain(t, pool, d)
	if !slices.Equal(applied, []int64{fs[1].ID}) {
		t.Fatalf("the writer applied the commands of findings %v; want %d's alone", applied, fs[1].ID)
	}
	var done int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_outbox WHERE status = 'done'`).Scan(&done); err != nil || done != 2 {
		t.Fatalf("%d commands done (%v); want both", done, err)
	}
}
