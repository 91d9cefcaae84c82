package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// TestAuditSecondSIGINTStopsAStuckAudit: the audit is stuck writing its report to a pipe
// nobody reads (a pager left paused, a full terminal held by Ctrl-S). The first Ctrl-C asks it
// to stop, which it cannot; a second one ends it, as Ctrl-C twice does elsewhere, rather than
// being swallowed.
func TestAuditSecondSIGINTStopsAStuckAudit(t *testing.T) {
	bin := goBuild(t, ".")
	f := newAuditFixture(t)
	// 1,500 rows pending here and succeeded at Stripe: a report far larger than a pipe holds.
	const n = 1500
	base := time.Now().Add(-72 * time.Hour).Truncate(time.Second)
	pis := make([]stripetest.PaymentIntent, n)
	for i := range pis {
		pis[i] = stripetest.PaymentIntent{ID: fmt.Sprintf("pi_stuck%016d", i+1), Status: stripe.PaymentIntentStatusSucceeded,
			Amount: 1000, Currency: "usd", Created: base.Add(time.Duration(i) * time.Second)}
	}
	f.srv.AddPaymentIntents(pis)
	if _, err := f.pool.Exec(context.Background(), `INSERT INTO payments
		SELECT g, 'pi_stuck' || lpad(g::text, 16, '0'), 'pending', 1000, 'usd', 0, NULL,
			$1::timestamptz + (g - 1) * interval '1 second', $1::timestamptz + (g - 1) * interval '1 second'
		FROM generate_series(1, $2::int) g`, base, n); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "audit", "--database-url", f.url, "--schema", f.schema, "--table", "payments",
		"--external-id-column", "stripe_id", "--stripe-base-url", f.srv.URL(), "--rate", "100")
	cmd.Env = append(os.Environ(), keyEnv+"="+f.srv.Key())
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// Stuck: the pipe is full (FIONREAD says how much it holds), the report not written yet.
	for {
		var queued int32
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, r.Fd(), syscall.TIOCINQ, uintptr(unsafe.Pointer(&queued))); e != 0 {
			t.Fatalf("FIONREAD: %v", e)
		}
		if queued >= 1<<16 || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Ctrl-C, then again until the process ends (the first is what the audit handles; any
	// later one must end it).
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var signals int
wait:
	for {
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			break
		}
		signals++
		select {
		case err = <-done:
			break wait
		case <-ctx.Done():
			err = <-done
			break wait
		case <-time.After(100 * time.Millisecond):
		}
	}
	if signals < 2 {
		t.Errorf("the audit ended after %d Ctrl-C while stuck on its output", signals)
	}
	var exit *exec.ExitError
	if ctx.Err() != nil || !errors.As(err, &exit) {
		t.Fatalf("the audit stuck on its output survived two Ctrl-C: %v (context: %v)\n%s", err, ctx.Err(), errb.String())
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("ended by %v, want by the second SIGINT", err)
	}
}
