package pgoutbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// A handler that ends its transaction in SQL (a ROLLBACK or COMMIT it runs, or a function it
// calls runs) would have the completion run outside it, on its own: after a ROLLBACK the
// command was marked done with its repair lost. It is retried instead, saying why.
func TestAHandlerThatEndsItsTransactionIsNotMarkedDone(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"ROLLBACK", "COMMIT"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			pool := outboxWorld(t)
			ids := enqueue(t, pool, "Apply", 1, 1, `{}`)
			d := newDispatcher(t, pool, pgoutbox.Config{}, map[string]pgoutbox.Handler{
				"Apply": func(ctx context.Context, tx pgx.Tx, del pgoutbox.Delivery) error {
					if err := recordEffect(ctx, tx, del); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, end)
					return err
				}})
			if n, err := d.Work(context.Background()); n != 1 || err != nil {
				t.Fatalf("Work = %d, %v; want the command", n, err)
			}
			c := command(t, pool, ids[0])
			if c.Status != "pending" || c.Failures != 1 || !strings.Contains(c.LastError, "transaction") {
				t.Fatalf("command %+v; want a retry saying the handler ended its transaction", c)
			}
		})
	}
}

// ApplyCommand, which other deliveries (adapters/riverdelivery) complete after, says so too.
func TestApplyCommandSaysAWriterEndedItsTransaction(t *testing.T) {
	t.Parallel()
	pool := outboxWorld(t)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the writer ended it
	cmd := reconcile.Command{Name: "Apply", Job: "payments", RecordID: "p1", FindingID: 1}
	err = pgoutbox.ApplyCommand(ctx, tx, pgstore.Tables{}, cmd, func(ctx context.Context, tx pgx.Tx, _ reconcile.Command) error {
		_, err := tx.Exec(ctx, "ROLLBACK")
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "ended its transaction") {
		t.Fatalf("ApplyCommand = %v, want an error saying the writer ended its transaction", err)
	}
}
