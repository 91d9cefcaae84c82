package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"
)

// openPTY opens a pseudo-terminal of cols columns: the master, which reads what a program
// writes to the terminal, and the terminal itself, to give the program as its standard error.
func openPTY(t *testing.T, cols uint16) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var unlock int32
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlock pty: %v", e)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("pty number: %v", e)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	ws := struct{ rows, cols, x, y uint16 }{24, cols, 0, 0}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, tty.Fd(), syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws))); e != 0 {
		t.Fatalf("set window size: %v", e)
	}
	return master, tty
}

// TestAuditProgressOnATerminal runs the audit with its standard error on a terminal 60 columns
// wide: the progress is one line redrawn in place (a carriage return and an erase before
// each), never wider than the terminal (a wrapped line is not erased by the next redraw, and
// the screen fills with stale lines), and erased before the verdict.
func TestAuditProgressOnATerminal(t *testing.T) {
	bin := goBuild(t, ".")
	const cols = 60
	master, tty := openPTY(t, cols)
	defer master.Close()
	f := newAuditFixture(t)
	f.add(row{local: "pending", amount: 1000, remote: "succeeded"})
	for range 15 {
		f.add(row{local: "paid", amount: 1000, remote: "succeeded"})
	}
	// A call every 100 ms, a row a batch: over a second and a half, several redraws.
	f.srv.SetLatency(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "audit", "--database-url", f.url, "--schema", f.schema, "--table", "payments",
		"--external-id-column", "stripe_id", "--stripe-base-url", f.srv.URL(), "--rate", "100", "--batch-size", "1")
	cmd.Env = append(os.Environ(), keyEnv+"="+f.srv.Key())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // the child holds it now: the master reads EOF (EIO) once the child exits
	var screen bytes.Buffer
	_, _ = io.Copy(&screen, master) // ends with EIO when the terminal's last holder closes it
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitNegative {
		t.Fatalf("exit %v, want 1\n%s\n%q", err, out.String(), screen.String())
	}
	s := screen.String()
	const redraw = "\r\x1b[K"
	if strings.Count(s, redraw) < 3 {
		t.Fatalf("fewer than 3 redraws of the progress line:\n%q", s)
	}
	parts := strings.Split(s, redraw)
	for _, p := range parts[1 : len(parts)-1] {
		if n := utf8.RuneCountInString(p); n >= cols || strings.ContainsAny(p, "\r\n") {
			t.Errorf("a progress line of %d characters on a terminal of %d columns, or not one line: %q", n, cols, p)
		}
	}
	// What follows the last erase is the verdict, on a clean line.
	last := parts[len(parts)-1]
	if !strings.HasPrefix(last, "Drift found: 1 findings (exit 1).") {
		t.Errorf("the progress line is not erased before the verdict: %q", last)
	}
}
