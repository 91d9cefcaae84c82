package pgstore_test

import (
	"context"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// Where the findings statement judges verified rows by the observations its commit wrote, and
// where it checks them itself because those do not say.

// A commit given two verified outcomes of one record (a host's own driver may send them), read
// at two versions, judges each at its own: the one read before the row changed opens no
// finding and counts as changed, although the other, current, wrote the row's observation.
func TestACommitJudgingARecordTwiceJudgesEachAtItsOwnVersion(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	exec(t, pool, `INSERT INTO payments (id, external_id, status, updated_at) VALUES (1, 'pi_1', 'pending', now() - interval '1 hour')`)
	b, err := s.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	stale := b.Records[0].Version
	exec(t, pool, `UPDATE payments SET status = 'paid' WHERE id = 1`)
	var current string
	if err := pool.QueryRow(ctx, `SELECT xmin::text FROM payments WHERE id = 1`).Scan(&current); err != nil {
		t.Fatal(err)
	}
	drift := reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}
	res, err := s.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true, Outcomes: []reconcile.Outcome{
		{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "succeeded", Verified: true, Decision: drift, Version: stale},
		{RecordID: "1", ExternalID: "pi_1", Local: "paid", External: "succeeded", Verified: true,
			Decision: reconcile.Decision{Verdict: reconcile.InSync}, Version: current},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Findings != 0 || res.Commands != 0 || res.Changed != 1 {
		t.Errorf("result %+v; want no finding, no command, and the outcome read before the change counted as changed", res)
	}
	if open := openFindings(t, s, "sweep"); len(open) != 0 {
		t.Errorf("open findings %v; want none", open)
	}
}

// A verified outcome of no version (a host's own) is as read while its row exists, wherever
// a change of its key moved it: its finding is opened, though the sweep's range no longer
// holds the row to observe it.
func TestAVerifiedOutcomeOfNoVersionIsJudgedWhereverItsRowMoved(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{KeyColumns: []string{"created_at", "id"}})
	ctx := context.Background()
	exec(t, pool, `INSERT INTO payments (id, external_id, status, created_at, updated_at)
		SELECT i, 'pi_' || i, 'pending', now() - interval '2 days', now() - interval '1 hour' FROM generate_series(1, 2) AS i`)
	b, err := s.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	exec(t, pool, `UPDATE payments SET created_at = now() - interval '1 day' WHERE id = 1`)
	drift := reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}
	res, err := s.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Next: b.Records[0].Key, Outcomes: []reconcile.Outcome{
		{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "succeeded", Verified: true, Decision: drift}}})
	if err != nil {
		t.Fatal(err)
	}
	if open := openFindings(t, s, "sweep"); res.Findings != 1 || open["1"].ID == 0 {
		t.Errorf("result %+v, open findings %v; want row 1's finding opened", res, open)
	}
}
