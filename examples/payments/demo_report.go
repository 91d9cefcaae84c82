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
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// reviewShown is how many of the findings a person must review are listed, of each kind.
const reviewShown = 3

// results is what a host would look at after the sweep's cycle, read back from the database,
// with what stripetest's request log says about the calls.
type results struct {
	cycle
	traffic
	status   reconcile.Status
	commands map[string]int // outbox rows by event type
	// observed is the number of rows with an observation; unobserved counts the rows Stripe
	// answered for that have none.
	observed, unobserved int
	// logName is whose request log the calls were counted from; empty means stripetest's.
	logName string
}

const (
	// commandsByType counts the repair commands queued by the job.
	commandsByType = `SELECT event_type, count(*) FROM reconcile_demo.reconcile_outbox
		WHERE payload->>'job' = $1 GROUP BY event_type`
	// observedRows counts payments with an observation, and those among $2 without one.
	observedRows = `SELECT count(o.record_id), count(*) FILTER (WHERE o.record_id IS NULL AND p.external_id = ANY($2))
		FROM reconcile_demo.payments AS p
		LEFT JOIN reconcile_demo.reconcile_observations AS o ON o.job = $1 AND o.record_id = p.id::text`
)

// collect reads the cycle's results back.
func collect(ctx context.Context, be backend, reqs stripeLog, p plan, c cycle) (results, error) {
	r := results{cycle: c, traffic: readLog(reqs.Log(), p)}
	var err error
	if r.status, err = be.store().Status(ctx, job); err != nil {
		return r, err
	}
	if r.commands, err = be.commands(ctx); err != nil {
		return r, err
	}
	answered := externalIDs(p.where(func(s *story) bool { return !s.recent && !s.unavailable }))
	if r.observed, r.unobserved, err = be.observed(ctx, answered); err != nil {
		return r, err
	}
	return r, nil
}

// countCommands counts the job's repair commands in the outbox by event type.
func countCommands(ctx context.Context, pool *pgxpool.Pool, schema string) (map[string]int, error) {
	rows, err := pool.Query(ctx, inSchema(schema, commandsByType), job)
	if err != nil {
		return nil, fmt.Errorf("payments: count commands: %w", err)
	}
	commands := map[string]int{}
	var event string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&event, &n}, func() error { commands[event] = n; return nil }); err != nil {
		return nil, fmt.Errorf("payments: count commands: %w", err)
	}
	return commands, nil
}

// readReview returns the first reviewShown of each kind of the open findings that no repair
// command will resolve (the NeedsReview ones: nothing will resolve them but a person), and
// how many there are.
func readReview(ctx context.Context, store reconcile.Reviewer) (map[string][]reconcile.Finding, int, error) {
	review, open := map[string][]reconcile.Finding{}, 0
	// Findings come back a keyset page at a time.
	for after := int64(0); ; {
		page, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: job, State: reconcile.FindingsAll, AfterID: after, Limit: 500})
		if err != nil {
			return review, open, err
		}
		if len(page) == 0 {
			return review, open, nil
		}
		for _, f := range page {
			if f.Open() && f.Command == "" {
				open++
				if len(review[f.Kind]) < reviewShown {
					review[f.Kind] = append(review[f.Kind], f)
				}
			}
		}
		after = page[len(page)-1].ID
	}
}

func externalIDs(ps []payment) []string {
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.externalID
	}
	return ids
}

// printPlan shows the stories planted in table and in stripetest.
func printPlan(out io.Writer, table string, p plan) {
	fmt.Fprintf(out, "Loaded %d payments into %s and their PaymentIntents into stripetest, and %d PaymentIntents\n",
		len(p.payments), table, len(p.stripeOnly))
	fmt.Fprintf(out, "no row refers to, with this drift planted:\n")
	fmt.Fprintf(out, "  %-38s %6s  %-20s %-41s %s\n", "story", "count", "local", "Stripe", "the reconciler must say")
	for i := range stories {
		s := &stories[i]
		local, external, expect := s.columns()
		fmt.Fprintf(out, "  %-38s %6d  %-20s %-41s %s\n", s.name, p.counts[i], local, external, expect)
	}
}

// columns returns the story's row in the plan's table: the local state, Stripe's, and what the
// reconciler must say.
func (s *story) columns() (local, external, expect string) {
	local, external = s.local, string(s.external)
	switch m := s.money; {
	case m.currency != "":
		local += ", " + strings.ToUpper(m.currency)
		external += ", USD"
	case m.amountOff != 0:
		local += ", " + reconcile.FormatAmount(m.amountOff, "usd") + " more"
	case m.refundFails:
		local += ", refunded"
		external += ", refund fails after the sweep"
	case m.refunded == 1 && m.afterSweep:
		external += ", refunded after the sweep"
	case m.refunded > 0:
		external += fmt.Sprintf(", %.0f%% refunded", 100*m.refunded)
	case m.dispute != "" && m.afterSweep:
		external += ", disputed after the sweep"
	case m.dispute != "":
		external += ", dispute " + string(m.dispute)
	}
	switch {
	case s.notFound:
		external = "404 (never saw it)"
	case s.unavailable:
		external = "503 (retrieve fails)"
	case s.recent:
		external += " (not asked)"
	case s.later != "":
		external = string(s.later) + " after the sweep"
	}
	if s.stripeOnly {
		local = "(no row)"
	}
	switch {
	case s.young:
		expect = laneReverse + ": nothing yet, inside its grace window"
	case s.finder() == laneEvents:
		expect = s.verdict.String() + ", then " + laneEvents + ": " + s.laneVerdict().String()
	case s.finder() == laneReverse:
		expect = laneReverse + ": " + s.verdict.String()
	default:
		expect = s.verdict.String()
	}
	if s.kind != "" {
		expect += " " + s.kind
	}
	return local, external, expect
}

// printBatch prints one progress line.
func printBatch(out io.Writer, n int, rep reconcile.Report) {
	ms := float64(rep.Duration) / float64(time.Millisecond)
	if rep.Wrapped {
		fmt.Fprintf(out, "  batch %3d  scanned %4d  short read: the cycle is complete and the cursor back at the start  %6.1fms\n",
			n, rep.Scanned, ms)
		return
	}
	var b strings.Builder
	for _, v := range reconcile.Verdicts {
		fmt.Fprintf(&b, "  %s %3d", v, rep.Verdicts[v])
	}
	fmt.Fprintf(out, "  batch %3d  scanned %4d%s  findings +%-3d commands +%-3d calls %3d %6.1fms\n",
		n, rep.Scanned, b.String(), rep.NewFindings, rep.NewCommands, rep.GatewayCalls, ms)
}

// printCycle prints what the sweep's cycle cost and judged, next to what was planted.
func printCycle(out io.Writer, p plan, r results) {
	want := p.expected()
	fmt.Fprintf(out, "\nOne cycle: %d batches, %d rows, %d Stripe API calls, %s.\n",
		r.batches, r.scanned, r.calls, r.elapsed.Round(time.Millisecond))

	// From stripetest's log: what the cycle spent of the account's Stripe rate limit.
	fmt.Fprintf(out, "\n  %-40s %6s\n", "Stripe API calls ("+cmp.Or(r.logName, "stripetest's log")+")", "calls")
	fmt.Fprintf(out, "    %-38s %6d  pages of up to 100 intents created near a batch's rows\n",
		"list      GET /v1/payment_intents", r.list)
	fmt.Fprintf(out, "    %-38s %6d  one per row no list showed: %d answered 404, %d answered 503",
		"retrieve  GET /v1/payment_intents/{id}", r.retrieve, r.notFound, r.unavailable)
	if others := r.retrieve - r.notFound - r.unavailable; others > 0 {
		// A row alone in its batch is retrieved: one GET is no dearer than a list call.
		fmt.Fprintf(out, ", %d others", others)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "    %-38s %6d  one per disputed charge: its disputes' status is not on the charge\n",
		"list      GET /v1/disputes", r.disputes)
	perRow := 0.0
	if r.scanned > 0 {
		perRow = float64(r.list+r.retrieve+r.disputes) / float64(r.scanned)
	}
	fmt.Fprintf(out, "    %-38s %6.3f  one retrieve per row outside the grace period would be %d calls\n", "calls per row", perRow, want.asked)

	fmt.Fprintf(out, "\n  %-40s %6s %8s\n", "Verdicts over the cycle", "rows", "planted")
	for _, v := range reconcile.Verdicts {
		fmt.Fprintf(out, "    %-38s %6d %8d\n", v, r.verdicts[v], want.verdicts[v])
	}
	fmt.Fprintf(out, "\n  The cycle opened %d findings and queued %d repair commands (planted: %d and %d).\n",
		r.findings, r.cycle.commands, sum(want.findings), sum(want.commands))
}

// printSummary prints what a host would look at once the sweep and both lanes have run, next
// to what was planted.
func printSummary(out io.Writer, p plan, r results, l laneResults) {
	want := p.expected()
	fmt.Fprintf(out, "\nAfter the sweep, the events lane and the reverse scan:\n")
	fmt.Fprintf(out, "\n  %-40s %6s %8s\n", "Open findings by kind", "open", "planted")
	for _, kind := range sortedKeys(l.status.OpenFindings, want.allFindings) {
		fmt.Fprintf(out, "    %-38s %6d %8d\n", kind, l.status.OpenFindings[kind], want.allFindings[kind])
	}

	fmt.Fprintf(out, "\n  %-40s %6s %8s\n", "Repair commands queued in the outbox", "rows", "planted")
	for _, event := range sortedKeys(l.commands, want.allCommands) {
		fmt.Fprintf(out, "    %-38s %6d %8d\n", event, l.commands[event], want.allCommands[event])
	}

	st := l.status
	fmt.Fprintf(out, "\n  Monitoring (store.Status)\n")
	fmt.Fprintf(out, "    %-38s %s  (%d rows not verified yet count from their created_at)\n",
		"reconciliation lag", age(st.Lag), st.Rows-int64(r.observed))
	fmt.Fprintf(out, "    %-38s %d\n", "cycles completed", st.CyclesCompleted)
	fmt.Fprintf(out, "    %-38s %.1f%% (%d of %d rows)\n", "last batch unverifiable",
		100*st.UnverifiableRatio(), st.LastBatchUnverifiable, st.LastBatchScanned)
	if open := sum(st.OpenFindings); open > 0 {
		fmt.Fprintf(out, "    %-38s %d, the oldest detected %s ago\n", "open findings", open, age(st.Now.Sub(st.OldestOpenFinding)))
	}
	for _, ls := range st.Lanes {
		gap := "no gap"
		if ls.GapOpen {
			gap = "gap open since " + ls.GapAt.UTC().Format(time.RFC3339) + ": " + ls.GapReason
		}
		fmt.Fprintf(out, "    %-38s at the end of its feed %s ago, %s so far; %s\n",
			"lane "+ls.Lane, age(ls.SinceEnd(st.Now)), plural(int(ls.PassesCompleted), "time"), gap)
	}

	// What an alert would say: the status judged against healthPolicy (lag SLO 72 h, lanes
	// caught up within 15 minutes). The demo's rows were created over the past week and some
	// were never verified (changed a moment ago, or Stripe unavailable), so lag fails, as it
	// should, until a cycle verifies them; the line says so, so that nobody reads it as a fault
	// of the run. The lanes' checks pass: each has just reached the end of its feed, and the
	// events lane's first start was an anchor, not a gap.
	h := l.health
	fmt.Fprintf(out, "\n  Health (reconcile.EvaluateHealth: default policy, MaxLaneLag %s)\n", healthPolicy.MaxLaneLag)
	for _, c := range h.Checks {
		verdict := "OK"
		if !c.OK {
			verdict = "FAILING"
		}
		fmt.Fprintf(out, "    %-38s %-8s %s (limit %s)%s\n", c.Name, verdict, c.Value, c.Limit, lagWhy(c, st, st.Rows-int64(r.observed)))
	}

	fmt.Fprintf(out, "\n  Needs review: %d open findings a person must resolve (at most %d of each kind)\n", l.reviewOpen, reviewShown)
	fmt.Fprintf(out, "    %-28s %-30s %-8s %-26s %s\n", "record", "kind", "local", "Stripe", "what differs: here -> at Stripe")
	for _, kind := range slices.Sorted(maps.Keys(l.review)) {
		for _, f := range l.review[kind] {
			// A missing_locally finding has no row: its record is the PaymentIntent.
			fmt.Fprintf(out, "    %-28s %-30s %-8s %-26s %s\n", f.RecordID, f.Kind, cmp.Or(f.Local, "-"), cmp.Or(f.External, "-"),
				cmp.Or(differs(f.Diffs), "-"))
			if slices.Contains(detailed, f.Kind) {
				fmt.Fprintf(out, "    %-28s %s\n", "", f.Detail)
			}
		}
	}
}

// lagWhy explains a failing lag check that the demo's own data accounts for: rows planted with
// created_at up to a week back (history), unverified rows among them counting from it. A lag
// longer than that and the run (a day is ample), or with every row verified, is a real failure
// and gets no excuse.
func lagWhy(c reconcile.Check, st reconcile.Status, unverified int64) string {
	if c.OK || c.Name != "lag" || unverified <= 0 || st.Lag > history+24*time.Hour {
		return ""
	}
	return fmt.Sprintf(": expected here: the demo's rows were created up to %s ago, and its %d unverified ones "+
		"(changed a moment ago, or Stripe answering 503) count from their created_at", spell(history), unverified)
}

// detailed are the kinds whose findings' detail the review list shows: it names the refund or
// the dispute, why the refund failed, and by when a dispute must be answered.
var detailed = []string{stripepolicy.KindRefundFailed, stripepolicy.KindDisputeNeedsResponse, stripepolicy.KindDisputeLost}

// differs writes the fields that differ, as a finding records them.
func differs(diffs []reconcile.Diff) string {
	parts := make([]string, len(diffs))
	for i, d := range diffs {
		parts[i] = fmt.Sprintf("%s %s -> %s", d.Field, d.Local, d.External)
	}
	return strings.Join(parts, "; ")
}

// sortedKeys returns the keys of both maps, sorted.
func sortedKeys(a, b map[string]int) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// age formats a duration for people: days and hours past a day, seconds below.
func age(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day {
		return fmt.Sprintf("%dd %dh", d/day, d%day/time.Hour)
	}
	return d.Round(time.Second).String()
}
