package main

import (
	"context"
	"fmt"
	"io"

	"github.com/riverqueue/river"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/riverdelivery"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// demo sweeps once, shows the jobs the commits enqueued, lets River work them and checks that
// every planted drift ended as it should.
func demo(ctx context.Context, out io.Writer, h *host, fx *fixture) error {
	tick, err := reconcile.RunTick(ctx, h.sweep, reconcile.TickBudget{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Sweep: %d rows in %d batches, %d findings, %d repair commands\n", tick.Scanned, tick.Batches, tick.NewFindings, tick.NewCommands)
	pool := h.pool
	var jobs int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = $1 AND state = 'available'`, riverdelivery.Kind).Scan(&jobs); err != nil {
		return err
	}
	fmt.Fprintf(out, "River: %d %s jobs available, inserted by the sweep's commits in their own transactions\n", jobs, riverdelivery.Kind)

	// Work them: wait until River has completed as many jobs as the sweep queued commands.
	events, cancel := h.client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled)
	defer cancel()
	if err := h.client.Start(ctx); err != nil {
		return err
	}
	defer h.client.Stop(context.WithoutCancel(ctx)) //nolint:errcheck // nothing is running by then
	completed := 0
	for completed < tick.NewCommands {
		select {
		case e := <-events:
			if e.Kind != river.EventKindJobCompleted {
				return fmt.Errorf("job %d %s: %v", e.Job.ID, e.Kind, e.Job.Errors)
			}
			completed++
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	fmt.Fprintf(out, "River: %d jobs completed, each in the transaction of its repair\n", completed)

	var paid, repaired, resolutions, reviewOpen, outboxDone int
	if err := pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM payments WHERE status = 'pending'),
			(SELECT count(*) FROM reconcile_findings WHERE kind = $1 AND resolution = 'repaired'),
			(SELECT count(*) FROM reconcile_finding_events WHERE action = 'resolved'),
			(SELECT count(*) FROM reconcile_findings WHERE kind <> $1 AND resolved_at IS NULL),
			(SELECT count(*) FROM reconcile_outbox WHERE status = 'done')`, stripepolicy.KindMissedSuccess).
		Scan(&paid, &repaired, &resolutions, &reviewOpen, &outboxDone); err != nil {
		return err
	}
	fmt.Fprintf(out, "Result: %d payments still pending, %d missed_success findings repaired (%d resolutions recorded), %d commands done, %d findings left for a person\n",
		paid, repaired, resolutions, outboxDone, reviewOpen)
	if paid != 0 || repaired != fx.repairable || resolutions != fx.repairable || outboxDone != fx.repairable ||
		tick.NewCommands != fx.repairable || reviewOpen != fx.review {
		return fmt.Errorf("planted %d repairable and %d for review; the result differs", fx.repairable, fx.review)
	}
	fmt.Fprintln(out, "Every repair was applied once through the canonical writer and resolved its finding")
	return nil
}
