package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// expected is what the sweep's cycle and the lanes over the plan must find.
type expected struct {
	// verdicts, findings and commands are the sweep's: one verdict per row, the open findings
	// by kind and the repair commands by event type after its cycle.
	verdicts map[reconcile.Verdict]int
	findings map[string]int
	commands map[string]int
	// asked is the number of rows outside the grace period, each asked about once, in a list or
	// a retrieve; answered those among them Stripe answered (found or not), each of which must
	// be observed.
	asked, answered int
	// notFound and unavailable are the rows outside the grace period that no list can show,
	// each retrieved once: answered 404 for the rows Stripe never saw, 503 for the others.
	notFound, unavailable int
	// disputed is the number of rows outside the grace period whose charge is disputed when
	// the sweep reads it: the disputes of each are listed once. disputes is the number of
	// disputed payments once the lanes have run.
	disputed, disputes int
	// missed is the number of payments changed at Stripe after the sweep, their webhooks lost:
	// the events lane must find each as one finding, with one command if its story has one
	// (missedCommands of them), judged as laneVerdicts says. orphans is the number of
	// PaymentIntents only at Stripe that the reverse scan must report (the young one excepted).
	missed, missedCommands, orphans int
	laneVerdicts                    map[reconcile.Verdict]int
	// allFindings and allCommands are the open findings by kind and the repair commands by
	// event type once the sweep and both lanes have run.
	allFindings, allCommands map[string]int
}

func (p plan) expected() expected {
	e := expected{verdicts: map[reconcile.Verdict]int{}, findings: map[string]int{}, commands: map[string]int{},
		allFindings: map[string]int{}, allCommands: map[string]int{}, laneVerdicts: map[reconcile.Verdict]int{}}
	for i, s := range stories {
		n := p.counts[i]
		if s.kind != "" {
			e.allFindings[s.kind] += n
		}
		if s.command != "" {
			e.allCommands[s.command] += n
		}
		if s.money.dispute != "" {
			e.disputes += n
		}
		switch s.finder() {
		case laneReverse:
			if s.kind != "" {
				e.orphans += n
			}
			continue // no row: nothing for the sweep
		case laneEvents:
			e.missed += n
			e.laneVerdicts[s.laneVerdict()] += n
			if s.command != "" {
				e.missedCommands += n
			}
		default:
			if s.kind != "" {
				e.findings[s.kind] += n
			}
			if s.command != "" {
				e.commands[s.command] += n
			}
		}
		e.verdicts[s.verdict] += n
		if !s.recent {
			e.asked += n
			if !s.unavailable {
				e.answered += n
			}
			if s.notFound {
				e.notFound += n
			}
			if s.unavailable {
				e.unavailable += n
			}
			if s.money.dispute != "" && !s.money.afterSweep {
				e.disputed += n
			}
		}
	}
	return e
}

// difference is one count that is not what it should be.
type difference struct {
	what      string
	want, got int
}

// compare lists every count of r that differs from what the plan says one cycle must find.
func compare(p plan, r results) []difference {
	want := p.expected()
	var diffs []difference
	add := func(what string, want, got int) {
		if want != got {
			diffs = append(diffs, difference{what, want, got})
		}
	}
	for _, v := range reconcile.Verdicts {
		add(fmt.Sprintf("rows judged %s", v), want.verdicts[v], r.verdicts[v])
	}
	for _, kind := range sortedKeys(want.findings, r.status.OpenFindings) {
		add(fmt.Sprintf("open %s findings", kind), want.findings[kind], r.status.OpenFindings[kind])
	}
	for _, event := range sortedKeys(want.commands, r.commands) {
		add(fmt.Sprintf("%s commands in the outbox", event), want.commands[event], r.commands[event])
	}
	total := sum(r.commands)
	add("commands in the outbox, one per repairable row", r.verdicts[reconcile.Repairable], total)
	add("commands reported queued by the batches", total, r.cycle.commands)
	add("findings reported opened by the batches", sum(want.findings), r.findings)
	add("API calls the batches reported, one per request to Stripe", r.list+r.retrieve+r.disputes, r.calls)
	add("disputes listed, one per disputed payment", want.disputed, r.disputes)
	add("Stripe requests about rows inside the grace period", 0, r.aboutGrace)
	add("PaymentIntents retrieved more than once", 0, r.retrievedAgain)
	add("retrieves of rows unknown to Stripe, answered 404", want.notFound, r.notFound)
	add("retrieves of rows with Stripe unavailable, answered 503", want.unavailable, r.unavailable)
	add("Stripe requests answered with an error not planted", 0, r.unplanned)
	add("rows with an observation, one per row Stripe answered for", want.answered, r.observed)
	add("rows Stripe answered for without an observation", 0, r.unobserved)
	add("cycles completed", 1, int(r.status.CyclesCompleted))
	return diffs
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// compareLanes lists every count of l that differs from what the lanes must find: the events
// lane each change after the sweep (a lost webhook, a refund, a failed refund, a dispute),
// once, with its command if it has one, in one run of a call per hundred events;
// the reverse scan each PaymentIntent only at Stripe and nothing else, in a call per hundred
// PaymentIntents listed; and then every finding and command planted open or queued, each
// payment with exactly its story's finding, and each lane healthy.
func compareLanes(p plan, l laneResults) []difference {
	want := p.expected()
	var diffs []difference
	add := func(what string, want, got int) {
		if want != got {
			diffs = append(diffs, difference{what, want, got})
		}
	}
	add("events lane: anchor steps, judging nothing", 1, l.anchor.batches)
	add("events lane: anchor API calls", 1, l.anchorCalls)
	add("events lane: payments judged, one per change after the sweep", want.missed, l.events.scanned)
	for _, v := range reconcile.Verdicts {
		add(fmt.Sprintf("events lane: payments judged %s", v), want.laneVerdicts[v], l.events.verdicts[v])
	}
	add("events lane: findings opened", want.missed, l.events.findings)
	add("events lane: commands queued", want.missedCommands, l.events.commands)
	add("changes after the sweep found with their finding, and command", want.missed, l.missedFound)
	add("events lane: API calls reported, one per request to Stripe", l.eventsCalls+l.eventsOtherCalls, l.events.calls)
	// An account that holds more than the run's objects has more events and PaymentIntents to
	// page through than were planted: the planted ones only bound the calls below.
	atLeast := func(what string, want, got int) {
		if got < want {
			diffs = append(diffs, difference{what, want, got})
		}
	}
	atMost := func(what string, want, got int) {
		if got > want {
			diffs = append(diffs, difference{what, want, got})
		}
	}
	pageCheck := add
	if l.sharedAccount {
		pageCheck = atLeast
	}
	pageCheck("events lane: API calls, one per hundred events", pages(want.missed), l.eventsCalls)
	// The feed reads each payment an event touches: its PaymentIntent, and its refunds or its
	// disputes if an event is about them.
	atMost("events lane: other API calls, at most three per payment judged", 3*want.missed, l.eventsOtherCalls)

	add("reverse scan: findings opened, one per orphan PaymentIntent", want.orphans, l.reverse.findings)
	add("reverse scan: commands queued", 0, l.reverse.commands)
	add("PaymentIntents only at Stripe reported missing_locally", want.orphans, l.orphansFound)
	add("other PaymentIntents reported missing_locally", 0, l.otherMissing)
	add("reverse scan: API calls reported, one per request to Stripe", l.reverseCalls+l.reverseOtherCalls, l.reverse.calls)
	atMost("reverse scan: disputes listed, at most one per disputed payment", want.disputes, l.reverseOtherCalls)
	pageCheck("reverse scan: API calls, one per hundred listed", pages(l.reverse.scanned), l.reverseCalls)

	for _, kind := range sortedKeys(want.allFindings, l.status.OpenFindings) {
		add(fmt.Sprintf("open %s findings after the lanes", kind), want.allFindings[kind], l.status.OpenFindings[kind])
	}
	for _, event := range sortedKeys(want.allCommands, l.commands) {
		add(fmt.Sprintf("%s commands in the outbox after the lanes", event), want.allCommands[event], l.commands[event])
	}
	// Each drift found once, by whichever lane, and nothing else: no payment has a finding its
	// story does not plant, or two.
	add("payments whose open findings are not exactly their story's", 0, l.notAsPlanted)
	passes := map[string]int64{}
	for _, ls := range l.status.Lanes {
		passes[ls.Lane] = ls.PassesCompleted
	}
	add("lanes in store.Status", 2, len(l.status.Lanes))
	// The anchor and the run that caught up; one full pass.
	add("events lane: catch-ups completed", 2, int(passes[laneEvents]))
	add("reverse scan: passes completed", 1, int(passes[laneReverse]))
	failing := 0
	for _, c := range l.health.Checks {
		if strings.HasPrefix(c.Name, "lane:") && !c.OK {
			failing++
		}
	}
	add("lane health checks failing", 0, failing)
	return diffs
}

// pages is the number of list calls that read n objects a hundred at a time: at least one.
func pages(n int) int {
	return max(1, (n+99)/100)
}

// check prints how the cycle and the lanes compare with the plan and returns an error if they
// differ.
func check(out io.Writer, p plan, r results, l laneResults) error {
	diffs := append(compare(p, r), compareLanes(p, l)...)
	if len(diffs) == 0 {
		fmt.Fprintln(out, "\nEverything found matches what was planted: the sweep's, the events lane's and the reverse scan's.")
		return nil
	}
	fmt.Fprintf(out, "\nThe sweep and the lanes did not find what was planted:\n")
	for _, d := range diffs {
		fmt.Fprintf(out, "  %-60s want %6d, got %6d\n", d.what, d.want, d.got)
	}
	return fmt.Errorf("payments: %d counts differ from the planted drift", len(diffs))
}

// compareRepairs lists every count of r that differs from what the repairs must do: the late
// webhook pays its payment, the repair commands change every other repairable payment, each
// missed success becomes paid with exactly one ledger row, every repairable finding is resolved
// by the path that applied its change, every command is done, and nothing else changes.
func compareRepairs(p plan, r repairResults) []difference {
	var diffs []difference
	add := func(what string, want, got int) {
		if want != got {
			diffs = append(diffs, difference{what, want, got})
		}
	}
	var wrongState, wrongLedger, otherChanged int
	for _, pay := range p.payments {
		st, ok := r.payments[pay.externalID]
		if !ok {
			wrongState++
			continue
		}
		want := pay.repaired()
		switch {
		case !want.touched:
			if st.status != want.status || st.refunded != want.refunded || st.touched {
				otherChanged++
			}
		case st.status != want.status || st.refunded != want.refunded:
			wrongState++
		}
		if st.ledger != want.ledger {
			wrongLedger++
		}
	}
	add("repairable payments not in Stripe's state now", 0, wrongState)
	add("payments whose ledger rows are not one per payment made paid or refunded", 0, wrongLedger)
	add("payments changed that nothing should change", 0, otherChanged)

	add("late webhook answered 200", http.StatusOK, r.webhookStatus)
	add("late webhook's payment booked by the webhook", 1, b2i(r.lateLedger == actorWebhook))
	add("late webhook's finding resolved by the webhook", 1, b2i(r.lateResolvedBy == actorWebhook))

	// The sweep's repair commands and the events lane's.
	repairable := sum(p.expected().allCommands)
	add("repairable findings still open", 0, r.openRepairable)
	add("repairable findings resolved by the late webhook", 1, r.resolvedBy[actorWebhook])
	add("repairable findings resolved by the repairs", repairable-1, r.resolvedBy[actorReconciler])
	add("repairable findings resolved by anyone else", 0, sum(r.resolvedBy)-r.resolvedBy[actorWebhook]-r.resolvedBy[actorReconciler])
	add("repair commands that changed a payment", repairable-1, r.changed)
	// The late webhook resolved its finding first, so its repair command was completed without
	// running the writer (pgoutbox.HandleCommand skips commands whose finding is resolved).
	add("repair commands that found their payment changed already", 0, r.unchanged)
	add("repair commands skipped, their finding resolved already", 1, r.claimed-r.changed-r.unchanged)

	var done, all int
	for _, byStatus := range r.commands {
		done += byStatus[commandDone]
		all += sum(byStatus)
	}
	add("repair commands done", repairable, done)
	add("repair commands dead or waiting", 0, all-done)
	add("repair commands claimed, each once", repairable, r.claimed)

	wantOpen := needsReview(p)
	for _, kind := range sortedKeys(wantOpen, r.openByKind) {
		add(fmt.Sprintf("open %s findings", kind), wantOpen[kind], r.openByKind[kind])
	}
	return diffs
}

// checkRepairs prints how the repairs compare with the plan and returns an error if they differ.
func checkRepairs(out io.Writer, p plan, r repairResults) error {
	diffs := compareRepairs(p, r)
	if len(diffs) == 0 {
		fmt.Fprintln(out, "\nEvery repairable finding is resolved, each payment changed once by one path, and nothing else changed.")
		return nil
	}
	fmt.Fprintf(out, "\nThe repairs did not do what they must:\n")
	for _, d := range diffs {
		fmt.Fprintf(out, "  %-60s want %6d, got %6d\n", d.what, d.want, d.got)
	}
	return fmt.Errorf("payments: %d counts differ from what the repairs must do", len(diffs))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// repaired returns what pay must be once the repairs are done: its status and refunded
// amount, touched if a repair changes it, and its ledger rows, one per change that moves money.
func (pay payment) repaired() paymentState {
	st := paymentState{status: pay.story.local, refunded: pay.refundedHere()}
	switch pay.story.command {
	case stripepolicy.CommandApplyPaymentSucceeded:
		st.status, st.touched, st.ledger = stripepolicy.LocalPaid, true, 1
	case stripepolicy.CommandApplyPaymentCanceled:
		st.status, st.touched = stripepolicy.LocalFailed, true
	case stripepolicy.CommandApplyRefund:
		st.refunded, st.touched, st.ledger = pay.refund(), true, 1
	}
	return st
}
