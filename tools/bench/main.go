// Command bench measures the reconciler against a real PostgreSQL database.
//
// Usage:
//
//	go run ./tools/bench <subcommand> [flags]
//
// Subcommands:
//
//	engine   load a seed-shaped payments table and time full cycles of the engine over it, its rows
//	         read as one status column and as a typed row of four columns (typed_ratio)
//	dispatch queue repair commands in the outbox and time dispatchers applying them all
//	stripe   one full cycle through the Stripe gateway over HTTP to stripetest, bulk or per-object,
//	         counting API calls (calls per row, cycle hours at 5 requests/s); with -money, the
//	         money policy over refunds and disputes in both modes, compared; with -object
//	         subscription or invoice, that object through the object kit and its policy
//	scale    one cycle of a sharded job per worker count (-workers 1,2,4), each worker a process
//	         of its own drawing from one rate budget in PostgreSQL; rows/s and calls per second
//	lanes    the events catch-up lane finding missed webhooks (detect_seconds, api_calls) and one
//	         reverse-scan pass (api_calls_per_object), over HTTP to stripetest
//	status   pgstore.Store.Status over a table of 1M and -rows (10M) rows as a sweep leaves it halfway
//	         through a cycle: its latency from lag marks, the full scan it replaced, and whether both
//	         find the same lag
//	connect  one fan-out round over many connected accounts (one huge, the others small) sharing one
//	         rate budget, over HTTP to stripetest with Stripe-Account: the time until every account
//	         has completed a cycle against the prediction, and the largest and smallest account's lag
//	payouts  one payouts tie-out pass (stripepayouts over HTTP to stripetest, the ledger in PostgreSQL
//	         through pgledger) with a drift of each kind planted in turn: calls (every request the
//	         lister made) per balance transaction, planted drifts found, false positives
//	churn    batches on a fixed schedule in simulated time (the schema's now()) over a table with
//	         inserts, deletes and updates, behind an in-process gateway with Unavailable answers and
//	         429 bursts: each row's time to verify against PlanSchedule, false health, skipped rows
//
// The database comes from $DATABASE_URL, else pgenv.DefaultURL. Each subcommand prints progress
// to stderr and, as its last stdout line, one JSON object with its figures, so that runs can be
// collected with `tail -n1`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

// command is one subcommand: it parses its own flags from args and writes its result to stdout.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands maps subcommand names to their implementations; add new benchmarks here.
var commands = map[string]command{
	"engine":   {summary: "load a payments table and time one full engine cycle over it", run: engineCommand},
	"dispatch": {summary: "queue repair commands and time dispatchers applying them; counts duplicates", run: dispatchCommand},
	"stripe":   {summary: "one cycle through the Stripe gateway over HTTP to stripetest; counts API calls", run: stripeCommand},
	"scale":    {summary: "a sharded job over worker processes sharing one rate budget; rows/s per worker count", run: scaleCommand},
	"lanes":    {summary: "the events lane finding missed webhooks and a reverse-scan pass; detection time and API calls", run: lanesCommand},
	"status":   {summary: "Store.Status over 1M and 10M rows from lag marks, timed against the full scan it replaced; agreement", run: statusCommand},
	"connect":  {summary: "one fan-out round over many connected accounts in one rate budget; predicted vs measured time, lags", run: connectCommand},
	"churn":    {summary: "a schedule in simulated time over a changing table with faults; time to verify vs PlanSchedule, false health", run: churnCommand},
	"payouts":  {summary: "one payouts tie-out pass over HTTP to stripetest with planted drifts; calls per transaction, found, false positives", run: payoutsCommand},
}

// errUsage marks errors already explained to the user by a flag set's own output.
var errUsage = errors.New("bench: usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, errUsage) && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, err)
		}
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		return errUsage
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "bench: unknown subcommand %q\n", args[0])
		usage(stderr)
		return errUsage
	}
	return cmd.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: go run ./tools/bench <subcommand> [flags]   (-h after a subcommand lists its flags)")
	fmt.Fprintln(w, "subcommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "The database is $DATABASE_URL (default %s).\n", pgenv.DefaultURL)
}

// peakRSSMB returns the process's peak resident set size (VmHWM) in MiB, or -1 if
// /proc/self/status cannot be read (not Linux).
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
		if err != nil {
			return -1
		}
		return kb / 1024
	}
	return -1
}

// parseFlags parses a subcommand's flags, its usage being the lines given and then the flags.
// Positional arguments are refused.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer, usage ...string) error {
	fs.SetOutput(stderr)
	fs.Usage = func() {
		for _, l := range usage {
			fmt.Fprintln(stderr, l)
		}
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bench: %s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return errUsage
	}
	return nil
}

// emit writes a subcommand's result as its last stdout line: one JSON object.
func emit(stdout io.Writer, res any) error {
	line, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", line)
	return err
}

// benchSchema connects to $DATABASE_URL and drops and recreates schema. drop removes the schema
// again, reporting a failure to stderr.
func benchSchema(ctx context.Context, schema string, stderr io.Writer) (pool *pgxpool.Pool, drop func(), err error) {
	dbURL, source := pgenv.URL("DATABASE_URL")
	if pool, err = pgenv.Connect(ctx, dbURL, source); err != nil {
		return nil, nil, err
	}
	ident := pgx.Identifier{schema}.Sanitize()
	for _, q := range []string{"DROP SCHEMA IF EXISTS " + ident + " CASCADE", "CREATE SCHEMA " + ident} {
		if _, err := pool.Exec(ctx, q); err != nil {
			pool.Close()
			return nil, nil, fmt.Errorf("bench: %s: %w", q, err)
		}
	}
	drop = func() {
		if _, err := pool.Exec(context.WithoutCancel(ctx), "DROP SCHEMA IF EXISTS "+ident+" CASCADE"); err != nil {
			fmt.Fprintf(stderr, "bench: drop schema %s: %v\n", ident, err)
		}
	}
	return pool, drop, nil
}

// countFindings counts the findings and outbox rows in the reconciler's tables.
func countFindings(ctx context.Context, pool *pgxpool.Pool, tables pgstore.Tables) (findings, commands int64, err error) {
	err = pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM "+pgx.Identifier{tables.Schema, tables.Prefix + "findings"}.Sanitize()+
		"), (SELECT count(*) FROM "+pgx.Identifier{tables.Schema, tables.Prefix + "outbox"}.Sanitize()+")").Scan(&findings, &commands)
	if err != nil {
		return 0, 0, fmt.Errorf("bench: count findings and commands: %w", err)
	}
	return findings, commands, nil
}
