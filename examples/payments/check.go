package main

import (
	"fmt"
	"io"

	"github.com/reconcilekit/reconcile"
)

// expected is what one cycle over the plan must find.
type expected struct {
	verdicts map[reconcile.Verdict]int
	findings map[string]int // open findings by kind
	commands map[string]int // repair commands by event type
	// asked is the number of rows outside the grace period, each asked about once, in a list or
	// a retrieve; answered those among them Stripe answered (found or not), each of which must
	// be observed.
	asked, answered int
	// notFound and unavailable are the rows outside the grace period that no list can show,
	// each retrieved once: answered 404 for the rows Stripe never saw, 503 for the others.
	notFound, unavailable int
}

func (p plan) expected() expected {
	e := expected{verdicts: map[reconcile.Verdict]int{}, findings: map[string]int{}, commands: map[string]int{}}
	for i, s := range stories {
		n := p.counts[i]
		e.verdicts[s.verdict] += n
		if s.kind != "" {
			e.findings[s.kind] += n
		}
		if s.command != "" {
			e.commands[s.command] += n
		}
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
	add("API calls the batches reported, one per request to Stripe", r.list+r.retrieve, r.calls)
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

// check prints how the cycle compares with the plan and returns an error if it differs.
func check(out io.Writer, p plan, r results) error {
	diffs := compare(p, r)
	if len(diffs) == 0 {
		fmt.Fprintln(out, "\nEverything found matches what was planted.")
		return nil
	}
	fmt.Fprintf(out, "\nThe cycle did not find what was planted:\n")
	for _, d := range diffs {
		fmt.Fprintf(out, "  %-60s want %6d, got %6d\n", d.what, d.want, d.got)
	}
	return fmt.Errorf("payments: %d counts differ from the planted drift", len(diffs))
}
