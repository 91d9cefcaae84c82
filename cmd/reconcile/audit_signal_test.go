package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestAuditSIGINT builds the command, starts an audit, and sends it SIGINT (Ctrl-C) after its
// first calls: it prints what it found so far and exits 1 for the drift among it.
func TestAuditSIGINT(t *testing.T) {
	bin := goBuild(t, ".")
	f := newAuditFixture(t)
	f.add(row{local: "pending", amount: 1000, remote: "succeeded"})
	for range 50 {
		f.add(row{local: "paid", amount: 1000, remote: "succeeded"})
	}
	f.srv.SetLatency(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "audit", "--database-url", f.url, "--schema", f.schema, "--table", "payments",
		"--external-id-column", "stripe_id", "--stripe-base-url", f.srv.URL(), "--rate", "100", "--batch-size", "1")
	cmd.Env = append(os.Environ(), keyEnv+"="+f.srv.Key())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for len(f.srv.Log()) < 3 {
		if ctx.Err() != nil {
			t.Fatalf("the audit made fewer than 3 calls in a minute\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitNegative {
		t.Fatalf("exit: %v, want 1\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	mustContain(t, "stdout", out.String(), "interrupted (Ctrl-C): what was found so far", "missed_success")
	if strings.Contains(out.String(), "rows read     51") {
		t.Errorf("the run was not interrupted:\n%s", out.String())
	}
}

// TestAuditSignalDuringAHangingCall: Stripe never answers the call in flight. SIGINT or
// SIGTERM still ends the audit with its report (nothing verified: exit 3); it does not wait
// for the call's own timeout.
func TestAuditSignalDuringAHangingCall(t *testing.T) {
	bin := goBuild(t, ".")
	f := newAuditFixture(t)
	f.plantStatusDrift()
	var calls atomic.Int32
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		<-r.Context().Done()
	}))
	defer hang.Close()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			calls.Store(0)
			// Longer than a minute means it waited for the call's timeout or hung.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "audit", "--database-url", f.url, "--schema", f.schema, "--table", "payments",
				"--external-id-column", "stripe_id", "--stripe-base-url", hang.URL)
			cmd.Env = append(os.Environ(), keyEnv+"="+f.srv.Key())
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			for calls.Load() == 0 && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var exit *exec.ExitError
			if ctx.Err() != nil || !errors.As(err, &exit) || exit.ExitCode() != exitError {
				t.Fatalf("exit: %v (context: %v), want 3\nstdout:\n%s\nstderr:\n%s", err, ctx.Err(), out.String(), errb.String())
			}
			mustContain(t, "stdout", out.String(), "interrupted", "rows read     0")
		})
	}
}
