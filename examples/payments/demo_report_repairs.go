package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// Command states in the outbox, as the dispatcher keeps them.
const (
	commandDone = "done"
	commandDead = "dead"
)

// repairResults is what the late webhook and the dispatcher did, read back from the tables.
type repairResults struct {
	since time.Time // the database clock before the repairs began

	late                       payment // the missed success whose webhook came late
	webhookStatus              int
	webhookBody                string
	rounds, claimed            int // rounds of Dispatcher.Work, and the commands they claimed
	elapsed                    time.Duration
	changed, unchanged         int                       // the repair handlers' writer calls (repairStats)
	commands                   map[string]map[string]int // outbox rows of the job by event type, then status
	payments                   map[string]paymentState   // by PaymentIntent id
	resolvedBy                 map[string]int            // repairable findings resolved, by actor
	openRepairable             int                       // repairable findings still open
	openByKind                 map[string]int            // open findings by kind (store.Status)
	lateResolvedBy, lateLedger string                    // who resolved the late payment's finding, and booked it
}

// paymentState is a payment after the repairs.
type paymentState struct {
	id       string
	status   string
	refunded int64 // amount_refunded
	touched  bool  // updated since the repairs began
	ledger   int   // its ledger rows
	// bookedBy is the actor of its ledger rows (the first one's, if there are several).
	bookedBy string
}

const (
	// paymentStates reads every payment with its ledger rows.
	paymentStates = `SELECT p.id::text, p.external_id, p.status, p.amount_refunded, p.updated_at >= $1, count(l.id),
			coalesce(min(l.applied_by), '')
		FROM reconcile_demo.payments AS p
		LEFT JOIN reconcile_demo.ledger AS l ON l.payment_id = p.id
		GROUP BY p.id`
	// commandsByStatus counts the job's repair commands by event type and status.
	commandsByStatus = `SELECT event_type, status, count(*) FROM reconcile_demo.reconcile_outbox
		WHERE payload->>'job' = $1 GROUP BY event_type, status`
)

// collectRepairs reads into r what the repairs left in the tables.
func collectRepairs(ctx context.Context, pool *pgxpool.Pool, schema string, store *pgstore.Store[paymentRow], r *repairResults) error {
	r.payments = map[string]paymentState{}
	rows, err := pool.Query(ctx, inSchema(schema, paymentStates), r.since)
	if err != nil {
		return fmt.Errorf("payments: read payments: %w", err)
	}
	var st paymentState
	var intent string
	_, err = pgx.ForEachRow(rows, []any{&st.id, &intent, &st.status, &st.refunded, &st.touched, &st.ledger, &st.bookedBy}, func() error {
		r.payments[intent] = st
		return nil
	})
	if err != nil {
		return fmt.Errorf("payments: read payments: %w", err)
	}
	late := r.payments[r.late.externalID]
	r.lateLedger = late.bookedBy

	r.commands = map[string]map[string]int{}
	rows, err = pool.Query(ctx, inSchema(schema, commandsByStatus), job)
	if err != nil {
		return fmt.Errorf("payments: count commands: %w", err)
	}
	var event, status string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&event, &status, &n}, func() error {
		if r.commands[event] == nil {
			r.commands[event] = map[string]int{}
		}
		r.commands[event][status] = n
		return nil
	})
	if err != nil {
		return fmt.Errorf("payments: count commands: %w", err)
	}

	// The repairable findings are those with a repair command.
	r.resolvedBy = map[string]int{}
	for after := int64(0); ; {
		page, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: job, State: reconcile.FindingsAll, AfterID: after, Limit: 500})
		if err != nil {
			return err
		}
		if len(page) == 0 {
			break
		}
		for _, f := range page {
			switch {
			case f.Command == "":
			case f.Open():
				r.openRepairable++
			default:
				r.resolvedBy[f.ResolvedBy]++
				if f.RecordID == late.id {
					r.lateResolvedBy = f.ResolvedBy
				}
			}
		}
		after = page[len(page)-1].ID
	}
	health, err := store.Status(ctx, job)
	if err != nil {
		return err
	}
	r.openByKind = health.OpenFindings
	return nil
}

// printRepairs shows what the late webhook and the repairs did.
func printRepairs(out io.Writer, p plan, r repairResults) {
	lateID := r.payments[r.late.externalID].id
	fmt.Fprintf(out, "\nA late webhook: payment_intent.succeeded for payment %s (%s), one of the missed successes,\n", lateID, r.late.externalID)
	fmt.Fprintf(out, "signed with the demo secret, through the webhook handler:\n")
	fmt.Fprintf(out, "    POST %s  %d  %s\n", webhookPath, r.webhookStatus, r.webhookBody)

	fmt.Fprintf(out, "\nRepairs: pgoutbox.Dispatcher, %d rounds of Work, %d commands claimed, %s.\n",
		r.rounds, r.claimed, r.elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "\n  %-40s %6s %6s %8s\n", "Repair commands in the outbox", "done", "dead", "waiting")
	for _, event := range slices.Sorted(maps.Keys(r.commands)) {
		byStatus := r.commands[event]
		waiting := sum(byStatus) - byStatus[commandDone] - byStatus[commandDead]
		fmt.Fprintf(out, "    %-38s %6d %6d %8d\n", event, byStatus[commandDone], byStatus[commandDead], waiting)
	}

	changed := map[string]int{} // "pending -> paid" and the like
	for _, pay := range p.payments {
		st := r.payments[pay.externalID]
		if st.status != pay.story.local {
			changed[pay.story.local+" -> "+st.status]++
		}
		if st.refunded != pay.refundedHere() {
			changed["refunds recorded"]++
		}
	}
	var byTransition []string
	for _, t := range slices.Sorted(maps.Keys(changed)) {
		byTransition = append(byTransition, fmt.Sprintf("%d %s", changed[t], t))
	}
	ledger := map[string]int{}
	for _, st := range r.payments {
		ledger[st.bookedBy] += st.ledger
	}
	fmt.Fprintf(out, "\n  %-40s %6s\n", "Through the canonical writer", "rows")
	fmt.Fprintf(out, "    %-38s %6d  %s\n", "payments changed", sum(changed), strings.Join(byTransition, ", "))
	fmt.Fprintf(out, "    %-38s %6d  %s\n", "ledger rows", sum(ledger), byActor(ledger))
	fmt.Fprintf(out, "    %-38s %6d  %s\n", "repairable findings resolved", sum(r.resolvedBy), byActor(r.resolvedBy))
	fmt.Fprintf(out, "    %-38s %6d\n", "repair commands that changed a payment", r.changed)
	fmt.Fprintf(out, "    %-38s %6d\n", "repair commands with nothing to change", r.unchanged)
	fmt.Fprintf(out, "    %-38s %6d  the late webhook's payment %s is %s, booked by %s\n",
		"repair commands skipped (resolved)", r.claimed-r.changed-r.unchanged, lateID,
		r.payments[r.late.externalID].status, cmp.Or(r.lateLedger, "nobody"))

	wantOpen := needsReview(p)
	fmt.Fprintf(out, "\n  %-40s %6s %8s\n", "Findings still open, for a person", "open", "planted")
	for _, kind := range sortedKeys(r.openByKind, wantOpen) {
		fmt.Fprintf(out, "    %-38s %6d %8d\n", kind, r.openByKind[kind], wantOpen[kind])
	}
}

// byActor lists the non-zero counts of m by actor.
func byActor(m map[string]int) string {
	var parts []string
	for _, actor := range slices.Sorted(maps.Keys(m)) {
		if m[actor] > 0 {
			parts = append(parts, fmt.Sprintf("%d by %s", m[actor], actor))
		}
	}
	return strings.Join(parts, ", ")
}

// needsReview counts the findings no repair command resolves, by kind, as planted.
func needsReview(p plan) map[string]int {
	m := map[string]int{}
	for i, s := range stories {
		if s.kind != "" && s.command == "" {
			m[s.kind] += p.counts[i]
		}
	}
	return m
}
