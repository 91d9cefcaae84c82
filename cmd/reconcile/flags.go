package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

// defaultURL is the database used when neither $DATABASE_URL nor --database-url names one.
const defaultURL = pgenv.DefaultURL

// spec is one command's command line: its flags and the help that --help prints.
type spec struct {
	usage    string   // the usage line, without "Usage: "
	about    string   // what the command does, a paragraph or two
	examples []string // command lines
	fs       *flag.FlagSet
	// sections group flags under titles of their own in the help (the database's, the
	// service table's); the command's own flags come first, under "Flags".
	sections []section
}

type section struct {
	title string
	names map[string]bool
}

// section registers the flags that add defines under a title of their own.
func (s *spec) section(title string, add func(fs *flag.FlagSet)) {
	before := map[string]bool{}
	s.fs.VisitAll(func(f *flag.Flag) { before[f.Name] = true })
	add(s.fs)
	sec := section{title: title, names: map[string]bool{}}
	s.fs.VisitAll(func(f *flag.Flag) {
		if !before[f.Name] {
			sec.names[f.Name] = true
		}
	})
	s.sections = append(s.sections, sec)
}

func newSpec(name, usage, about string, examples ...string) *spec {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors and help are printed by parse, in this tool's words
	return &spec{usage: usage, about: about, examples: examples, fs: fs}
}

// help is what --help prints.
func (s *spec) help() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n\n%s\n", s.usage, strings.TrimSpace(s.about))
	own := func(name string) bool {
		for _, sec := range s.sections {
			if sec.names[name] {
				return false
			}
		}
		return true
	}
	b.WriteString(s.flagList("Flags", own))
	for _, sec := range s.sections {
		b.WriteString(s.flagList(sec.title, func(name string) bool { return sec.names[name] }))
	}
	if len(s.examples) > 0 {
		b.WriteString("\nExamples:\n")
		for _, ex := range s.examples {
			fmt.Fprintf(&b, "  %s\n", ex)
		}
	}
	return b.String()
}

// flagList lists the flags that keep selects under title; nothing if there are none.
func (s *spec) flagList(title string, keep func(string) bool) string {
	var b strings.Builder
	s.fs.VisitAll(func(f *flag.Flag) {
		if !keep(f.Name) {
			return
		}
		typ, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  --%s", f.Name)
		if typ != "" {
			fmt.Fprintf(&b, " %s", typ)
		}
		fmt.Fprintf(&b, "\n      %s", usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
			fmt.Fprintf(&b, " (default %s)", f.DefValue)
		}
		b.WriteString("\n")
	})
	if b.Len() == 0 {
		return ""
	}
	return "\n" + title + ":\n" + b.String()
}

// parse parses args, flags and arguments in any order (a "--" ends the flags). It returns the
// arguments, or done with the exit code when there is nothing more to do: --help was asked
// for (printed, exit 0) or the command line is wrong (reported, exit 2).
func (s *spec) parse(e *env, args []string) (positional []string, code int, done bool) {
	for {
		err := s.fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(e.stdout, s.help())
			return nil, exitOK, true
		}
		if err != nil {
			return nil, e.usageError(err.Error(), s.name()+" --help"), true
		}
		rest := s.fs.Args()
		if len(rest) == 0 {
			return positional, 0, false
		}
		// Parse stops at the first argument, or after a "--" it consumed.
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), 0, false
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// name is the command as typed, such as "reconcile findings list".
func (s *spec) name() string { return "reconcile " + s.fs.Name() }

// dbFlags are the flags of every command that connects: the database and the reconciler's
// tables.
type dbFlags struct {
	url    string
	schema string
	prefix string
}

func (d *dbFlags) register(s *spec) {
	s.section("Database flags", func(fs *flag.FlagSet) {
		fs.StringVar(&d.url, "database-url", "", "the `URL` of the database; overrides $DATABASE_URL (which is safer: other users can see a command line)")
		fs.StringVar(&d.schema, "schema", "", "the `schema` of the reconciler's tables (default: the search_path)")
		fs.StringVar(&d.prefix, "prefix", "", "the `prefix` of the reconciler's table names (default \"reconcile_\")")
	})
}

func (d *dbFlags) tables() pgstore.Tables {
	return pgstore.Tables{Schema: d.schema, Prefix: d.prefix}
}

// connect opens a pool on the database and checks that it answers. Its error names the URL
// with the password hidden.
func (d *dbFlags) connect(ctx context.Context, e *env) (*pgxpool.Pool, error) {
	url, source := d.url, "--database-url"
	if url == "" {
		url, source = e.getenv("DATABASE_URL"), "$DATABASE_URL"
	}
	if url == "" {
		url, source = defaultURL, pgenv.DefaultSource
	}
	pool, err := pgenv.Connect(ctx, url, source)
	if err != nil {
		return nil, err
	}
	return pool, nil
}

// hostFlags describe the service's table (pgstore.Config), for the commands that read it.
type hostFlags struct {
	table            string
	tableSchema      string
	keyColumns       string
	idColumn         string
	externalIDColumn string
	stateColumn      string
	createdAtColumn  string
	updatedAtColumn  string
}

func (h *hostFlags) register(s *spec, tableUsage string) {
	s.section("Service table flags (as the service's pgstore.Config names them)", func(fs *flag.FlagSet) { h.registerFlags(fs, tableUsage) })
}

func (h *hostFlags) registerFlags(fs *flag.FlagSet, tableUsage string) {
	fs.StringVar(&h.table, "table", "", tableUsage)
	fs.StringVar(&h.tableSchema, "table-schema", "", "the `schema` of --table, if it is not --schema (default: --schema, else the search_path)")
	fs.StringVar(&h.keyColumns, "key-columns", "", "the keyset `columns` of --table, comma-separated (default \"id\")")
	fs.StringVar(&h.idColumn, "id-column", "", "the `column` findings name rows by (default: the last key column)")
	fs.StringVar(&h.externalIDColumn, "external-id-column", "", "the `column` holding the external object's id (default \"external_id\")")
	fs.StringVar(&h.stateColumn, "state-column", "", "the `column` holding the row's local state (default \"status\")")
	fs.StringVar(&h.createdAtColumn, "created-at-column", "", "the `column` of the row's creation time (default \"created_at\")")
	fs.StringVar(&h.updatedAtColumn, "updated-at-column", "", "the `column` of the row's last change (default \"updated_at\")")
}

// config is the store's configuration over the host table, with the reconciler's tables. As
// with pgstore.Config.Schema, one schema holds both unless --table-schema keeps them apart.
func (h *hostFlags) config(t pgstore.Tables) pgstore.Config {
	schema := h.tableSchema
	if schema == "" {
		schema = t.Schema
	}
	return pgstore.Config{
		Table:            h.table,
		Schema:           schema,
		KeyColumns:       splitList(h.keyColumns),
		IDColumn:         h.idColumn,
		ExternalIDColumn: h.externalIDColumn,
		StateColumn:      h.stateColumn,
		CreatedAtColumn:  h.createdAtColumn,
		UpdatedAtColumn:  h.updatedAtColumn,
		Tables:           t,
		Logger:           slog.New(slog.DiscardHandler),
	}
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
