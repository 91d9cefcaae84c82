package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// Attacks on the findings statement that judges verified rows by whether the commit's own
// observations statement wrote their observation (observedHere: the observation's xmin is the
// commit's transaction id).

var obsDrift = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}

// readOne inserts row 1 (pending, pi_1) and returns a batch that read it.
func readOne(t *testing.T, pool *pgxpool.Pool, s *pgstore.Store[string]) reconcile.Batch[string] {
	t.Helper()
	exec(t, pool, `INSERT INTO payments (id, external_id, status, updated_at) VALUES (1, 'pi_1', 'pending', now() - interval '1 hour')`)
	b, err := s.Read(context.Background(), reconcile.ReadRequest{Job: "sweep", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A host's driver may send two verified outcomes of one record read at the same version: the
// commit records the newer answer's observation rather than failing on an observation written
// twice in one statement, and leaves the older answer alone, counted as changed (see
// reconcile.Sink).
func TestTwoVerifiedOutcomesOfOneRecordAtOneVersionCommit(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	b := readOne(t, pool, s)
	v := b.Records[0].Version
	at := time.Now().Add(-time.Minute)
	res, err := s.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true, Outcomes: []reconcile.Outcome{
		{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "succeeded", Verified: true, VerifiedAt: at, Decision: obsDrift, Version: v},
		{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "pending", Verified: true, VerifiedAt: at.Add(time.Second),
			Decision: reconcile.Decision{Verdict: reconcile.InSync}, Version: v},
	}})
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if open := openFindings(t, s, "sweep"); res.Findings != 0 || res.Changed != 1 || len(open) != 0 {
		t.Errorf("result %+v, open %v; want the older answer left alone and counted as changed", res, open)
	}
	var state string
	if err := pool.QueryRow(ctx, `SELECT external_state FROM reconcile_observations WHERE record_id = '1'`).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if state != "pending" {
		t.Errorf("observed %q; want the newer answer's pending", state)
	}
	// Both at the commit's time: the later outcome's answer is observed.
	b, err = s.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	v = b.Records[0].Version
	if _, err := s.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true, Outcomes: []reconcile.Outcome{
		{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "canceled", Verified: true, Decision: reconcile.Decision{Verdict: reconcile.InSync}, Version: v},
		{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "processing", Verified: true, Decision: reconcile.Decision{Verdict: reconcile.InSync}, Version: v},
	}}); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := pool.QueryRow(ctx, `SELECT external_state FROM reconcile_observations WHERE record_id = '1'`).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if state != "processing" {
		t.Errorf("observed %q; want the later outcome's processing", state)
	}
}

// An observation frozen by VACUUM FREEZE keeps its raw xmin, the id of the transaction that
// wrote it, never the current one: a commit whose older answer leaves it alone does not take
// it for its own, and judges nothing of the row.
func TestAFrozenObservationLeftAloneIsNotTakenForTheCommitsOwn(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	b := readOne(t, pool, s)
	v := b.Records[0].Version
	newer := time.Now().Add(-time.Minute)
	if _, err := s.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true, Outcomes: []reconcile.Outcome{
		{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "pending", Verified: true, VerifiedAt: newer,
			Decision: reconcile.Decision{Verdict: reconcile.InSync}, Version: v}}}); err != nil {
		t.Fatal(err)
	}
	exec(t, pool, `VACUUM (FREEZE) reconcile_observations`)
	var frozen bool
	if err := pool.QueryRow(ctx, `SELECT xmin::text::bigint <> 2 FROM reconcile_observations WHERE record_id = '1'`).Scan(&frozen); err != nil {
		t.Fatal(err)
	}
	if !frozen {
		t.Fatal("a frozen observation's xmin reads as FrozenTransactionId")
	}
	b, err := s.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true, Outcomes: []reconcile.Outcome{
		{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "succeeded", Verified: true, VerifiedAt: newer.Add(-time.Minute),
			Decision: obsDrift, Version: b.Records[0].Version}}})
	if err != nil {
		t.Fatal(err)
	}
	if open := openFindings(t, s, "sweep"); res.Findings != 0 || res.Changed != 1 || len(open) != 0 {
		t.Errorf("result %+v, open %v; want the older answer not judged, counted as changed", res, open)
	}
}
