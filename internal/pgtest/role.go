package pgtest

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
)

// SelectOnlyURL creates a login role that may only SELECT table in schema (USAGE on the schema,
// SELECT on that one table, nothing else: no other table, no CREATE, no write) and returns the
// URL of the test database connecting as that role, with search_path set to schema. The role
// is dropped when the test finishes. Roles belong to the server, not the database: the name is
// random, as schemas' are. (The local server trusts every role; one with passwords needs a
// pg_hba.conf that lets the role in.)
func SelectOnlyURL(tb testing.TB, schema, table string) string {
	tb.Helper()
	base := URL(tb)
	cfg, err := pgx.ParseConfig(base)
	if err != nil {
		tb.Fatalf("pgtest: parse database URL: %v", err)
	}
	name, err := schemaName()
	if err != nil {
		tb.Fatalf("%v", err)
	}
	role := "r" + name // r_t_<hex>
	ident := pgx.Identifier{role}.Sanitize()
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	for _, sql := range []string{
		"CREATE ROLE " + ident + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE",
		"GRANT USAGE ON SCHEMA " + pgx.Identifier{schema}.Sanitize() + " TO " + ident,
		"GRANT SELECT ON TABLE " + pgx.Identifier{schema, table}.Sanitize() + " TO " + ident,
	} {
		if err := execOnce(ctx, cfg, sql); err != nil {
			tb.Fatalf("pgtest: %s: %v", sql, err)
		}
	}
	// Registered after the schema's cleanup, so it runs first: DROP OWNED revokes the grants
	// while the schema is still there.
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		for _, sql := range []string{"DROP OWNED BY " + ident, "DROP ROLE " + ident} {
			if err := execOnce(ctx, cfg, sql); err != nil {
				tb.Errorf("pgtest: %s: %v", sql, err)
			}
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("pgtest: parse database URL: %v", err)
	}
	u.User = url.User(role)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
