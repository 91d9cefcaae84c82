package main

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shared/pgtables"
)

func runMigrate(ctx context.Context, e *env, args []string) int {
	s := newSpec("migrate", "reconcile migrate [sql] [flags]", `
Without an argument, migrate applies the reconciler's migrations that are not applied yet, in
one transaction under an advisory lock (pgstore.Migrate), and says which. Running it again
changes nothing. The schema given with --schema must exist.

"migrate sql" (or --print) prints the migrations' SQL instead, rendered for --schema and
--prefix, for a service that runs migrations with its own tool; it does not connect. Each file
is headed by a comment with its name (001_init.sql, ...), whose number is its version; --after
prints only the versions after the one your tool has applied.`,
		"reconcile migrate",
		"reconcile migrate --schema billing --prefix recon_",
		"reconcile migrate sql > migrations/20260101_reconcile.sql",
		"reconcile migrate sql --after 5")
	var db dbFlags
	db.register(s)
	printSQL := s.fs.Bool("print", false, "print the SQL instead of applying it (as \"migrate sql\")")
	after := s.fs.Int("after", 0, "with sql: print only the migrations after this `version`")
	pos, code, done := s.parse(e, args)
	if done {
		return code
	}
	switch {
	case len(pos) == 1 && pos[0] == "sql":
		*printSQL = true
	case len(pos) > 0:
		return e.usageError(fmt.Sprintf("migrate: unexpected argument %q (did you mean \"migrate sql\"?)", pos[0]), "reconcile migrate --help")
	}
	if *after < 0 {
		return e.usageError("migrate: --after must not be negative", "reconcile migrate --help")
	}
	if *after > 0 && !*printSQL {
		return e.usageError("migrate: --after applies to \"migrate sql\" only", "reconcile migrate --help")
	}
	if *printSQL {
		return migrationSQL(e, db.tables(), *after)
	}
	// Names checked before connecting: a bad one is the command line's fault, whatever the
	// database's state.
	if _, err := pgtables.Resolve(db.prefix, db.schema); err != nil {
		return e.usageError("migrate: "+err.Error(), "reconcile migrate --help")
	}

	pool, err := db.connect(ctx, e)
	if err != nil {
		return e.failed(err)
	}
	defer pool.Close()
	before, err := appliedVersions(ctx, pool, db.tables())
	if err != nil {
		return e.failed(err)
	}
	if err := pgstore.Migrate(ctx, pool, db.tables()); err != nil {
		return e.failed(err)
	}
	now, err := appliedVersions(ctx, pool, db.tables())
	if err != nil {
		return e.failed(err)
	}
	var added []string
	for _, v := range now {
		if !slices.Contains(before, v) {
			added = append(added, strconv.Itoa(v))
		}
	}
	latest := 0
	if len(now) > 0 {
		latest = now[len(now)-1]
	}
	if len(added) == 0 {
		e.print(fmt.Sprintf("migrate: nothing to apply; the tables are at version %d\n", latest))
	} else {
		e.print(fmt.Sprintf("migrate: applied version %s; the tables are at version %d\n", strings.Join(added, ", "), latest))
	}
	return exitOK
}

// migrationSQL prints the migrations after version after, each headed by its file name.
func migrationSQL(e *env, t pgstore.Tables, after int) int {
	files, err := pgstore.Migrations(t)
	if err != nil {
		return e.usageError("migrate: "+err.Error(), "reconcile migrate --help")
	}
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		return e.failed(err)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		v, err := strconv.Atoi(strings.SplitN(n, "_", 2)[0])
		if err != nil {
			return e.failed(fmt.Errorf("migration %s has no version number", n))
		}
		if v <= after {
			continue
		}
		sql, err := fs.ReadFile(files, n)
		if err != nil {
			return e.failed(err)
		}
		fmt.Fprintf(&b, "-- reconcile migration %s (version %d)\n%s\n", n, v, strings.TrimRight(string(sql), "\n"))
	}
	// Not through e.print: the SQL is the library's own text, and redaction must never
	// change a statement.
	fmt.Fprint(e.stdout, b.String())
	return exitOK
}

// appliedVersions reads the versions Migrate recorded, ascending; none if the migrations table
// does not exist yet.
func appliedVersions(ctx context.Context, pool *pgxpool.Pool, t pgstore.Tables) ([]int, error) {
	prefix, err := pgtables.Resolve(t.Prefix, t.Schema)
	if err != nil {
		return nil, err
	}
	name := pgtables.Name(prefix, t.Schema, "migrations")
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", name).Scan(&exists); err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	if !exists {
		return nil, nil
	}
	rows, err := pool.Query(ctx, "SELECT version FROM "+name+" ORDER BY version")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read migrations: %w", err)
		}
		vs = append(vs, v)
	}
	return vs, rows.Err()
}
