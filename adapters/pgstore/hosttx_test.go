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

// In a host transaction the findings statement runs in a savepoint too, where the observations
// this commit wrote do not carry the transaction's id: it checks its verified rows as read
// itself, so it opens a drifted row's finding and closes an in-sync row's, and counts only the
// row changed since its read.
func TestAStoreInAHostTransactionOpensAndClosesTheFindingsOfItsVerifiedRows(t *testing.T) {
	t.Parallel()
	pool, ps := newStore(t, pgstore.Config{})
	ctx := context.Background()
	exec(t, pool, `INSERT INTO payments (id, external_id, status, updated_at)
		SELECT i, 'pi_' || i, CASE WHEN i = 3 THEN 'paid' ELSE 'pending' END, now() - interval '1 hour' FROM generate_series(1, 3) AS i`)
	gw := reconciletest.NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "succeeded", "pi_3": "succeeded", "pi_4": "succeeded"})
	jc := reconcile.Config[string, string]{Job: "sweep", Source: ps, Sink: ps, Gateway: gw,
		Classifier: reconciletest.Classifier(), BatchSize: 10}
	reconciletest.Cycle(t, jc, 10) // rows 1 and 2 missed their success: two findings open
	// Row 2 caught up (its finding to close); row 4 arrives with a missed success (one to open).
	exec(t, pool, `UPDATE payments SET status = 'paid' WHERE id = 2`)
	exec(t, pool, `INSERT INTO payments (id, external_id, status, updated_at) VALUES (4, 'pi_4', 'pending', now() - interval '1 hour')`)

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	s, err := pgstore.New(tx, pgstore.Config{Table: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	// While the batch asks for row 3, another session rewrites it.
	jc.Source, jc.Sink = s, s
	jc.Gateway = reconcile.GatewayFunc[string](func(ctx context.Context, id string) (string, error) {
		if id == "pi_3" {
			exec(t, pool, `UPDATE payments SET updated_at = now() - interval '1 hour' WHERE id = 3`)
		}
		return gw.Fetch(ctx, id)
	})
	rep, err := reconcile.RunBatch(ctx, jc)
	if err != nil {
		t.Fatal(err)
	}
	if rep.NewFindings != 1 || rep.Changed != 1 {
		t.Errorf("report %+v: %d findings opened, %d rows changed since their read; want row 4's, and row 3", rep, rep.NewFindings, rep.Changed)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if open := openFindings(t, ps, "sweep"); len(open) != 2 || open["1"].ID == 0 || open["4"].ID == 0 {
		t.Errorf("open findings %v; want rows 1 and 4 (row 2's closed)", open)
	}
}
