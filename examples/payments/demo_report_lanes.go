package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/reconcilekit/reconcile"
)

// printEvents shows what the events lane's run after the lost webhooks did.
func printEvents(out io.Writer, p plan, l laneResults) {
	want := p.expected()
	e := l.events
	fmt.Fprintf(out, "\nEvents lane: waited out its %s settle time, then ran until caught up: %s, %s.\n",
		l.times.settle, plural(e.batches, "step"), e.elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "  %-40s %6s %8s\n", "", "", "planted")
	fmt.Fprintf(out, "    %-38s %6d %8d  the changes since the anchor, each about one of our payments\n",
		"payments judged", e.scanned, want.missed)
	fmt.Fprintf(out, "    %-38s %6d %8d  a page holds up to 100 events\n", "API calls  GET /v1/events", l.eventsCalls, pages(want.missed))
	fmt.Fprintf(out, "    %-38s %6d           each payment the events name: its PaymentIntent, and its refunds or disputes\n",
		"API calls  payments read", l.eventsOtherCalls)
	var kinds, commands []string
	for _, s := range stories {
		if s.finder() == laneEvents && !slices.Contains(kinds, s.kind) {
			kinds = append(kinds, s.kind)
		}
		if s.finder() == laneEvents && s.command != "" && !slices.Contains(commands, s.command) {
			commands = append(commands, s.command)
		}
	}
	fmt.Fprintf(out, "    %-38s %6d %8d  %s: %d of the %d payments with their story's finding\n",
		"findings opened", e.findings, want.missed, strings.Join(kinds, ", "), l.missedFound, want.missed)
	fmt.Fprintf(out, "    %-38s %6d %8d  %s\n", "repair commands queued", e.commands, want.missedCommands, strings.Join(commands, ", "))
	fmt.Fprintf(out, "    %-38s %6.1fs  the settle time (%s here, a minute in production) and the run\n",
		"from the changes to the findings", l.detect.Seconds(), l.times.settle)
}

// printReverse shows what the reverse scan's pass did.
func printReverse(out io.Writer, p plan, l laneResults) {
	want := p.expected()
	r := l.reverse
	fmt.Fprintf(out, "\nReverse scan: one full pass over the PaymentIntents created in the last %s but the last %s,\n",
		spell(l.times.window), spell(l.times.grace))
	fmt.Fprintf(out, "newest first: %s, %s.\n", plural(r.batches, "step"), r.elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "  %-40s %6s %8s\n", "", "", "planted")
	fmt.Fprintf(out, "    %-38s %6d\n", "API calls  GET /v1/payment_intents", l.reverseCalls)
	fmt.Fprintf(out, "    %-38s %6d           the disputes of each disputed charge whose outcome this process does not know\n",
		"API calls  GET /v1/disputes", l.reverseOtherCalls)
	fmt.Fprintf(out, "    %-38s %6d           matched to our rows in one query per page, and verified\n", "PaymentIntents listed", r.scanned)
	perObject := 0.0
	if r.scanned > 0 {
		perObject = float64(l.reverseCalls+l.reverseOtherCalls) / float64(r.scanned)
	}
	fmt.Fprintf(out, "    %-38s %6.3f\n", "calls per PaymentIntent", perObject)
	fmt.Fprintf(out, "    %-38s %6d %8d  %s, needs_review, no command; the one created %s ago is not reported\n",
		"only at Stripe", l.orphansFound, want.orphans, reconcile.KindMissingLocally, l.times.young)
	fmt.Fprintf(out, "    %-38s %6d %8d  nothing new for the drifts the sweep and the events lane opened\n",
		"findings opened", r.findings, want.orphans)
	fmt.Fprintf(out, "    %-38s %6d %8d\n", "repair commands queued", r.commands, 0)
}

// spell writes a duration in its largest whole unit: "7 days", "10 minutes", "30 seconds".
func spell(d time.Duration) string {
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}} {
		if d >= u.unit && d%u.unit == 0 {
			return plural(int(d/u.unit), u.name)
		}
	}
	return plural(int(d.Round(time.Second)/time.Second), "second")
}

// plural returns "1 step", "2 steps" and the like.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// printMoneyAfter lists what happens to the payments' money at Stripe after the sweep.
func printMoneyAfter(out io.Writer, p plan) {
	fmt.Fprintf(out, "The money of others changes at Stripe now, its webhooks lost too; Stripe records the refund.*, charge.refunded,\n")
	fmt.Fprintf(out, "charge.refund.updated and charge.dispute.* events of each:\n")
	for i, s := range stories {
		if s.money.afterSweep && p.counts[i] > 0 {
			fmt.Fprintf(out, "    %-38s %6d\n", s.name, p.counts[i])
		}
	}
}
