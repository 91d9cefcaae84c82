package pgstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// applyPaymentSucceeded is a host's canonical writer: the one transition both the webhook
// handler and the repair handler call. The guarded update makes it a no-op when the payment
// is no longer pending, and the ledger entry is written only by the call that changed state.
func applyPaymentSucceeded(ctx context.Context, tx pgx.Tx, paymentID int64) (bool, error) {
	tag, err := tx.Exec(ctx, `UPDATE payments SET status = 'paid', updated_at = now() WHERE id = $1 AND status = 'pending'`, paymentID)
	if err != nil || tag.RowsAffected() == 0 {
		return false, err
	}
	_, err = tx.Exec(ctx, `INSERT INTO ledger (payment_id, entry) VALUES ($1, 'captured')`, paymentID)
	return err == nil, err
}

// applyRepair is what a dispatcher does with one queued command: the transition and the
// finding's resolution commit together, whether or not the transition changed anything.
func applyRepair(ctx context.Context, pool *pgxpool.Pool, s *pgstore.Store[string], cmd reconcile.Command) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, `SELECT $1::bigint`, cmd.RecordID).Scan(&id); err != nil {
			return err
		}
		if _, err := applyPaymentSucceeded(ctx, tx, id); err != nil {
			return err
		}
		// A webhook may have resolved it already: that is no failure of the repair.
		err := s.ResolveFindingIn(ctx, tx, cmd.FindingID, reconcile.Resolution{As: reconcile.ResolutionRepaired, By: "reconciler"})
		if errors.Is(err, reconcile.ErrAlreadyResolved) {
			return nil
		}
		return err
	})
}

func webhook(ctx context.Context, pool *pgxpool.Pool, paymentID int64) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := applyPaymentSucceeded(ctx, tx, paymentID)
		return err
	})
}

// missedSuccess sets up one payment whose success webhook was lost and runs a cycle, which
// queues one ApplyPaymentSucceeded command.
func missedSuccess(t *testing.T) (*pgxpool.Pool, *pgstore.Store[string], reconcile.Command, reconcile.Config[string, string]) {
	pool, s := newStore(t, pgstore.Config{}, paymentsDDL, `CREATE TABLE ledger (payment_id bigint, entry text)`)
	f := fixture{pool, s}
	f.Insert(t, reconciletest.Row{ID: 1, ExternalID: "pi_1", Local: "pending"})
	cfg := reconciletest.Config(f, "sweep", reconciletest.NewGateway(map[string]string{"pi_1": "succeeded"}), 10)
	reconciletest.Cycle(t, cfg, 3)
	cmds := f.Commands(t, "sweep")
	if len(cmds) != 1 || cmds[0].Name != "ApplyPaymentSucceeded" {
		t.Fatalf("commands %+v, want one ApplyPaymentSucceeded", cmds)
	}
	return pool, s, cmds[0], cfg
}

func checkAppliedOnce(t *testing.T, pool *pgxpool.Pool, s *pgstore.Store[string]) {
	t.Helper()
	ctx := context.Background()
	var status string
	var ledger int
	if err := pool.QueryRow(ctx, `SELECT status, (SELECT count(*) FROM ledger) FROM payments WHERE id = 1`).Scan(&status, &ledger); err != nil {
		t.Fatal(err)
	}
	if status != "paid" || ledger != 1 {
		t.Fatalf("status %q with %d ledger entries, want paid with exactly 1", status, ledger)
	}
	fs := fixture{pool, s}.Findings(t, "sweep")
	if len(fs) != 1 || fs[0].Open() || fs[0].Resolution != "repaired" {
		t.Fatalf("findings %+v, want the one finding resolved as repaired", fs)
	}
}

func TestRepairAndLateWebhookChangeStateOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	orders := []struct {
		name string
		run  func(pool *pgxpool.Pool, s *pgstore.Store[string], cmd reconcile.Command) error
	}{
		{"repair first, webhook second", func(pool *pgxpool.Pool, s *pgstore.Store[string], cmd reconcile.Command) error {
			if err := applyRepair(ctx, pool, s, cmd); err != nil {
				return err
			}
			return webhook(ctx, pool, 1)
		}},
		{"webhook first, repair second", func(pool *pgxpool.Pool, s *pgstore.Store[string], cmd reconcile.Command) error {
			if err := webhook(ctx, pool, 1); err != nil {
				return err
			}
			return applyRepair(ctx, pool, s, cmd)
		}},
		{"both at once", func(pool *pgxpool.Pool, s *pgstore.Store[string], cmd reconcile.Command) error {
			var wg sync.WaitGroup
			errs := make([]error, 2)
			start := make(chan struct{})
			wg.Add(2)
			go func() { defer wg.Done(); <-start; errs[0] = applyRepair(ctx, pool, s, cmd) }()
			go func() { defer wg.Done(); <-start; errs[1] = webhook(ctx, pool, 1) }()
			close(start)
			wg.Wait()
			if errs[0] != nil {
				return errs[0]
			}
			return errs[1]
		}},
	}
	for _, o := range orders {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			for range 5 { // several rounds: "at once" interleaves differently each time
				pool, s, cmd, _ := missedSuccess(t)
				if err := o.run(pool, s, cmd); err != nil {
					t.Fatal(err)
				}
				checkAppliedOnce(t, pool, s)
			}
		})
	}
}

func TestApplyingARepairResolvesItsFindingSoTheDriftCanBeFoundAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, s, cmd, cfg := missedSuccess(t)
	// The webhook got there first: the repair's transition is a no-op, yet the finding closes.
	if err := webhook(ctx, pool, 1); err != nil {
		t.Fatal(err)
	}
	if err := applyRepair(ctx, pool, s, cmd); err != nil {
		t.Fatal(err)
	}
	checkAppliedOnce(t, pool, s)
	// The same drift happens again later (say a manual edit back to pending): it is found anew.
	if _, err := pool.Exec(ctx, `UPDATE payments SET status = 'pending', updated_at = now() - interval '1 hour' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	reconciletest.Cycle(t, cfg, 3)
	f := fixture{pool, s}
	if fs, cmds := f.Findings(t, "sweep"), f.Commands(t, "sweep"); len(fs) != 2 || !fs[1].Open() || len(cmds) != 2 {
		t.Fatalf("findings %+v and %d commands; want a second open finding with its own command", fs, len(cmds))
	}
	// Resolving twice is harmless and says it was already closed.
	if err := s.ResolveFinding(ctx, cmd.FindingID, reconcile.Resolution{As: reconcile.ResolutionRepaired, By: "again"}); !errors.Is(err, reconcile.ErrAlreadyResolved) {
		t.Fatalf("second resolve = %v, want ErrAlreadyResolved", err)
	}
	if err := s.ResolveFinding(ctx, 999999, reconcile.Resolution{As: "fixed", By: "x"}); !errors.Is(err, reconcile.ErrFindingNotFound) {
		t.Fatalf("resolving an unknown finding = %v, want ErrFindingNotFound", err)
	}
}
