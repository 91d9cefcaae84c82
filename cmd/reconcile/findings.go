package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

const findingsOverview = `Usage: reconcile findings <list|show|resolve|reopen> [flags] [arguments]

findings reviews what the jobs found, through the store's review API (reconcile.Reviewer), as the
review console does; every resolution and reopening is recorded in the finding's history with
its actor and note.

Commands:
  list      list findings, filtered by job, kind, state or an id
  show      print one finding with its differences and history
  resolve   close open findings (needs --actor and --note)
  reopen    open resolved findings again (needs --actor and --note)

Run 'reconcile findings <command> --help' for each one's flags and examples.
`

func runFindings(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, findingsOverview)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(e.stdout, findingsOverview)
		return exitOK
	case "list":
		return runFindingsList(ctx, e, args[1:])
	case "show":
		return runFindingsShow(ctx, e, args[1:])
	case "resolve":
		return runFindingsChange(ctx, e, args[1:], true)
	case "reopen":
		return runFindingsChange(ctx, e, args[1:], false)
	}
	return e.usageError(fmt.Sprintf("findings: unknown command %q", args[0]), "reconcile findings --help")
}

// reviewFlags are the flags of the findings commands: the database, and optionally the host
// table.
type reviewFlags struct {
	db   dbFlags
	host hostFlags
}

func (r *reviewFlags) register(s *spec) {
	r.host.register(s, "the service's `table`, optional: it fills in the external ids of findings recorded before findings kept them (migration 006), and lets --search-columns be searched")
	r.db.register(s)
}

const reviewAbout = `
Only the reconciler's tables are needed (--schema, --prefix). --table and the column flags,
as the service configures its store, add what is read from the service's table.`

// reviewer opens the store the findings commands read and write through. Without --table it
// is a store over the reconciler's tables alone: its host table is a name that is not there,
// which only the external-id look-up of old findings reads, and that look-up fails quietly (they
// are listed without those ids). Its aggregate type matches no finding's, so no finding of a
// service's table is taken for its own.
func (r *reviewFlags) reviewer(ctx context.Context, e *env, searchColumns []string) (*pgstore.Store[string], *pgxpool.Pool, error) {
	cfg := r.host.config(r.db.tables())
	cfg.SearchColumns = searchColumns
	if r.host.table == "" {
		cfg.Table = "reconcile_cli_no_host_table"
		cfg.AggregateType = "(no host table: reconcile command line without --table)"
	} else {
		// The service's table was named: a failed look-up is worth saying.
		cfg.Logger = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	// New does not touch the database: a typed nil pool checks the flags before connecting,
	// so that a bad name is a usage error even when the database is down.
	if _, err := pgstore.New((*pgxpool.Pool)(nil), cfg); err != nil {
		return nil, nil, usageErr{err}
	}
	pool, err := r.db.connect(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	store, err := pgstore.New(pool, cfg)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return store, pool, nil
}

// usageErr is an error of the command line found while opening the store.
type usageErr struct{ error }

// fail reports err: a usageErr as a usage error, anything else as a failure.
func (e *env) fail(err error, help string) int {
	var u usageErr
	if errors.As(err, &u) {
		return e.usageError(u.Error(), help)
	}
	return e.failed(err)
}

func runFindingsList(ctx context.Context, e *env, args []string) int {
	const help = "reconcile findings list --help"
	s := newSpec("findings list", "reconcile findings list [flags]", `
list prints findings, oldest first by id, at most --limit of them. --status open (the default),
resolved or all. --search matches a finding's external id (pi_...) or record id whole, or with
--table and --search-columns a value of those columns of its row. To read the next page, pass
the last id printed as --after.`+"\n"+reviewAbout,
		"reconcile findings list --job payments --kind missed_cancel",
		"reconcile findings list --search pi_3PqR2s --status all",
		"reconcile findings list --status resolved --limit 20 --after 1200 --json")
	var r reviewFlags
	r.register(s)
	job := s.fs.String("job", "", "only this job's findings")
	kind := s.fs.String("kind", "", "only findings of this `kind`, such as missed_cancel")
	status := s.fs.String("status", reconcile.FindingsOpen, "`state`: open, resolved or all")
	search := s.fs.String("search", "", "only findings whose external id or record id is this `value`")
	record := s.fs.String("record", "", "only findings of this record `id`")
	olderThan := s.fs.Duration("older-than", 0, "only findings detected more than this `duration` ago, such as 24h")
	after := s.fs.Int64("after", 0, "list the findings after this `id` (the next page)")
	limit := s.fs.Int("limit", reconcile.DefaultFindingsLimit, "print at most `n` findings")
	searchCols := s.fs.String("search-columns", "", "with --table: `columns` of the table that --search matches too, comma-separated")
	asJSON := s.fs.Bool("json", false, "print JSON instead of text")
	pos, code, done := s.parse(e, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return e.usageError(fmt.Sprintf("findings list: unexpected argument %q", pos[0]), help)
	}
	switch {
	case *limit <= 0:
		return e.usageError("findings list: --limit must be positive", help)
	case *olderThan < 0:
		return e.usageError("findings list: --older-than must not be negative", help)
	case *searchCols != "" && r.host.table == "":
		return e.usageError("findings list: --search-columns needs --table", help)
	}
	q := reconcile.FindingQuery{Job: *job, Kind: *kind, RecordID: *record, Search: *search, State: *status, AfterID: *after, Limit: *limit}
	if _, err := q.Normalize(); err != nil {
		return e.usageError("findings list: --status: "+err.Error(), help)
	}
	store, pool, err := r.reviewer(ctx, e, splitList(*searchCols))
	if err != nil {
		return e.fail(err, help)
	}
	defer pool.Close()
	if *olderThan > 0 {
		// The database's clock, which detected_at was written by.
		var now time.Time
		if err := pool.QueryRow(ctx, "SELECT now()").Scan(&now); err != nil {
			return e.failed(err)
		}
		q.DetectedBefore = now.Add(-*olderThan)
	}
	fs, err := store.ListFindings(ctx, q)
	if err != nil {
		return e.failed(err)
	}
	if *asJSON {
		if err := e.printJSON(findingsOut(fs)); err != nil {
			return e.failed(err)
		}
		return exitOK
	}
	if len(fs) == 0 {
		fmt.Fprintln(e.stderr, "no findings")
		return exitOK
	}
	rows := [][]string{{"ID", "JOB", "KIND", "RECORD", "EXTERNAL", "DETECTED", "STATE"}}
	for _, f := range fs {
		state := "open"
		if !f.Open() {
			state = f.Resolution + " by " + f.ResolvedBy + " at " + timeText(f.ResolvedAt)
		}
		rows = append(rows, []string{strconv.FormatInt(f.ID, 10), f.Job, f.Kind, f.RecordID, orDash(f.ExternalID), timeText(f.DetectedAt), state})
	}
	e.print(table(rows))
	if len(fs) == q.Limit {
		fmt.Fprintf(e.stderr, "more may follow: add --after %d\n", fs[len(fs)-1].ID)
	}
	return exitOK
}

func runFindingsShow(ctx context.Context, e *env, args []string) int {
	const help = "reconcile findings show --help"
	s := newSpec("findings show", "reconcile findings show ID [flags]", `
show prints one finding: its record, states, detail, the fields that differ, and its history
(detection, resolutions, reopenings, and its repair commands with their last errors). It exits
1 if there is no finding with that id.`+"\n"+reviewAbout,
		"reconcile findings show 1234",
		"reconcile findings show 1234 --json")
	var r reviewFlags
	r.register(s)
	asJSON := s.fs.Bool("json", false, "print JSON instead of text")
	pos, code, done := s.parse(e, args)
	if done {
		return code
	}
	ids, ok := parseIDs(e, pos, "findings show", help)
	if !ok {
		return exitUsage
	}
	if len(ids) != 1 {
		return e.usageError("findings show: give one finding id", help)
	}
	store, pool, err := r.reviewer(ctx, e, nil)
	if err != nil {
		return e.fail(err, help)
	}
	defer pool.Close()
	d, err := store.Finding(ctx, ids[0])
	if errors.Is(err, reconcile.ErrFindingNotFound) {
		fmt.Fprintf(e.stderr, "reconcile: no finding %d\n", ids[0])
		return exitNegative
	}
	if err != nil {
		return e.failed(err)
	}
	if *asJSON {
		if err := e.printJSON(findingDetailOut(d)); err != nil {
			return e.failed(err)
		}
		return exitOK
	}
	e.print(findingText(d))
	return exitOK
}

// findingText is d for a person.
func findingText(d reconcile.FindingDetail) string {
	var b strings.Builder
	state := "open"
	if !d.Open() {
		state = fmt.Sprintf("resolved as %s by %s at %s", printable(d.Resolution), printable(d.ResolvedBy), timeText(d.ResolvedAt))
	}
	fmt.Fprintf(&b, "finding %d: %s, %s\n", d.ID, printable(d.Kind), state)
	line := func(k, v string) { fmt.Fprintf(&b, "  %-10s %s\n", k, printable(v)) }
	line("job", d.Job)
	line("record", d.RecordID)
	line("external", orDash(d.ExternalID))
	line("local", orDash(d.Local))
	line("remote", orDash(d.External))
	line("detail", orDash(d.Detail))
	line("command", orDash(d.Command))
	line("detected", timeText(d.DetectedAt))
	if d.ResolutionNote != "" {
		line("note", d.ResolutionNote)
	}
	if len(d.Diffs) > 0 {
		rows := [][]string{{"  FIELD", "OURS", "THEIRS"}}
		for _, df := range d.Diffs {
			rows = append(rows, []string{"  " + df.Field, orDash(df.Local), orDash(df.External)})
		}
		b.WriteString("\ndifferences:\n" + table(rows))
	}
	rows := [][]string{{"  WHEN", "WHAT", "WHO", "RESOLUTION", "NOTE"}}
	for _, ev := range d.History {
		note := ev.Note
		if ev.CommandEvent() {
			note = fmt.Sprintf("%d failed attempts", ev.Failures)
			if ev.Error != "" {
				note += "; last error: " + ev.Error
			}
		}
		rows = append(rows, []string{"  " + timeText(ev.At), ev.Action, orDash(ev.Actor), orDash(ev.Resolution), orDash(note)})
	}
	b.WriteString("\nhistory:\n" + table(rows))
	return b.String()
}

func runFindingsChange(ctx context.Context, e *env, args []string, resolve bool) int {
	verb := "reopen"
	about := `
reopen opens resolved findings again (the fix did not hold, or was recorded by mistake) and
records who did it and why. It exits 1 if a finding is not there, is open already, or the same
drift was found again since (the newer finding is the open one); the others are still reopened.`
	examples := []string{`reconcile findings reopen 1234 --actor alice --note "the refund bounced"`}
	if resolve {
		verb = "resolve"
		about = `
resolve closes open findings, recording the resolution (--as), the actor and the note in each
finding's history. Use it for what a person decided; repairs resolve their own findings. It
exits 1 if a finding is not there or is resolved already (by someone else, or a repair); the
others are still resolved.`
		examples = []string{
			`reconcile findings resolve 1234 --actor alice --note "refunded by hand, ticket 5521"`,
			`reconcile findings resolve 1234 1235 --as false_positive --actor alice --note "test payments"`,
		}
	}
	help := "reconcile findings " + verb + " --help"
	s := newSpec("findings "+verb, "reconcile findings "+verb+" ID... --actor NAME --note TEXT [flags]", about, examples...)
	var r reviewFlags // the reconciler's tables only: a review changes nothing in the service's table
	r.db.register(s)
	actor := s.fs.String("actor", "", "who decides: your login (required)")
	note := s.fs.String("note", "", "why, for the finding's history (required)")
	as := reconcile.ResolutionFixed
	if resolve {
		s.fs.StringVar(&as, "as", reconcile.ResolutionFixed, "the `resolution`: fixed (a person fixed the data), accepted (the difference stays) or false_positive")
	}
	pos, code, done := s.parse(e, args)
	if done {
		return code
	}
	ids, ok := parseIDs(e, pos, "findings "+verb, help)
	if !ok {
		return exitUsage
	}
	switch {
	case len(ids) == 0:
		return e.usageError("findings "+verb+": give at least one finding id", help)
	case strings.TrimSpace(*actor) == "":
		return e.usageError("findings "+verb+": --actor is required: who decides", help)
	case strings.TrimSpace(*note) == "":
		return e.usageError("findings "+verb+": --note is required: why, for the finding's history", help)
	case strings.TrimSpace(as) == "":
		return e.usageError("findings resolve: --as must not be empty", help)
	}
	store, pool, err := r.reviewer(ctx, e, nil)
	if err != nil {
		return e.fail(err, help)
	}
	defer pool.Close()
	result := exitOK
	for _, id := range ids {
		var err error
		if resolve {
			err = store.ResolveFinding(ctx, id, reconcile.Resolution{As: as, By: *actor, Note: *note})
		} else {
			err = store.ReopenFinding(ctx, id, *actor, *note)
		}
		switch {
		case err == nil && resolve:
			e.print(fmt.Sprintf("finding %d resolved as %s by %s\n", id, printable(as), printable(*actor)))
		case err == nil:
			e.print(fmt.Sprintf("finding %d reopened by %s\n", id, printable(*actor)))
		case errors.Is(err, reconcile.ErrFindingNotFound):
			fmt.Fprintf(e.stderr, "reconcile: no finding %d; nothing changed\n", id)
			result = max(result, exitNegative)
		case errors.Is(err, reconcile.ErrAlreadyResolved):
			fmt.Fprintf(e.stderr, "reconcile: finding %d is resolved already (by someone else, or a repair); nothing changed\n", id)
			result = max(result, exitNegative)
		case errors.Is(err, reconcile.ErrAlreadyOpen):
			fmt.Fprintf(e.stderr, "reconcile: finding %d is open already; nothing changed\n", id)
			result = max(result, exitNegative)
		case errors.Is(err, reconcile.ErrFoundAgain):
			fmt.Fprintf(e.stderr, "reconcile: the drift of finding %d was found again since; the newer finding is open; nothing changed\n", id)
			result = max(result, exitNegative)
		default:
			return e.failed(err)
		}
	}
	return result
}

// parseIDs parses finding or command ids; on a bad one it reports a usage error.
func parseIDs(e *env, args []string, cmd, help string) ([]int64, bool) {
	ids := make([]int64, 0, len(args))
	for _, a := range args {
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil || id <= 0 {
			e.usageError(fmt.Sprintf("%s: %q is not an id (a positive number)", cmd, a), help)
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}
