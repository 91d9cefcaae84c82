// main.go is the demo's driver: it plants the story, runs the tie-out's lanes in the order a
// scheduler would, prints what a host looks at and checks it against what was planted.

package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
	"github.com/reconcilekit/reconcile/tieout"
)

// options are run's parameters; main fills them from flags and the environment.
type options struct {
	DatabaseURL    string
	DatabaseSource string // where DatabaseURL came from, for the error if it does not answer
	Schema         string // empty means defaultSchema
}

func main() {
	var opts options
	opts.DatabaseURL, opts.DatabaseSource = pgenv.URL("DATABASE_URL")
	flag.StringVar(&opts.Schema, "schema", defaultSchema, "the schema to drop and create")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		stop()
		os.Exit(1)
	}
}

// run creates the host's schema, plants the story, ties the payouts out, prints the report to
// out, and returns an error unless each planted finding was found exactly once and nothing
// else.
func run(ctx context.Context, out io.Writer, opts options) error {
	schema := cmp.Or(opts.Schema, defaultSchema)
	if !schemaRE.MatchString(schema) {
		return fmt.Errorf("payouts: -schema %q is not a plain lower-case SQL identifier", schema)
	}
	pool, err := pgxpool.New(ctx, opts.DatabaseURL)
	if err != nil {
		return fmt.Errorf("payouts: %s: %w", opts.DatabaseSource, err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, inSchema(schema, createSchema)); err != nil {
		return fmt.Errorf("payouts: cannot create schema %s (PostgreSQL from %s; set DATABASE_URL): %w", schema, opts.DatabaseSource, err)
	}
	// The reconciler's tables (findings, lanes' positions, the payouts tied out) next to the
	// host's. The store is over the payments table; the tie-out names no row of it.
	store, err := pgstore.New(pool, pgstore.Config{Table: "payments", Schema: schema, ExternalIDColumn: "stripe_payment_intent_id"})
	if err != nil {
		return err
	}
	if err := pgstore.Migrate(ctx, pool, store.Tables()); err != nil {
		return err
	}
	ledger, err := newLedger(pool, schema)
	if err != nil {
		return err
	}

	w := newWorld(ctx, writer{pool: pool, schema: schema})
	defer w.srv.Close()
	st, err := newSteps(stripeadapter.GatewayConfig{Key: w.srv.Key(), BaseURL: w.srv.URL()}, ledger, store, w.clk.now)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Payouts tie-out: schema %s, a fake Stripe at %s, EUR settling in USD at 1.1\n\n", schema, w.srv.URL())

	w.plantFirst()
	if w.err != nil {
		return w.err
	}
	// The events lane's first step anchors at Stripe's newest event; the sweep ties out p1.
	passes := []struct {
		name string
		run  func() (int, error)
	}{
		{"events lane (anchors)", func() (int, error) { return pass(ctx, st.events) }},
		{"sweep", func() (int, error) { return pass(ctx, st.sweep) }},
	}
	later := []struct {
		name string
		run  func() (int, error)
	}{
		{"events lane", func() (int, error) { return pass(ctx, st.events) }},
		{"sweep", func() (int, error) { return pass(ctx, st.sweep) }},
		{"never-paid-out walk", func() (int, error) { return pass(ctx, st.unpaid) }},
	}
	fmt.Fprintf(out, "Day 0-3: payments, refunds, disputes; payout %s paid.\n", w.p1)
	if err := runPasses(out, passes); err != nil {
		return err
	}
	w.plantLater()
	if w.err != nil {
		return w.err
	}
	fmt.Fprintf(out, "Day 4-8: %s fails after paid; %s paid (a line added late), %s manual, %s pending.\n", w.p1, w.p2, w.p3, w.p4)
	if err := runPasses(out, later); err != nil {
		return err
	}
	// p4 is paid: the sweep, which waited at it, ties it out and moves past it.
	if err := w.srv.SetPayoutStatus(w.p4, stripe.PayoutStatusPaid); err != nil {
		return err
	}
	w.recordPayout(w.p4, "paid")
	if w.err != nil {
		return w.err
	}
	fmt.Fprintf(out, "Then %s is paid.\n", w.p4)
	if err := runPasses(out, later[1:2]); err != nil {
		return err
	}

	// The sweep's pages of paid payouts were itemized by report runs; what no report covered
	// (p1 once it failed, the events lane's payouts) was listed, a hundred lines a call.
	fmt.Fprintf(out, "\nReport runs: %d (%d calls with the report type's and the files').\n", w.srv.Requests(stripetest.CreateReportRun),
		w.srv.Requests(stripetest.RetrieveReportType)+w.srv.Requests(stripetest.CreateReportRun)+w.srv.Requests(stripetest.RetrieveReportRun)+
			w.srv.Requests(stripetest.DownloadFile))
	if err := printPayouts(ctx, out, store); err != nil {
		return err
	}
	found, err := printFindings(ctx, out, store, w.want)
	if err != nil {
		return err
	}
	return check(out, w.want, found)
}

// stepper is a tie-out step: Step and UnpaidStep.
type stepper interface {
	RunBatch(ctx context.Context) (reconcile.Report, error)
}

// maxBatches bounds a pass: the story's are one to three batches.
const maxBatches = 20

// pass runs s until it reports the end of its pass, and returns the findings it added.
func pass(ctx context.Context, s stepper) (int, error) {
	added := 0
	for range maxBatches {
		rep, err := s.RunBatch(ctx)
		if err != nil {
			return added, err
		}
		added += rep.NewFindings
		if rep.Wrapped {
			return added, nil
		}
	}
	return added, fmt.Errorf("payouts: no end of pass in %d batches", maxBatches)
}

func runPasses(out io.Writer, ps []struct {
	name string
	run  func() (int, error)
}) error {
	for _, p := range ps {
		n, err := p.run()
		if err != nil {
			return fmt.Errorf("payouts: %s: %w", p.name, err)
		}
		fmt.Fprintf(out, "  %-22s %2d new findings\n", p.name, n)
	}
	return nil
}

// printPayouts prints each payout recorded: what it paid against what its lines add up to.
func printPayouts(ctx context.Context, out io.Writer, store reconcile.GroupReader) error {
	groups, err := store.ListGroups(ctx, reconcile.GroupQuery{Job: job})
	if err != nil {
		return err
	}
	slices.Reverse(groups) // oldest first
	fmt.Fprintf(out, "\nPayouts (paid against the sum of their lines):\n")
	for _, g := range groups {
		expected := "not itemizable"
		if g.ExpectedKnown {
			expected = reconcile.FormatAmount(g.Expected, g.Currency)
		}
		verdict := "held"
		switch {
		case !g.TiedOut:
			verdict = "not tied out yet"
		case !g.Held || g.Findings > 0:
			verdict = fmt.Sprintf("%d findings, %d unmatched lines", g.Findings, g.Unmatched)
		}
		fmt.Fprintf(out, "  %s %-7s paid %-12s lines %-16s %2d lines  %s\n", g.ID, g.Status,
			reconcile.FormatAmount(g.Amount, g.Currency), expected, g.Members, verdict)
	}
	return nil
}

// printFindings prints the open findings by kind with what each kind means, and the story
// planted for each, and returns them counted by (record, kind).
func printFindings(ctx context.Context, out io.Writer, store *pgstore.Store[string], want []planted) (map[[2]string]int, error) {
	stories := map[[2]string]string{}
	for _, p := range want {
		stories[[2]string{p.record, p.kind}] = p.story
	}
	fs, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: job, Limit: 1000})
	if err != nil {
		return nil, err
	}
	byKind := map[string][]reconcile.Finding{}
	found := map[[2]string]int{}
	for _, f := range fs {
		byKind[f.Kind] = append(byKind[f.Kind], f)
		found[[2]string{f.RecordID, f.Kind}]++
	}
	fmt.Fprintf(out, "\nFindings (%d open):\n", len(fs))
	for _, k := range tieout.Kinds() {
		if len(byKind[k.Kind]) == 0 {
			continue
		}
		fmt.Fprintf(out, "  %s (%d): %s\n", k.Kind, len(byKind[k.Kind]), k.Meaning)
		for _, f := range byKind[k.Kind] {
			line := []string{f.RecordID}
			for _, d := range f.Diffs {
				line = append(line, fmt.Sprintf("%s %s -> %s", d.Field, d.Local, d.External))
			}
			story := cmp.Or(stories[[2]string{f.RecordID, f.Kind}], "NOT PLANTED")
			fmt.Fprintf(out, "      %s  (%s)\n", strings.Join(line, "  "), story)
		}
	}
	return found, nil
}

// check prints and returns whether each planted finding was found exactly once and nothing
// else was.
func check(out io.Writer, want []planted, found map[[2]string]int) error {
	var problems []string
	wanted := map[[2]string]bool{}
	for _, p := range want {
		k := [2]string{p.record, p.kind}
		wanted[k] = true
		if n := found[k]; n != 1 {
			problems = append(problems, fmt.Sprintf("%s %s (%s): found %d times, want once", p.kind, p.record, p.story, n))
		}
	}
	for k, n := range found {
		if !wanted[k] {
			problems = append(problems, fmt.Sprintf("%s %s: found %d times, not planted", k[1], k[0], n))
		}
	}
	slices.Sort(problems)
	if len(problems) > 0 {
		fmt.Fprintf(out, "\nCheck: FAILED\n  %s\n", strings.Join(problems, "\n  "))
		return fmt.Errorf("payouts: %d planted findings not found exactly once, or found unplanted", len(problems))
	}
	fmt.Fprintf(out, "\nCheck: each of the %d planted findings was found exactly once, and nothing else.\n", len(want))
	return nil
}
