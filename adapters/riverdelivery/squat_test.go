package riverdelivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/reconcilekit/reconcile/adapters/riverdelivery"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// nowhere is a queue no worker serves.
const nowhere = "nowhere"

// jobsInQueue counts the outbox rows waiting for River whose named job is in queue.
func (w *world) jobsInQueue(t *testing.T, queue string) int {
	t.Helper()
	return w.count(t, `SELECT count(*) FROM reconcile_outbox AS o JOIN river_job AS j ON o.lease_owner = 'river job ' || j.id
		WHERE o.status = 'pending' AND j.queue = $1`, queue)
}

// Jobs inserted ahead for the outbox ids the next commit takes, in a queue nobody works and due
// in a year, took those commands: the commit's insert was skipped as their duplicate and the
// rows named them, so the repairs would wait a year, or for ever; Redrive named them again.
func TestJobsInsertedAheadOfTheirOutboxRowsDoNotTakeTheCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, 0, nil)
	var last int64
	if err := w.pool.QueryRow(ctx, `SELECT nextval(pg_get_serial_sequence('reconcile_outbox', 'id'))`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	tables := w.store.Tables()
	for _, id := range []int64{last + 1, last + 2} {
		if _, err := w.client.Insert(ctx, riverdelivery.Args{OutboxID: id, Schema: tables.Schema, Prefix: "reconcile_"},
			&river.InsertOpts{Queue: nowhere, ScheduledAt: time.Now().Add(365 * 24 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	reconciletest.Cycle(t, w.config(), 3)
	if n := w.count(t, `SELECT count(*) FROM reconcile_outbox WHERE id IN ($1, $2)`, last+1, last+2); n != 2 {
		t.Fatalf("the commit took other outbox ids than %d and %d", last+1, last+2)
	}
	if n := w.jobsInQueue(t, nowhere); n != 0 {
		t.Errorf("%d commands wait for a job inserted ahead of them; want 0", n)
	}
	d, err := riverdelivery.New(w.client, riverdelivery.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Redrive(ctx, w.pool, tables, last+1, "ana"); err != nil {
		t.Fatal(err)
	}
	if n := w.jobsInQueue(t, river.QueueDefault); n != 2 {
		t.Fatalf("%d commands wait for a job in the Deliverer's queue; want 2", n)
	}
	// The commit's two jobs, one of them refused after the re-drive, and the re-drive's.
	await(t, w.start(t), river.EventKindJobCompleted, 3)
	if n := w.count(t, `SELECT count(*) FROM effects`); n != 2 {
		t.Errorf("the writer changed %d rows; want 2", n)
	}
}

// A command whose job waits in a queue no worker serves any more (the Deliverer's Queue was
// changed, or a job was moved) is re-driven with a job in the Deliverer's queue: Redrive named
// the stuck job again and returned it.
func TestRedriveReplacesAJobThatWaitsWhereNoWorkerServes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, 0, nil)
	reconciletest.Cycle(t, w.config(), 3)
	var id, stuck int64
	if err := w.pool.QueryRow(ctx, `UPDATE river_job SET queue = $1 WHERE id = (SELECT min(id) FROM river_job)
		RETURNING (args->>'outbox_id')::bigint, id`, nowhere).Scan(&id, &stuck); err != nil {
		t.Fatal(err)
	}
	d, err := riverdelivery.New(w.client, riverdelivery.Config{})
	if err != nil {
		t.Fatal(err)
	}
	job, err := d.Redrive(ctx, w.pool, w.store.Tables(), id, "ana")
	if err != nil {
		t.Fatal(err)
	}
	if job == stuck || w.jobsInQueue(t, nowhere) != 0 {
		t.Fatalf("Redrive of command %d named job %d, which waits in queue %q; want a new job", id, job, nowhere)
	}
	await(t, w.start(t), river.EventKindJobCompleted, 2)
	if n := w.count(t, `SELECT count(*) FROM effects`); n != 2 {
		t.Errorf("the writer changed %d rows; want 2", n)
	}
}
