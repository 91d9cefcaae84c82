package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// recordingDeliverer writes each command it is handed to the table delivered, through the
// commit's transaction, and fails with err if set.
type recordingDeliverer struct {
	calls int
	got   []pgstore.QueuedCommand
	err   error
}

func (d *recordingDeliverer) Deliver(ctx context.Context, tx pgx.Tx, cmds []pgstore.QueuedCommand) error {
	d.calls++
	d.got = append(d.got, cmds...)
	for _, c := range cmds {
		if _, err := tx.Exec(ctx, `INSERT INTO delivered (outbox_id) VALUES ($1)`, c.OutboxID); err != nil {
			return err
		}
	}
	return d.err
}

func TestADelivererReceivesTheCommandsOfACommitInItsTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := &recordingDeliverer{}
	pool, s := newStore(t, pgstore.Config{Deliver: d})
	laneExec(t, pool, `CREATE TABLE delivered (outbox_id bigint PRIMARY KEY)`,
		`INSERT INTO payments (id, external_id, status) VALUES (7, 'pi_7', 'pending'), (8, 'pi_8', 'pending')`)
	outcomes := []reconcile.Outcome{laneVerified("7", laneMissedSuccess), laneVerified("8", laneMissedSuccess), laneMissing("pi_9")}
	res, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "sweep", Lane: "events", Next: "p1", Outcomes: outcomes})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commands != 2 || d.calls != 1 || len(d.got) != 2 {
		t.Fatalf("result %+v, %d calls with %d commands; want 2 commands in one call", res, d.calls, len(d.got))
	}
	for i, c := range d.got {
		var findingID int64
		var payload []byte
		var handedOver bool
		if err := pool.QueryRow(ctx, `SELECT finding_id, payload, processed_at IS NOT NULL FROM reconcile_outbox WHERE id = $1`, c.OutboxID).
			Scan(&findingID, &payload, &handedOver); err != nil {
			t.Fatalf("command %d: outbox row %d: %v", i, c.OutboxID, err)
		}
		want := outcomes[i].RepairCommand("sweep")
		want.FindingID = findingID
		if c.Command != *want {
			t.Errorf("command %d is %+v; want %+v", i, c.Command, *want)
		}
		if back, err := reconcile.DecodeCommand(c.Command.Name, c.Payload); err != nil || back != c.Command {
			t.Errorf("command %d: its Payload decodes to %+v, %v", i, back, err)
		}
		if !handedOver {
			t.Errorf("command %d: outbox row %d is not marked handed over (processed_at)", i, c.OutboxID)
		}
	}
	if n := laneCount(t, pool, `SELECT count(*) FROM delivered`); n != 2 {
		t.Errorf("the deliverer's writes: %d rows committed; want 2", n)
	}
	// No dispatcher claims what was handed over, and it is not counted as waiting for one.
	if n := laneCount(t, pool, `SELECT count(*) FROM reconcile_outbox WHERE processed_at IS NULL`); n != 0 {
		t.Errorf("%d outbox rows left for a dispatcher; want 0", n)
	}

	// A commit that queues no command does not call the deliverer.
	if _, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "sweep", Lane: "events", Cursor: reconcile.Cursor{Version: 1}, Next: "p2",
		Outcomes: []reconcile.Outcome{laneVerified("8", laneSynced), laneMissing("pi_10")}}); err != nil {
		t.Fatal(err)
	}
	if d.calls != 1 {
		t.Errorf("the deliverer was called %d times; want once (the second commit queued nothing)", d.calls)
	}
}

func TestAFailingDelivererFailsTheCommitAndNothingIsRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	boom := errors.New("queue refused")
	d := &recordingDeliverer{err: boom}
	pool, s := newStore(t, pgstore.Config{Deliver: d})
	laneExec(t, pool, `CREATE TABLE delivered (outbox_id bigint PRIMARY KEY)`,
		`INSERT INTO payments (id, external_id, status) VALUES (7, 'pi_7', 'pending')`)
	_, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "sweep", Lane: "events", Next: "p1",
		Outcomes: []reconcile.Outcome{laneVerified("7", laneMissedSuccess)}})
	if !errors.Is(err, boom) {
		t.Fatalf("commit: %v; want the deliverer's error", err)
	}
	for _, q := range []string{
		`SELECT count(*) FROM delivered`,
		`SELECT count(*) FROM reconcile_findings`,
		`SELECT count(*) FROM reconcile_outbox`,
		`SELECT count(*) FROM reconcile_observations`,
		`SELECT count(*) FROM reconcile_lanes WHERE version > 0`,
	} {
		if n := laneCount(t, pool, q); n != 0 {
			t.Errorf("%s = %d after the failed commit; want 0", q, n)
		}
	}
	// Once the queue takes it, the same commit goes through.
	d.err = nil
	if _, err := s.CommitLane(ctx, reconcile.LaneCommit{Job: "sweep", Lane: "events", Next: "p1",
		Outcomes: []reconcile.Outcome{laneVerified("7", laneMissedSuccess)}}); err != nil {
		t.Fatal(err)
	}
	if n := laneCount(t, pool, `SELECT count(*) FROM delivered`); n != 1 {
		t.Errorf("%d delivered after the retry; want 1", n)
	}
}
