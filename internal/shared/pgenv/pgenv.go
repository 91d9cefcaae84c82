package pgenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultURL is the database used when no environment variable names one: the local server
// with trust authentication.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// pingTimeout bounds Connect's first round trip to the server.
const pingTimeout = 5 * time.Second

// URL returns the value of the first of the environment variables vars that is set and not
// empty, with its source as "$NAME" (for example "$DATABASE_URL"). If none is, it returns
// DefaultURL with the source "the default URL".
func URL(vars ...string) (url, source string) {
	for _, name := range vars {
		if v := os.Getenv(name); v != "" {
			return v, "$" + name
		}
	}
	return DefaultURL, DefaultSource
}

// DefaultSource is URL's source when no variable was set.
const DefaultSource = "the default URL"

// Redact returns dbURL with its password hidden, for messages. A string that is not a URL
// (such as a keyword/value connection string, which may hold a password anywhere) is
// returned as "(connection string)".
func Redact(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return "(connection string)"
	}
	// pgx also takes the password as a query parameter.
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// Connect opens a pool on dbURL and pings the server, allowing the ping 5 seconds. source
// says where dbURL came from (see URL) and is only used in the error. If the database cannot
// be reached, Connect closes the pool and returns an error that names the redacted URL and its
// source, wraps the cause, and says how to provide a database; if ctx is done by then, it
// returns ctx.Err() instead.
func Connect(ctx context.Context, dbURL, source string) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, dbURL)
	if err == nil {
		pingCtx, cancel := context.WithTimeout(ctx, pingTimeout)
		err = pool.Ping(pingCtx)
		cancel()
		if err != nil {
			pool.Close()
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf(`pgenv: cannot connect to PostgreSQL at %s (%s): %w
Provide a database in one of these ways:
  - set DATABASE_URL (or TEST_DATABASE_URL for tests) to a reachable database you may create schemas in, e.g.
      export DATABASE_URL='postgres://user:password@host:5432/dbname?sslmode=disable'
  - or start the local server (the default URL is %s), then create the database if needed:
      pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start
      psql -h 127.0.0.1 -U postgres -c 'CREATE DATABASE test'`, Redact(dbURL), source, err, DefaultURL)
	}
	return pool, nil
}
