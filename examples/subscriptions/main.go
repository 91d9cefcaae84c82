package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

// options are run's parameters; main fills them from flags and the environment.
type options struct {
	DatabaseURL, DatabaseSource string
	Schema                      string
	Rows                        int
}

func main() {
	var opts options
	opts.DatabaseURL, opts.DatabaseSource = pgenv.URL("DATABASE_URL")
	flag.IntVar(&opts.Rows, "rows", 1000, "subscriptions to load")
	flag.StringVar(&opts.Schema, "schema", "subscriptions_demo", "the schema to drop and create")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		stop()
		os.Exit(1)
	}
}

// run plants the drift, sweeps the table once, prints what a host would watch, applies the
// repairs, and returns an error if anything differs from what was planted.
func run(ctx context.Context, out io.Writer, opts options) error {
	if opts.Rows < minRows() {
		return fmt.Errorf("subscriptions: -rows %d: at least %d hold every planted drift", opts.Rows, minRows())
	}
	pool, err := pgenv.Connect(ctx, opts.DatabaseURL, opts.DatabaseSource)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := setUp(ctx, pool, opts.Schema); err != nil {
		return err
	}
	p, err := plantDrift(ctx, pool, opts.Schema, opts.Rows)
	defer p.stripe.Close()
	if err != nil {
		return err
	}
	printPlan(out, p)

	h, err := newHost(pool, opts.Schema, p.stripe.Key(), p.stripe.URL())
	if err != nil {
		return err
	}
	// One full cycle: batches until the cursor wraps. A host runs a reconcile.Runner.
	tick, err := reconcile.RunTick(ctx, h.sweep, reconcile.TickBudget{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nSweep (job %s): %d rows in %d batches, %d Stripe calls, %d findings, %d repair commands queued\n",
		job, tick.Scanned, tick.Batches, tick.GatewayCalls, tick.NewFindings, tick.NewCommands)

	st, health, err := jobHealth(ctx, h.store)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nMetrics: rows %d, lag %s, cycles completed %d, verdicts", st.Rows, st.Lag.Round(time.Second), st.CyclesCompleted)
	for _, v := range reconcile.Verdicts {
		fmt.Fprintf(out, " %s=%d", v, tick.Verdicts[v])
	}
	fmt.Fprintln(out, "\nOpen findings by kind:")
	for _, kind := range slices.Sorted(maps.Keys(st.OpenFindings)) {
		fmt.Fprintf(out, "  %-34s %d\n", kind, st.OpenFindings[kind])
	}
	fmt.Fprintf(out, "Health: %s\n", health)

	var c checker
	if err := checkSweep(ctx, &c, h.store, p, tick, health); err != nil {
		return err
	}
	// A host runs h.repairs.Start; here rounds of Work apply what is ready, until none is.
	applied := 0
	for n := 1; n > 0; applied += n {
		if n, err = h.repairs.Work(ctx); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\nRepairs: %d commands applied through the canonical writer; left for a person:\n", applied)
	review, err := h.store.ListFindings(ctx, reconcile.FindingQuery{Job: job})
	if err != nil {
		return err
	}
	for _, f := range review {
		fmt.Fprintf(out, "  %-32s %s: %s %v\n", f.Kind, f.ExternalID, f.Detail, f.Diffs)
	}
	if err := checkRepairs(ctx, &c, pool, h.store, p); err != nil {
		return err
	}
	return c.report(out)
}
