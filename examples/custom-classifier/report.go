package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/reconcilekit/reconcile"
)

// printCycle prints one line per cycle: batches, rows, provider calls and verdicts.
func printCycle(w io.Writer, name string, t reconcile.TickReport) {
	var vs []string
	for _, v := range reconcile.Verdicts {
		if n := t.Verdicts[v]; n > 0 {
			vs = append(vs, fmt.Sprintf("%d %s", n, v))
		}
	}
	fmt.Fprintf(w, "%s: %d batches, %d rows, %d provider reads: %s; %d new findings, %d repair commands queued\n",
		name, t.Batches, t.Scanned, t.GatewayCalls, strings.Join(vs, ", "), t.NewFindings, t.NewCommands)
}

// printFindings prints the findings with both sides and which way the repair goes.
func printFindings(w io.Writer, fs []reconcile.Finding) {
	fmt.Fprintf(w, "  %-4s %-28s %-26s %-26s %s\n", "row", "finding", "ours", "provider", "repair")
	for _, f := range fs {
		fmt.Fprintf(w, "  %-4s %-28s %-26s %-26s %s\n", f.RecordID, f.Kind, f.Local, orNone(f.External), direction(f.Command))
	}
	fmt.Fprintln(w)
}

// direction says which side a repair command changes.
func direction(cmd string) string {
	switch cmd {
	case "":
		return "none: for a person"
	case CmdPushSeats:
		return cmd + ": ours is the truth, the provider catches up"
	default:
		return cmd + ": the provider is the truth, ours catches up"
	}
}

// printRepairs prints every attempt at a repair and the updates the provider applied.
func printRepairs(w io.Writer, as []Attempt, changes []Change) {
	fmt.Fprintln(w, "repairs, in outbox order:")
	for _, a := range as {
		what := a.Did
		if a.Err != nil {
			what = "failed: " + a.Err.Error()
		}
		key := ""
		if a.Key != "" {
			key = fmt.Sprintf(" (Idempotency-Key %s…)", a.Key[:len("reconcile-")+12])
		}
		try := fmt.Sprintf("attempt %d", a.N)
		if a.N == 0 {
			try = "no attempt"
		}
		fmt.Fprintf(w, "  row %-3s %-27s %s%s: %s\n", a.Command.RecordID, a.Command.Name, try, key, what)
	}
	var applied []string
	for _, c := range changes {
		applied = append(applied, fmt.Sprintf("%s %d -> %d seats", c.Subscription, c.From, c.To))
	}
	fmt.Fprintf(w, "the provider applied %d seat updates: %s\n\n", len(changes), strings.Join(applied, ", "))
}

// printUnverified prints the rows the provider never confirmed: their lag grows until it
// answers, which is what health and alerts watch.
func printUnverified(w io.Writer, ids []string) {
	if len(ids) > 0 {
		fmt.Fprintf(w, "never confirmed by the provider, lag growing: row %s\n", strings.Join(ids, ", row "))
	}
}

// printReview prints the findings still open: what a person must look at.
func printReview(w io.Writer, fs []reconcile.Finding) {
	fmt.Fprintln(w, "\nfor a person:")
	for _, f := range fs {
		if f.Open() {
			detail := f.Detail
			switch {
			case f.Kind == reconcile.KindMissingExternally:
				detail = "the provider has no such subscription; ours is " + f.Local
			case detail == "":
				detail = "ours " + f.Local + ", provider " + orNone(f.External)
			}
			fmt.Fprintf(w, "  row %-3s %-28s %s\n", f.RecordID, f.Kind, detail)
		}
	}
}

// printChecks prints each check and whether it passed.
func printChecks(w io.Writer, cs []check) {
	fmt.Fprintln(w, "\nchecks:")
	for _, c := range cs {
		if c.Err != nil {
			fmt.Fprintf(w, "  FAIL %s: %v\n", c.Name, c.Err)
		} else {
			fmt.Fprintf(w, "  ok   %s\n", c.Name)
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
