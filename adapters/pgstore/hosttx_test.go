package pgstore_test

import (
	"context"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// A store whose DB is the host's own transaction commits each batch in a savepoint, whose
// writes carry a transaction id of their own: the rows its observations statement left
// unobserved are told apart from those it wrote all the same, so only a row changed since
// its read counts as changed.
func TestAStoreInAHostTransactionCountsOnlyTheRowsChangedSinceTheirRead(t *testing.T) {
	t.Parallel()
	pool, _ := newStore(t, pgstore.Config{})
	ctx := context.Background()
	exec(t, pool, `INSERT INTO payments (id, external_id, status, updated_at)
		SELECT i, 'pi_' || i, 'paid', now() - interval '1 hour' FROM generate_series(1, 3) AS i`)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	s, err := pgstore.New(tx, pgstore.Config{Table: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	gw := reconciletest.NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "succeeded", "pi_3": "succeeded"})
	// While the batch asks for row 2, another session rewrites it.
	fetch := reconcile.GatewayFunc[string](func(ctx context.Context, id string) (string, error) {
		if id == "pi_2" {
			exec(t, pool, `UPDATE payments SET updated_at = now() - interval '1 hour' WHERE id = 2`)
		}
		return gw.Fetch(ctx, id)
	})
	cfg := reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Gateway: fetch,
		Classifier: reconciletest.Classifier(), BatchSize: 10}
	rep, err := reconcile.RunBatch(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Changed != 1 {
		t.Fatalf("report %+v: %d rows changed since their read; want row 2 alone", rep, rep.Changed)
	}
}
