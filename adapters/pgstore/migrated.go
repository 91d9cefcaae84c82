package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrNotMigrated is wrapped by the errors of a store whose reconciler tables are missing or
// lack some of the migrations this version of the package embeds (see MigrationError).
var ErrNotMigrated = errors.New("pgstore: the reconciler's tables are not migrated")

// MigrationError says that the reconciler's tables are missing, or behind this package's
// migrations, and how to fix it. It wraps ErrNotMigrated, and Err when there is one.
type MigrationError struct {
	// Tables are the tables looked for, defaults filled in.
	Tables Tables
	// Missing names the migration files not applied, such as "007_finding_diffs.sql"; every
	// file when the tables do not exist. Empty when Err revealed the problem.
	Missing []string
	// Op and Err are the operation that failed and the database error that revealed it (a
	// statement on a table that does not exist); empty and nil when Check found it.
	Op  string
	Err error
}

// Error names the tables, what is missing, and the fix.
func (e *MigrationError) Error() string {
	where := fmt.Sprintf("%q", e.Tables.Prefix+"*")
	if e.Tables.Schema != "" {
		where = fmt.Sprintf("%q.%q", e.Tables.Schema, e.Tables.Prefix+"*")
	} else {
		where += " in the search_path"
	}
	var what string
	switch all := embeddedMigrations(); {
	case e.Err != nil:
		what = "are missing or out of date"
	case len(e.Missing) == len(all):
		what = "do not exist (no migration is recorded)"
	default:
		what = "lack migration " + strings.Join(e.Missing, ", ")
	}
	op := ""
	if e.Op != "" {
		op = e.Op + ": "
	}
	msg := fmt.Sprintf("pgstore: %sthe reconciler's tables %s %s: run pgstore.Migrate(ctx, db, store.Tables()) at startup, "+
		"or apply pgstore.Migrations(store.Tables()) with your migration tool", op, where, what)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrNotMigrated and Err.
func (e *MigrationError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrNotMigrated}
	}
	return []error{ErrNotMigrated, e.Err}
}

// embeddedMigrations returns the names of the migration files this package applies, in order.
func embeddedMigrations() []string {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		panic(err) // a constant pattern
	}
	for i, n := range names {
		names[i] = path.Base(n)
	}
	slices.Sort(names)
	return names
}

// checkMigrated returns a *MigrationError unless every embedded migration is applied to t.
// Migrations apply in order, so the highest version recorded vouches for those below it: a
// host's own tool applied earlier files from Migrations before they recorded their versions.
// For the same reason, tables that exist with no version recorded at all were migrated by such
// a tool, and cannot be judged: they pass (a statement meeting a missing table still says to
// migrate).
func checkMigrated(ctx context.Context, db DB, t Tables) error {
	var exists, tablesExist bool
	if err := db.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL",
		t.table("migrations"), t.table("cursors")).Scan(&exists, &tablesExist); err != nil {
		return fmt.Errorf("pgstore: read catalog for %s: %w", t.table("migrations"), err)
	}
	var latest *int32 // the highest version recorded; nil if none is
	if exists {
		if err := db.QueryRow(ctx, "SELECT max(version) FROM "+t.table("migrations")).Scan(&latest); err != nil {
			return fmt.Errorf("pgstore: read %s: %w", t.table("migrations"), err)
		}
	}
	if latest == nil && tablesExist {
		return nil
	}
	var missing []string
	for _, n := range embeddedMigrations() {
		v, err := migrationVersion(n)
		if err != nil {
			return err
		}
		if latest == nil || int32(v) > *latest {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return &MigrationError{Tables: t, Missing: missing}
	}
	return nil
}

// wrap returns err as the failure of op ("pgstore: op: err"), or, when err is PostgreSQL's
// undefined_table about one of t's tables, as a *MigrationError saying to run Migrate.
func (t Tables) wrap(op string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" && strings.Contains(pe.Message, t.Prefix) {
		return &MigrationError{Tables: t, Op: op, Err: err}
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}
