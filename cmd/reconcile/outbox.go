package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/internal/shared/pgtables"
)

// dispatcher opens the outbox through a pgoutbox.Dispatcher that is never started: only its
// DeadCommands and Redrive are used. One worker, so that it fits any pool.
func dispatcher(ctx context.Context, e *env, db dbFlags) (*pgoutbox.Dispatcher, *pgxpool.Pool, error) {
	if _, err := pgtables.Resolve(db.prefix, db.schema); err != nil {
		return nil, nil, usageErr{err}
	}
	pool, err := db.connect(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	d, err := pgoutbox.NewDispatcher(pool, pgoutbox.Config{Tables: db.tables(), Workers: 1})
	if err != nil {
		pool.Close()
		return nil, nil, usageErr{err}
	}
	return d, pool, nil
}

// deadPage is how many dead commands one read fetches while filtering by name.
const deadPage = 500

// deadCommands lists up to limit dead commands after the id after, of the command name if it
// is not empty, oldest first.
func deadCommands(ctx context.Context, d *pgoutbox.Dispatcher, name string, after int64, limit int) ([]pgoutbox.DeadCommand, error) {
	var out []pgoutbox.DeadCommand
	for len(out) < limit {
		page, err := d.DeadCommands(ctx, after, deadPage)
		if err != nil {
			return nil, err
		}
		for _, c := range page {
			if (name == "" || c.Name == name) && len(out) < limit {
				out = append(out, c)
			}
		}
		if len(page) < deadPage {
			break
		}
		after = page[len(page)-1].ID
	}
	return out, nil
}

func runDead(ctx context.Context, e *env, args []string) int {
	const help = "reconcile dead --help"
	s := newSpec("dead", "reconcile dead [flags]", `
dead lists the repair commands that failed --max-attempts times (pgoutbox) and will not be
tried again until re-driven, oldest first: the command, the row it repairs, its finding, its
failures and last error. Fix the cause (a handler bug, a missing row), then "reconcile redrive";
or resolve the finding by hand. With --json each command carries its error history.`,
		"reconcile dead",
		"reconcile dead --command ApplyPaymentSucceeded --json",
		"reconcile dead --after 5120 --limit 50")
	var db dbFlags
	db.register(s)
	name := s.fs.String("command", "", "only the commands of this `name`")
	after := s.fs.Int64("after", 0, "list the commands after this `id` (the next page)")
	limit := s.fs.Int("limit", 100, "print at most `n` commands")
	asJSON := s.fs.Bool("json", false, "print JSON instead of text")
	pos, code, done := s.parse(e, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return e.usageError(fmt.Sprintf("dead: unexpected argument %q", pos[0]), help)
	}
	if *limit <= 0 {
		return e.usageError("dead: --limit must be positive", help)
	}
	d, pool, err := dispatcher(ctx, e, db)
	if err != nil {
		return e.fail(err, help)
	}
	defer pool.Close()
	cmds, err := deadCommands(ctx, d, *name, *after, *limit)
	if err != nil {
		return e.failed(err)
	}
	if *asJSON {
		if err := e.printJSON(deadCommandsOut(cmds)); err != nil {
			return e.failed(err)
		}
		return exitOK
	}
	if len(cmds) == 0 {
		fmt.Fprintln(e.stderr, "no dead commands")
		return exitOK
	}
	rows := [][]string{{"ID", "COMMAND", "AGGREGATE", "FINDING", "FAILURES", "DEAD SINCE", "LAST ERROR"}}
	for _, c := range cmds {
		finding := "-"
		if c.FindingID != 0 {
			finding = strconv.FormatInt(c.FindingID, 10)
		}
		rows = append(rows, []string{strconv.FormatInt(c.ID, 10), c.Name, c.AggregateType + " " + c.AggregateID, finding,
			strconv.Itoa(c.Failures), timeText(c.DeadAt), orDash(c.LastError)})
	}
	e.print(table(rows))
	if len(cmds) == *limit {
		fmt.Fprintf(e.stderr, "more may follow: add --after %d\n", cmds[len(cmds)-1].ID)
	}
	return exitOK
}

func runRedrive(ctx context.Context, e *env, args []string) int {
	const help = "reconcile redrive --help"
	s := newSpec("redrive", "reconcile redrive (ID... | --all COMMAND) --actor NAME [flags]", `
redrive gives dead repair commands a new set of attempts, due now, and records who did it in
each one's finding history (pgoutbox.Dispatcher.Redrive); their error history is kept. Name the
commands by id (see "reconcile dead"), or every dead command of one name with --all. The
service's dispatcher then runs them.

A command is not re-driven when a younger command of the same row was applied or is queued
(applying the old one now would apply it out of order): resolve its finding by hand instead.
redrive exits 1 if any command named is not dead or could not be re-driven (the others still
are), or if --all finds none.`,
		"reconcile redrive 5120 5121 --actor alice",
		"reconcile redrive --all ApplyPaymentSucceeded --actor alice")
	var db dbFlags
	db.register(s)
	actor := s.fs.String("actor", "", "who re-drives: your login (required)")
	all := s.fs.String("all", "", "re-drive every dead command of this `command` name")
	pos, code, done := s.parse(e, args)
	if done {
		return code
	}
	ids, ok := parseIDs(e, pos, "redrive", help)
	if !ok {
		return exitUsage
	}
	switch {
	case strings.TrimSpace(*actor) == "":
		return e.usageError("redrive: --actor is required: who re-drives", help)
	case len(ids) == 0 && *all == "":
		return e.usageError("redrive: give command ids, or --all and a command name", help)
	case len(ids) > 0 && *all != "":
		return e.usageError("redrive: give command ids or --all, not both", help)
	}
	d, pool, err := dispatcher(ctx, e, db)
	if err != nil {
		return e.fail(err, help)
	}
	defer pool.Close()
	result := exitOK
	if *all != "" {
		// Read them all first: re-driven ones leave the list while it is being read.
		cmds, err := deadCommands(ctx, d, *all, 0, math.MaxInt)
		if err != nil {
			return e.failed(err)
		}
		if len(cmds) == 0 {
			e.printErr("reconcile: no dead %s commands\n", printable(*all))
			return exitNegative
		}
		for _, c := range cmds {
			ids = append(ids, c.ID)
		}
	}
	for _, id := range ids {
		err := d.Redrive(ctx, id, *actor)
		switch {
		case err == nil:
			e.print(fmt.Sprintf("command %d re-driven by %s\n", id, printable(*actor)))
		case errors.Is(err, pgoutbox.ErrNotDead):
			fmt.Fprintf(e.stderr, "reconcile: command %d is not dead (or not there); nothing changed\n", id)
			result = max(result, exitNegative)
		case errors.Is(err, pgoutbox.ErrOutOfOrder):
			fmt.Fprintf(e.stderr, "reconcile: command %d not re-driven: a younger command of the same row was applied or is queued; resolve its finding by hand\n", id)
			result = max(result, exitNegative)
		case ctx.Err() != nil:
			return e.failed(ctx.Err())
		default:
			// "it changed meanwhile" and database errors alike: say it, go on with the others.
			e.printErr("reconcile: %s\n", printable(err.Error()))
			result = max(result, exitError)
		}
	}
	return result
}
