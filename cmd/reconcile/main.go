package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// Exit codes, for scripts.
const (
	exitOK       = 0 // done
	exitNegative = 1 // unhealthy, or the named finding or command is absent or not in a state the command acts on
	exitUsage    = 2 // the command line is wrong
	exitError    = 3 // the database failed, or something else went wrong
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first Ctrl-C asks the command to stop and report; a second one ends the process
	// at once, should the command be stuck (on an output nobody reads, say).
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one subcommand: its name as typed, a line for the overview, and what runs it.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) int
}

// commands are the subcommands, in the order the overview lists them. findings has its own
// subcommands (findings.go).
var commands []command

func init() {
	commands = []command{
		{"audit", "compare a table with Stripe once, read-only, and print the drift (exit 1 when found)", runAudit},
		{"migrate", "create or update the reconciler's tables, or print their SQL", runMigrate},
		{"status", "print a job's status: lag, cycles, last batch, open findings, lanes", runStatus},
		{"health", "judge a job's status against a health policy (exit 1 when unhealthy)", runHealth},
		{"findings", "list, show, resolve and reopen findings", runFindings},
		{"dead", "list repair commands that failed too often and will not be tried again", runDead},
		{"redrive", "give dead repair commands a new set of attempts", runRedrive},
	}
}

const overview = `reconcile operates the reconcile library's tables in PostgreSQL: migrations, job status and
health, findings review, and dead repair commands. "reconcile audit" compares a table with
Stripe once, read-only, without them.

Usage:
  reconcile <command> [flags] [arguments]
  reconcile help <command>        (or: reconcile <command> --help)

Commands:
%s
Every command that reads the database connects to $DATABASE_URL, or to --database-url;
by default to %s.
--schema and --prefix name the reconciler's tables as the service configures them
(pgstore.Tables): by default, prefix "reconcile_" in the search_path.

Exit codes:  (audit has its own: see "reconcile audit --help")
  0  done (for health: healthy)
  1  health: unhealthy; findings show/resolve/reopen, redrive: the finding or command is not
     there, or not in a state the command acts on (already resolved, not dead, ...)
  2  usage error: unknown command or flag, a missing or invalid argument
  3  the database or something else failed

Output is readable text; --json prints JSON instead where a command lists it. Values that look
like Stripe secret keys (sk_..., rk_..., whsec_...) are printed as "[redacted key]"; control
characters in stored values are printed escaped (\x1b, \n).
`

// env is what a command runs with: where it writes, and how it reads the environment.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// run runs the command line args (without the program name) and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, getenv: os.Getenv}
	if len(args) == 0 {
		fmt.Fprint(stderr, overviewText())
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if name == "help" && len(rest) > 0 {
			// "help findings list" is "findings list --help".
			return run(ctx, append(rest, "--help"), stdout, stderr)
		}
		fmt.Fprint(stdout, overviewText())
		return exitOK
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(ctx, e, rest)
		}
	}
	return e.usageError(fmt.Sprintf("unknown command %q", name), "reconcile --help")
}

func overviewText() string {
	var b strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	return fmt.Sprintf(overview, b.String(), defaultURL)
}

// usageError reports a wrong command line and where its help is.
func (e *env) usageError(msg, help string) int {
	e.printErr("reconcile: %s\nRun '%s' for usage.\n", msg, help)
	return exitUsage
}

// failed reports an error that is not the command line's fault.
func (e *env) failed(err error) int {
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(e.stderr, "reconcile: interrupted")
		return exitError
	}
	e.printErr("reconcile: %s\n", err.Error())
	// pgstore says what a service should call; here the fix is a command.
	if pgErr := (*pgconn.PgError)(nil); errors.Is(err, pgstore.ErrNotMigrated) || errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
		fmt.Fprintln(e.stderr, "The reconciler's tables are not there: check --schema and --prefix (as the service configures pgstore.Tables), or run 'reconcile migrate'.")
	}
	return exitError
}
