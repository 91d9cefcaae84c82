package pgenv_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

// unreachable refuses connections at once: nothing listens on port 1 of the loopback
// interface.
const unreachable = "postgres://postgres:secret@127.0.0.1:1/test?sslmode=disable"

func TestURLTakesTheFirstSetVariable(t *testing.T) {
	// t.Setenv forbids t.Parallel.
	tests := []struct {
		name       string
		env        map[string]string
		vars       []string
		want, from string
	}{
		{"none set", nil, []string{"TEST_DATABASE_URL", "DATABASE_URL"}, pgenv.DefaultURL, "the default URL"},
		{"no variables", map[string]string{"DATABASE_URL": "postgres://d"}, nil, pgenv.DefaultURL, "the default URL"},
		{"second set", map[string]string{"DATABASE_URL": "postgres://d"}, []string{"TEST_DATABASE_URL", "DATABASE_URL"}, "postgres://d", "$DATABASE_URL"},
		{"first set", map[string]string{"TEST_DATABASE_URL": "postgres://t"}, []string{"TEST_DATABASE_URL", "DATABASE_URL"}, "postgres://t", "$TEST_DATABASE_URL"},
		{"both set", map[string]string{"TEST_DATABASE_URL": "postgres://t", "DATABASE_URL": "postgres://d"}, []string{"TEST_DATABASE_URL", "DATABASE_URL"}, "postgres://t", "$TEST_DATABASE_URL"},
		{"first empty", map[string]string{"TEST_DATABASE_URL": "", "DATABASE_URL": "postgres://d"}, []string{"TEST_DATABASE_URL", "DATABASE_URL"}, "postgres://d", "$DATABASE_URL"},
		{"order is the caller's", map[string]string{"TEST_DATABASE_URL": "postgres://t", "DATABASE_URL": "postgres://d"}, []string{"DATABASE_URL", "TEST_DATABASE_URL"}, "postgres://d", "$DATABASE_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, name := range []string{"TEST_DATABASE_URL", "DATABASE_URL"} {
				t.Setenv(name, tt.env[name]) // unset names become empty, which URL skips
			}
			got, from := pgenv.URL(tt.vars...)
			if got != tt.want || from != tt.from {
				t.Errorf("URL(%q) with %v = %q, %q; want %q, %q", tt.vars, tt.env, got, from, tt.want, tt.from)
			}
		})
	}
}

func TestRedactShowsWhereAConnectionPointsAndNothingElse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"password", "postgres://u:secret@h:5432/db?sslmode=disable", "u@h:5432/db"},
		{"no password", pgenv.DefaultURL, "postgres@127.0.0.1:5432/test"},
		{"password parameter", "postgres://u@h/db?password=secret&sslmode=disable", "u@h/db"},
		{"sslpassword parameter", "postgres://u@h:5432/db?sslpassword=secret&sslkey=/k.pem&sslmode=verify-full", "u@h:5432/db"},
		{"postgresql scheme", "postgresql://u@h/db?options=-c%20search_path%3Dsecret", "u@h/db"},
		{"the parts as parameters", "postgres:///?host=/run/postgresql&port=5433&user=u&dbname=db&sslpassword=secret", "u@/run/postgresql:5433/db"},
		{"several hosts", "postgres://u:secret@h1:5432,h2:5433/db", "u@h1:5432,h2:5433/db"},
		{"IPv6", "postgres://u:secret@[::1]:5432/db", "u@[::1]:5432/db"},
		{"no user", "postgres://h:5432/db", "h:5432/db"},
		{"keyword/value", "host=h port=5432 user=u dbname=db password=secret sslpassword=secret", "u@h:5432/db"},
		{"keyword/value, quoted and spaced", "host = 'h' user='u' password='se cr\\'et' sslpassword = 'x y' dbname=db", "u@h/db"},
		{"keyword/value, no host", "dbname=db sslpassword=secret", "/db"},
		{"keyword/value, unterminated quote", "host=h password='secret", "(connection string)"},
		{"not a URL", "u:secret@h", "(connection string)"},
		{"another scheme", "mysql://u:secret@h/db?password=secret", "(connection string)"},
		{"unparsable", "postgres://u:secret@h:port/db", "(connection string)"},
		{"empty", "", "(connection string)"},
	}
	for _, tt := range tests {
		got := pgenv.Redact(tt.in)
		if got != tt.want {
			t.Errorf("%s: Redact(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
		if strings.Contains(got, "secret") || strings.Contains(got, "?") || strings.Contains(got, "=") {
			t.Errorf("%s: Redact(%q) = %q shows a parameter", tt.name, tt.in, got)
		}
	}
}

// pgx quotes the connection string in its error for one it cannot parse (masking what it
// recognizes as a password, best effort); Connect's error quotes none of it.
func TestConnectWithAStringPgxCannotParseQuotesNoneOfIt(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"postgres://u@127.0.0.1:1/db?sslpassword=s3cret&sslmode=bogus", "pgenv: cannot connect to PostgreSQL at u@127.0.0.1:1/db ($DATABASE_URL): the connection string cannot be parsed: failed to configure TLS\n"},
		{"host=127.0.0.1 port=x user=u sslpassword=s3cret password=s3cret", "pgenv: cannot connect to PostgreSQL at u@127.0.0.1:x ($DATABASE_URL): the connection string cannot be parsed: invalid port\n"},
		{"host=127.0.0.1 user=u s3cret", "pgenv: cannot connect to PostgreSQL at (connection string) ($DATABASE_URL): the connection string cannot be parsed: failed to parse as keyword/value\n"},
	} {
		pool, err := pgenv.Connect(t.Context(), tt.in, "$DATABASE_URL")
		if err == nil {
			pool.Close()
			t.Fatalf("Connect(%q) succeeded", tt.in)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, tt.want) {
			t.Errorf("Connect(%q):\n%s\nwant it to begin %q", tt.in, msg, tt.want)
		}
		msg, _, _ = strings.Cut(msg, "\n") // the rest is the help, the same for every string
		if strings.Contains(msg, "s3cret") || strings.Contains(msg, "sslpassword") || strings.Contains(msg, "sslmode") || strings.Contains(msg, "xxxxx") {
			t.Errorf("Connect(%q) quotes the connection string:\n%s", tt.in, msg)
		}
	}
}

func TestConnectWithoutADatabaseSaysHowToProvideOne(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	pool, err := pgenv.Connect(ctx, unreachable, "$DATABASE_URL")
	if err == nil {
		pool.Close()
		t.Fatal("Connect succeeded with nothing listening")
	}
	if pool != nil {
		t.Error("Connect returned a pool with its error")
	}
	msg := err.Error()
	prefix := "pgenv: cannot connect to PostgreSQL at postgres@127.0.0.1:1/test ($DATABASE_URL): "
	if !strings.HasPrefix(msg, prefix) {
		t.Errorf("error does not start with %q:\n%s", prefix, msg)
	}
	for _, want := range []string{
		"DATABASE_URL=",
		"TEST_DATABASE_URL",
		"pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start",
		"psql -h 127.0.0.1 -U postgres -c 'CREATE DATABASE test'",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "secret") {
		t.Errorf("error shows the password:\n%s", msg)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Errorf("a refused connection reads as a done context: %v", err)
	}
}

func TestConnectWithAnUnparsableURLHidesThePassword(t *testing.T) {
	t.Parallel()
	pool, err := pgenv.Connect(t.Context(), "postgres://u:secret@h:port/db", "the default URL")
	if err == nil {
		pool.Close()
		t.Fatal("Connect succeeded with an unparsable URL")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "pgenv: cannot connect to PostgreSQL at (connection string) (the default URL): ") {
		t.Errorf("unexpected error:\n%s", msg)
	}
	if strings.Contains(msg, "secret") {
		t.Errorf("error shows the password:\n%s", msg)
	}
}

func TestConnectReturnsTheContextsError(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	pool, err := pgenv.Connect(ctx, unreachable, "$DATABASE_URL")
	if err == nil {
		pool.Close()
		t.Fatal("Connect succeeded with a cancelled context")
	}
	if err != context.Canceled {
		t.Errorf("Connect with a cancelled context = %v, want context.Canceled itself", err)
	}
}

func TestConnect(t *testing.T) {
	t.Parallel()
	pool, err := pgenv.Connect(t.Context(), pgtest.URL(t), "pgtest.URL")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var one int
	if err := pool.QueryRow(t.Context(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("SELECT 1 = %d, %v", one, err)
	}
}

func TestConnectReadOnly(t *testing.T) {
	url, source := pgenv.URL("TEST_DATABASE_URL", "DATABASE_URL")
	ctx := context.Background()
	pool, err := pgenv.ConnectReadOnly(ctx, url, source)
	if err != nil {
		t.Fatalf("ConnectReadOnly: %v", err)
	}
	defer pool.Close()
	var ro string
	if err := pool.QueryRow(ctx, "SHOW default_transaction_read_only").Scan(&ro); err != nil || ro != "on" {
		t.Fatalf("default_transaction_read_only %q, %v", ro, err)
	}
	if _, err := pool.Exec(ctx, "CREATE TEMP TABLE pgenv_readonly (id int)"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("a write in a read-only session: %v", err)
	}
}

// TestConnectReadOnlyCannotBeTurnedOff: the connection string cannot undo the read-only
// session, neither as a parameter of its own nor through options.
func TestConnectReadOnlyCannotBeTurnedOff(t *testing.T) {
	base := pgtest.URL(t)
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	for _, extra := range []string{
		"default_transaction_read_only=off",
		"options=-c%20default_transaction_read_only%3Doff",
		"options=-c%20transaction_read_only%3Doff",
	} {
		pool, err := pgenv.ConnectReadOnly(t.Context(), base+sep+extra, "pgtest.URL")
		if err != nil {
			t.Fatalf("%s: %v", extra, err)
		}
		_, err = pool.Exec(t.Context(), "CREATE TEMP TABLE pgenv_readonly (id int)")
		pool.Close()
		if err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("with %s, a write in the session: %v", extra, err)
		}
	}
}

// TestConnectReadOnlySessionTurnedOff: a statement turns default_transaction_read_only off
// for its session (a function a read runs may): the pool's next statements are read-only
// still, on whichever session, as many as the pool holds.
func TestConnectReadOnlySessionTurnedOff(t *testing.T) {
	pool, err := pgenv.ConnectReadOnly(t.Context(), pgtest.URL(t), "pgtest.URL")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for i := range 5 {
		if _, err := pool.Exec(t.Context(), "SELECT set_config('default_transaction_read_only', 'off', false)"); err != nil {
			t.Fatal(err)
		}
		var ro string
		if err := pool.QueryRow(t.Context(), "SHOW transaction_read_only").Scan(&ro); err != nil || ro != "on" {
			t.Fatalf("statement %d after the setting was turned off: transaction_read_only %q, %v", i, ro, err)
		}
	}
}

// TestConnectReadOnlyLeavesTheAdviceToTheCaller: a read-only program needs the database that
// holds its data, not one to create schemas in; its error says where it failed, no more.
func TestConnectReadOnlyLeavesTheAdviceToTheCaller(t *testing.T) {
	t.Parallel()
	pool, err := pgenv.ConnectReadOnly(t.Context(), unreachable, "$DATABASE_URL")
	if err == nil {
		pool.Close()
		t.Fatal("ConnectReadOnly succeeded with nothing listening")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "pgenv: cannot connect to PostgreSQL at postgres@127.0.0.1:1/test ($DATABASE_URL): ") ||
		strings.Contains(msg, "\n") || strings.Contains(msg, "create schemas") || strings.Contains(msg, "secret") {
		t.Errorf("unexpected error:\n%s", msg)
	}
}
