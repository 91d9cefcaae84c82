package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// A webhook's canonical writer resolves a record's open findings (ResolveRecordFindings) while
// a sweep's commit opens a new finding of that record, which locks the record's open findings
// in the order of their kinds. Row 1 has two open findings, b_second opened before a_first. The
// webhook must lock them in the commits' order too, whatever order its update visits them in
// (here the table's, b_second first): else the sweep holds a_first and waits for b_second
// while the webhook holds b_second and waits for a_first, a deadlock, and one of them fails.
// A trigger holds the webhook's update at b_second, once it is locked, until the sweep waits.
func TestAWebhookResolvingARecordsFindingsTakesTurnsWithASweepOpeningOne(t *testing.T) {
	t.Parallel()
	base, _ := newStore(t, pgstore.Config{})
	ctx := context.Background()
	insertPayments(t, base, 1)
	exec(t, base, `INSERT INTO reconcile_findings (job, record_id, kind, local_state) VALUES ('sweep', '1', 'b_second', 'paid'), ('sweep', '1', 'a_first', 'paid')`)
	tu := newTurns(t, base)
	tu.hold("webhook", "reconcile_findings", "UPDATE", `OLD.kind = 'b_second'`)
	sweep, webhook := tu.store("sweep"), tu.store("webhook")

	b, err := sweep.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 10})
	if err != nil || len(b.Records) != 1 {
		t.Fatalf("read %d rows (%v); want 1", len(b.Records), err)
	}
	r := b.Records[0]
	drift := reconcile.Outcome{RecordID: r.ID, ExternalID: r.ExternalID, Local: "paid", External: "failed", Verified: true, Version: r.Version,
		Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "c_new"}}

	tu.lock()
	tu.start("webhook", func() error {
		tx, err := tu.pool("webhook").Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
		if _, err := webhook.ResolveRecordFindings(ctx, tx, "1", nil, reconcile.Resolution{As: reconcile.ResolutionFixed, By: "stripe-webhook"}); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	tu.start("sweep", func() error {
		_, err := sweep.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Next: r.Key, Outcomes: []reconcile.Outcome{drift}})
		return err
	})
	tu.unlock()
	tu.bothCommitted()
	rows, _ := base.Query(ctx, `SELECT kind FROM reconcile_findings WHERE resolved_at IS NULL ORDER BY kind`)
	open, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0] != "c_new" {
		t.Fatalf("open findings %v; want the sweep's c_new alone, the webhook having resolved the others", open)
	}
}
