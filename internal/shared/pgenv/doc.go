// Package pgenv finds and connects to the PostgreSQL database that the commands
// (cmd/reconcile, examples/payments, tools/bench) and the test harness (internal/pgtest)
// use. It needs pgx only; the examples' container fallback is examples/internal/pgcontainer,
// in the examples module. Other modules import it: its exported names are only added within a
// major version (see internal/shared/README.md).
//
// # Usage
//
// URL picks the database from environment variables, falling back to DefaultURL, the local
// server with trust authentication; Connect opens a pool on it and checks that the server
// answers:
//
//	dbURL, source := pgenv.URL("DATABASE_URL")
//	pool, err := pgenv.Connect(ctx, dbURL, source)
//	if err != nil {
//		return err // names the redacted URL, where it came from, and how to provide one
//	}
//	defer pool.Close()
//
// Redact makes a connection string fit to print: it shows where the string points,
// user@host:port/database, and none of its parameters, which may hold a password under
// several names (password, sslpassword, ...).
package pgenv
