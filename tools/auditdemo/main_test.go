package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

// TestAuditDemo runs the demo, then the command lines it prints with the CLI built from this
// tree: each finds the drift the demo says it planted (exit 1); stopping the demo drops its
// schema.
func TestAuditDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	// The demo and the CLI read $DATABASE_URL; the tests' database may be named otherwise.
	t.Setenv("DATABASE_URL", pgtest.URL(t))
	bin := filepath.Join(t.TempDir(), "reconcile")
	build := exec.Command("go", "build", "-o", bin, "./cmd/reconcile")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/reconcile: %v\n%s", err, out)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, w)
		w.Close()
		done <- err
	}()
	var text strings.Builder
	sc := bufio.NewScanner(r)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "Ctrl-C") {
		text.WriteString(sc.Text() + "\n")
	}
	go func() { _, _ = io.Copy(io.Discard, r) }() // the demo prints nothing more
	key, commands, schema := parseDemo(t, text.String())

	wants := [][]string{
		{"missed_success", "paid_locally_not_externally"},
		{"missed_success", "paid_locally_not_externally", "amount_mismatch", "missed_refund", "dispute_lost"},
	}
	if len(commands) != len(wants) {
		t.Fatalf("%d command lines, want %d:\n%s", len(commands), len(wants), text.String())
	}
	for i, args := range commands {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "STRIPE_SECRET_KEY="+key)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("reconcile %s: %v, want exit 1\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		for _, kind := range wants[i] {
			if !strings.Contains(out.String(), kind) {
				t.Errorf("command %d found no %s:\n%s", i+1, kind, out.String())
			}
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the demo did not stop on Ctrl-C")
	}
	pool, err := pgenv.Connect(context.Background(), pgtest.URL(t), "pgtest.URL")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_namespace WHERE nspname = $1", schema).Scan(&n); err != nil || n != 0 {
		t.Errorf("schema %s left behind (%d, %v)", schema, n, err)
	}
}

// parseDemo reads the demo's text: the key it exports, the audit command lines (their
// arguments after "go run ./cmd/reconcile") and the schema.
func parseDemo(t *testing.T, text string) (key string, commands [][]string, schema string) {
	t.Helper()
	joined := strings.ReplaceAll(text, "\\\n", " ")
	for _, line := range strings.Split(joined, "\n") {
		line = strings.TrimSpace(line)
		if k, ok := strings.CutPrefix(line, "export STRIPE_SECRET_KEY="); ok {
			key = k
		}
		if rest, ok := strings.CutPrefix(line, "go run ./cmd/reconcile "); ok {
			args := strings.Fields(rest)
			commands = append(commands, args)
			for i, a := range args {
				if a == "--schema" && i+1 < len(args) {
					schema = args[i+1]
				}
			}
		}
	}
	if key == "" || schema == "" {
		t.Fatalf("no key or schema in the demo's text:\n%s", text)
	}
	return key, commands, schema
}
