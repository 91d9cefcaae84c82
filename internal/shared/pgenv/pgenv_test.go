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

func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"password", "postgres://u:secret@h:5432/db?sslmode=disable", "postgres://u:xxxxx@h:5432/db?sslmode=disable"},
		{"no password", pgenv.DefaultURL, pgenv.DefaultURL},
		{"password parameter", "postgres://u@h/db?password=secret&sslmode=disable", "postgres://u@h/db?password=xxxxx&sslmode=disable"},
		{"keyword/value", "host=h password=secret", "(connection string)"},
		{"not a URL", "u:secret@h", "(connection string)"},
		{"unparsable", "postgres://u:secret@h:port/db", "(connection string)"},
		{"empty", "", "(connection string)"},
	}
	for _, tt := range tests {
		if got := pgenv.Redact(tt.in); got != tt.want {
			t.Errorf("%s: Redact(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
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
	prefix := "pgenv: cannot connect to PostgreSQL at postgres://postgres:xxxxx@127.0.0.1:1/test?sslmode=disable ($DATABASE_URL): "
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
