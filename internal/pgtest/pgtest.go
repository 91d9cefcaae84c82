package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

// MaxConns is the maximum number of connections in a pool returned by Pool
// or PoolSchema.
const MaxConns = 8

const (
	pingTimeout    = 3 * time.Second
	cleanupTimeout = 30 * time.Second
)

var (
	resolveOnce sync.Once
	resolvedURL string
	resolveErr  error
)

// URL returns the URL of a PostgreSQL database that answers, for use in
// tests. See the package documentation for how it is chosen. It calls
// tb.Fatalf if no database is available.
func URL(tb testing.TB) string {
	tb.Helper()
	resolveOnce.Do(func() { resolvedURL, resolveErr = resolve(tb) })
	if resolveErr != nil {
		tb.Fatalf("%v", resolveErr)
	}
	return resolvedURL
}

// Pool returns a pool connected to a new, empty schema that is dropped when
// the test finishes. It is PoolSchema without the schema name.
func Pool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	pool, _ := PoolSchema(tb)
	return pool
}

// PoolSchema creates a schema with a random unique name ("t_" followed by
// 16 hex digits) and returns a pool (at most MaxConns connections) whose
// connections have search_path set to that schema only, together with the
// schema name. tb.Cleanup closes the pool and drops the schema with
// everything in it. It calls tb.Fatalf if the database is unavailable.
func PoolSchema(tb testing.TB) (*pgxpool.Pool, string) {
	tb.Helper()
	dbURL := URL(tb)

	schema, err := schemaName()
	if err != nil {
		tb.Fatalf("%v", err)
	}
	ident := pgx.Identifier{schema}.Sanitize()

	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		tb.Fatalf("pgtest: parse database URL: %v", err)
	}
	cfg.MaxConns = MaxConns
	cfg.ConnConfig.RuntimeParams["search_path"] = ident

	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := execOnce(ctx, cfg.ConnConfig, "CREATE SCHEMA "+ident); err != nil {
		tb.Fatalf("pgtest: create schema %s: %v", schema, err)
	}
	// Cleanups run last-in first-out: the pool registered below is closed
	// before the schema is dropped.
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := dropSchema(ctx, cfg.ConnConfig, schema); err != nil {
			tb.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})

	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatalf("pgtest: open pool: %v", err)
	}
	tb.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		tb.Fatalf("pgtest: ping pool: %v", err)
	}
	return pool, schema
}

// Schema returns a new unique schema name ("t_" followed by 16 hex digits) for code under test
// that creates its schema itself, such as an example's run, and drops that schema with
// everything in it when the test finishes. Tests that each take one can run side by side, and
// beside the examples run by hand.
func Schema(tb testing.TB) string {
	tb.Helper()
	cfg, err := pgx.ParseConfig(URL(tb))
	if err != nil {
		tb.Fatalf("pgtest: parse database URL: %v", err)
	}
	schema, err := schemaName()
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := dropSchema(ctx, cfg, schema); err != nil {
			tb.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// dropSchema drops schema with everything in it. A deadlock is retried: a test's last
// statements (a killed worker process's backend still ending, a pool closing) may hold locks on
// the schema's objects for a moment, and DROP ... CASCADE takes them in its own order.
func dropSchema(ctx context.Context, cfg *pgx.ConnConfig, schema string) error {
	sql := "DROP SCHEMA IF EXISTS " + pgx.Identifier{schema}.Sanitize() + " CASCADE"
	for wait := 50 * time.Millisecond; ; wait *= 2 {
		err := execOnce(ctx, cfg, sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "40P01" || wait > 3*time.Second {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// execOnce runs sql on a new connection made from a copy of cfg (its own
// search_path is harmless: sql names the schema explicitly).
func execOnce(ctx context.Context, cfg *pgx.ConnConfig, sql string) error {
	conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// schemaName returns "t_" followed by 16 random hex digits.
func schemaName() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("pgtest: random schema name: %w", err)
	}
	return "t_" + hex.EncodeToString(b[:]), nil
}

// resolve pings the configured database. It runs once per process.
//
// It starts no container itself: testcontainers would be a requirement of the root module,
// and so of every service that imports the library (see DESIGN.md, "What a host pays for
// importing it"). The message says how to start one.
func resolve(tb testing.TB) (string, error) {
	tb.Helper()
	dbURL, source := pgenv.URL("TEST_DATABASE_URL", "DATABASE_URL")
	pingErr := ping(dbURL)
	if pingErr == nil {
		return dbURL, nil
	}
	return "", fmt.Errorf(`pgtest: no PostgreSQL database available for tests.
  database %s (%s) did not answer: %v
Provide a database in one of these ways:
  - set TEST_DATABASE_URL to a reachable database, e.g.
      export TEST_DATABASE_URL='%s'
  - or start the local server (then create the database if needed):
      pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start
      psql -h 127.0.0.1 -U postgres -c 'CREATE DATABASE test'
  - or, with Docker, run one at the default URL:
      docker run -d --rm -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust -e POSTGRES_DB=test postgres:16-alpine`,
		pgenv.Redact(dbURL), source, pingErr, pgenv.DefaultURL)
}

// ping connects to dbURL and pings it within pingTimeout.
func ping(dbURL string) error {
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.Ping(ctx)
}
