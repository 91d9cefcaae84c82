package pgstore

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing/fstest"
	"text/template"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/internal/shared/pgtables"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Tables names the reconciler's own tables: Prefix + "cursors", "observations", "findings",
// "outbox", "migrations", ..., in Schema. The zero value means prefix "reconcile_" in the
// search_path. A Store fills it in from its Config (Tables.Schema defaults to Config.Schema):
// pass Store.Tables wherever Tables are asked for, so that every part uses the same ones.
type Tables struct {
	// Prefix starts every table and index name. Empty means "reconcile_".
	Prefix string
	// Schema holds the tables. Empty means the connection's search_path (in a Store's Config,
	// Config.Schema).
	Schema string
}

func (t Tables) withDefaults() Tables {
	if t.Prefix == "" {
		t.Prefix = pgtables.DefaultPrefix
	}
	return t
}

func (t Tables) validate() error {
	if _, err := pgtables.Resolve(t.Prefix, t.Schema); err != nil {
		return fmt.Errorf("pgstore: config: %w", err)
	}
	return nil
}

// table returns the quoted, schema-qualified name of one of the reconciler's tables.
func (t Tables) table(name string) string { return pgtables.Name(t.Prefix, t.Schema, name) }

// Migrations returns the reconciler's migrations rendered for the given tables, as numbered
// .sql files, for hosts that run migrations with their own tool. Migrate applies the same files.
// Each file records its version in the migrations table (creating it if need be), so that
// Store.Check can tell whether the tables are current whichever tool applied them.
func Migrations(t Tables) (fs.FS, error) {
	t = t.withDefaults()
	if err := t.validate(); err != nil {
		return nil, err
	}
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	funcs := template.FuncMap{
		"table": t.table,
		"name":  func(n string) string { return pgx.Identifier{t.Prefix + n}.Sanitize() },
	}
	out := fstest.MapFS{}
	for _, n := range names {
		src, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		tmpl, err := template.New(n).Funcs(funcs).Parse(string(src))
		if err != nil {
			return nil, fmt.Errorf("pgstore: migration %s: %w", n, err)
		}
		var buf bytes.Buffer
		buf.WriteString(createMigrationsTable(t) + ";\n\n")
		if err := tmpl.Execute(&buf, nil); err != nil {
			return nil, fmt.Errorf("pgstore: migration %s: %w", n, err)
		}
		v, err := migrationVersion(n)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&buf, "\nINSERT INTO %s (version, name) VALUES (%d, '%s') ON CONFLICT (version) DO NOTHING;\n",
			t.table("migrations"), v, path.Base(n))
		out[path.Base(n)] = &fstest.MapFile{Data: buf.Bytes(), Mode: 0o444}
	}
	return out, nil
}

// Migrate applies the migrations not yet applied, in one transaction, under an advisory lock
// so that processes starting together do not race. The lock is the tables' own, whichever way
// they are named: Tables{Schema: S} and Tables{} with S first on the search_path take the same
// one. Running it again is a no-op.
func Migrate(ctx context.Context, db DB, t Tables) error {
	t = t.withDefaults()
	files, err := Migrations(t)
	if err != nil {
		return err
	}
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		return err
	}
	slices.Sort(names)
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		// Named in full, the key is the one releases before this took for Tables{Schema: S}.
		schema := t.Schema
		if schema == "" {
			if err := tx.QueryRow(ctx, "SELECT coalesce(current_schema(), '')").Scan(&schema); err != nil {
				return fmt.Errorf("pgstore: migrate: lock: %w", err)
			}
		}
		key := "pgstore.migrate:" + Tables{Prefix: t.Prefix, Schema: schema}.table("migrations")
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", key); err != nil {
			return fmt.Errorf("pgstore: migrate: lock: %w", err)
		}
		if _, err := tx.Exec(ctx, createMigrationsTable(t)); err != nil {
			return fmt.Errorf("pgstore: migrate: %w", err)
		}
		rows, err := tx.Query(ctx, "SELECT version FROM "+t.table("migrations"))
		if err != nil {
			return fmt.Errorf("pgstore: migrate: %w", err)
		}
		applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return fmt.Errorf("pgstore: migrate: %w", err)
		}
		// As in Check, the highest version recorded vouches for those below it (applied by a
		// host's tool from files that did not record their versions).
		latest := int32(0)
		if len(applied) > 0 {
			latest = slices.Max(applied)
		} else {
			var tablesExist bool
			if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", t.table("cursors")).Scan(&tablesExist); err != nil {
				return fmt.Errorf("pgstore: migrate: %w", err)
			}
			if tablesExist {
				return fmt.Errorf("pgstore: migrate: the reconciler's tables exist but %s records no version: "+
					"they were migrated by a tool of your own from files that did not record it; insert the versions it applied "+
					"(version, name) into %s, then migrate", t.table("migrations"), t.table("migrations"))
			}
		}
		for _, n := range names {
			v, err := migrationVersion(n)
			if err != nil {
				return err
			}
			if int32(v) <= latest {
				continue
			}
			sql, err := fs.ReadFile(files, n)
			if err != nil {
				return err
			}
			// The file records its own version.
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return fmt.Errorf("pgstore: migration %s: %w", n, err)
			}
		}
		return nil
	})
}

// createMigrationsTable is the statement that creates the table recording applied migrations.
func createMigrationsTable(t Tables) string {
	return `CREATE TABLE IF NOT EXISTS ` + t.table("migrations") + ` (
    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`
}

// migrationVersion is the number a migration file's name starts with.
func migrationVersion(name string) (int, error) {
	v, err := strconv.Atoi(strings.SplitN(path.Base(name), "_", 2)[0])
	if err != nil {
		return 0, fmt.Errorf("pgstore: migration %s has no version number", name)
	}
	return v, nil
}
