package pgenv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

// Redact returns where dbURL points, as user@host:port/database, for messages: never a
// password nor any other parameter (sslpassword, sslkey, options, ...), whatever their names.
// Both forms pgx takes are read: a URL (postgres://...) and keyword/value pairs (host=...
// dbname=...); the parts dbURL does not give are left out ("host:port/database" without a
// user). A string neither form can read is "(connection string)".
func Redact(dbURL string) string {
	var user, host, port, db string
	if u, err := url.Parse(dbURL); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") && u.Opaque == "" {
		q := u.Query()
		user, host, port, db = u.User.Username(), u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/")
		if strings.Contains(u.Host, ",") { // several hosts: pgx tries each
			host, port = u.Host, ""
		}
		user, host, port, db = cmp.Or(user, q.Get("user")), cmp.Or(host, q.Get("host")), cmp.Or(port, q.Get("port")), cmp.Or(db, q.Get("dbname"))
		if strings.Contains(host, ":") && !strings.Contains(host, ",") {
			host = "[" + host + "]" // an IPv6 address
		}
	} else if kv, ok := keywordValues(dbURL); ok {
		user, host, port, db = kv["user"], kv["host"], kv["port"], kv["dbname"]
	} else {
		return "(connection string)"
	}
	if user == "" && host == "" && port == "" && db == "" {
		return "(connection string)"
	}
	var b strings.Builder
	if user != "" {
		b.WriteString(user + "@")
	}
	b.WriteString(host)
	if port != "" {
		b.WriteString(":" + port)
	}
	if db != "" {
		b.WriteString("/" + db)
	}
	return b.String()
}

// keywordValues reads a keyword/value connection string as libpq and pgx do: key=value pairs
// separated by spaces, a value in single quotes if it holds spaces, a backslash escaping the
// next character. It reports false for a string that is not one.
func keywordValues(s string) (map[string]string, bool) {
	kv := map[string]string{}
	s = strings.TrimSpace(s)
	for s != "" {
		key, rest, ok := strings.Cut(s, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" || strings.ContainsAny(key, " \t\n'") {
			return nil, false
		}
		rest = strings.TrimLeft(rest, " \t\n")
		var v strings.Builder
		quoted := strings.HasPrefix(rest, "'")
		if quoted {
			rest = rest[1:]
		}
		i, closed := 0, !quoted
		for ; i < len(rest); i++ {
			c := rest[i]
			if c == '\\' && i+1 < len(rest) {
				i++
				v.WriteByte(rest[i])
				continue
			}
			if quoted && c == '\'' {
				i, closed = i+1, true
				break
			}
			if !quoted && (c == ' ' || c == '\t' || c == '\n') {
				break
			}
			v.WriteByte(c)
		}
		if !closed {
			return nil, false
		}
		kv[key] = v.String()
		s = strings.TrimLeft(rest[i:], " \t\n")
	}
	return kv, len(kv) > 0
}

// Connect opens a pool on dbURL and pings the server, allowing the ping 5 seconds. source
// says where dbURL came from (see URL) and is only used in the error. If the database cannot
// be reached, Connect closes the pool and returns an error that names where dbURL points
// (Redact) and its source, wraps the cause, and says how to provide a database; if ctx is done
// by then, it returns ctx.Err() instead. Its text never quotes dbURL, not even pgx's message
// for a string it cannot parse.
func Connect(ctx context.Context, dbURL, source string) (*pgxpool.Pool, error) {
	return connect(ctx, dbURL, source, nil, setupAdvice)
}

// ConnectReadOnly is Connect for a program that must write nothing: every session of the pool
// starts with default_transaction_read_only on, so that each of its transactions is READ ONLY
// and the server refuses any write, whatever the role may do (the connection string cannot turn
// it off: the setting is sent after its options). A session is handed out only while the
// setting is still on (sessionReadOnly): a function the reads run (a policy's, a view's) may
// turn it off for the session's next transactions. Its error is Connect's without the advice on
// providing a database: the database a reader needs is the one holding its data, which only the
// caller can name, not one to create schemas in.
func ConnectReadOnly(ctx context.Context, dbURL, source string) (*pgxpool.Pool, error) {
	return connect(ctx, dbURL, source, map[string]string{readOnlyParam: "on"}, "")
}

// readOnlyParam is the setting that makes a session's transactions read-only.
const readOnlyParam = "default_transaction_read_only"

// sessionReadOnly is the pool's PrepareConn when it must write nothing: false (the session is
// closed, another one opened) once the session's transactions would no longer start read-only.
// The setting is the user's to change, and a function the table runs on a read (a row-level
// security policy's, a view's) can change it for the rest of the session: the read that ran
// it is read-only still, but the next one on that session would not be. PostgreSQL 14 and later
// report every change of it to the client, so the check costs nothing; an older server is asked.
func sessionReadOnly(ctx context.Context, c *pgx.Conn) (bool, error) {
	v := c.PgConn().ParameterStatus(readOnlyParam)
	if v == "" { // not reported: a server before 14
		if err := c.QueryRow(ctx, "SELECT current_setting('"+readOnlyParam+"')").Scan(&v); err != nil {
			return false, err
		}
	}
	return v == "on", nil
}

// setupAdvice is Connect's advice on providing a database, for the programs that create
// their own tables (the commands, the examples, the tests).
var setupAdvice = fmt.Sprintf(`
Provide a database in one of these ways:
  - set DATABASE_URL (or TEST_DATABASE_URL for tests) to a reachable database you may create schemas in, e.g.
      export DATABASE_URL='postgres://user:password@host:5432/dbname?sslmode=disable'
  - or start the local server (the default URL is %s), then create the database if needed:
      pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start
      psql -h 127.0.0.1 -U postgres -c 'CREATE DATABASE test'`, DefaultURL)

func connect(ctx context.Context, dbURL, source string, params map[string]string, advice string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	var pool *pgxpool.Pool
	if err == nil {
		for k, v := range params {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
		if params[readOnlyParam] == "on" {
			cfg.PrepareConn = sessionReadOnly
		}
		pool, err = pgxpool.NewWithConfig(ctx, cfg)
	}
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
		if pe := (*pgconn.ParseConfigError)(nil); errors.As(err, &pe) {
			err = parseError{pe}
		}
		return nil, fmt.Errorf("pgenv: cannot connect to PostgreSQL at %s (%s): %w%s", Redact(dbURL), source, err, advice)
	}
	return pool, nil
}

// parseError is pgx's error for a connection string it cannot parse, whose message quotes the
// string (with what pgx recognizes as passwords masked, best effort): its text keeps only
// what pgx says is wrong.
type parseError struct{ pe *pgconn.ParseConfigError }

func (e parseError) Error() string {
	// pgx writes "cannot parse `<the string>`: <what is wrong>[ (<the cause>)]", and the cause
	// may quote the string too (a key without "=" in it, say).
	msg := e.pe.Error()
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		msg = msg[i+len("`: "):]
	} else {
		msg = ""
	}
	if i := strings.Index(msg, " ("); i >= 0 {
		msg = msg[:i]
	}
	if msg == "" || strings.ContainsAny(msg, "`=@") {
		return "the connection string cannot be parsed"
	}
	return "the connection string cannot be parsed: " + msg
}

func (e parseError) Unwrap() error { return e.pe }
