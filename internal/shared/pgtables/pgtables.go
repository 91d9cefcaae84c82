// Package pgtables names the reconciler's own tables (cursors, findings, outbox, ...) for the
// packages that share them: pgstore, which migrates and writes them, pgoutbox, which applies
// the outbox, and, from other modules, riverdelivery and cmd/reconcile; so its exported names
// are only added within a major version (see internal/shared/README.md). Its errors name no
// package: each caller says which one it is.
package pgtables

import (
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
)

// DefaultPrefix starts the tables' names when no prefix is given.
const DefaultPrefix = "reconcile_"

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckIdent verifies that v, the value of a configuration field, is a plain SQL identifier.
func CheckIdent(field, v string) error {
	if v == "" {
		return fmt.Errorf("%s is empty", field)
	}
	if !identRE.MatchString(v) || len(v) > 63 {
		return fmt.Errorf("%s %q is not a plain SQL identifier (letters, digits and underscores, at most 63)", field, v)
	}
	return nil
}

// Resolve returns the prefix to use (DefaultPrefix for an empty one) after checking prefix and
// schema (empty: the search_path).
func Resolve(prefix, schema string) (string, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if err := CheckIdent("Tables.Prefix", prefix+"x"); err != nil {
		return "", err
	}
	if len(prefix) > 36 {
		// The longest name built from it must fit PostgreSQL's 63 bytes.
		return "", fmt.Errorf("Tables.Prefix %q is longer than 36 characters", prefix)
	}
	if schema != "" {
		return prefix, CheckIdent("Tables.Schema", schema)
	}
	return prefix, nil
}

// Name returns the quoted, schema-qualified name of table name, one of the reconciler's.
func Name(prefix, schema, name string) string {
	if schema == "" {
		return pgx.Identifier{prefix + name}.Sanitize()
	}
	return pgx.Identifier{schema, prefix + name}.Sanitize()
}
