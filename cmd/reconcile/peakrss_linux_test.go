//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// peakRSS measures commands' peak resident set sizes through testdata/peakrss, a launcher that
// reads its child's ru_maxrss from wait4. Read here instead, the figure would be at least this
// test process's own peak (the fake Stripe, every earlier test's leftovers): Go starts a child
// with vfork (CLONE_VM), and Linux puts into the child's ru_maxrss the peak of the memory it
// leaves at exec, ours. The launcher's own peak is a few MB.
type peakRSS struct{ launcher string }

// newPeakRSS builds the launcher, without the race detector (which would multiply its peak).
func newPeakRSS(t *testing.T) peakRSS {
	t.Helper()
	return peakRSS{launcher: goBuild(t, "./testdata/peakrss", "-race=false")}
}

// run runs bin with args, env added to this process's environment, and returns its exit code,
// its standard output and error, and its peak resident set size in bytes.
func (p peakRSS) run(t *testing.T, ctx context.Context, env []string, bin string, args ...string) (code int, stdout, stderr string, peak uint64) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "peak")
	cmd := exec.CommandContext(ctx, p.launcher, append([]string{file, bin}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	var exit *exec.ExitError
	if err := cmd.Run(); err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s: %v", bin, err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%s: no peak measured (exit %d): %v\nstdout:\n%.2000s\nstderr:\n%s", bin, cmd.ProcessState.ExitCode(), err, out.String(), errb.String())
	}
	if peak, err = strconv.ParseUint(string(b), 10, 64); err != nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String(), peak
}

// TestPeakRSSIsTheCommands: with 256 MB touched here, a command that takes almost nothing is
// measured at almost nothing (read by this process, its peak would be at least ours), one that
// takes 64 MB at 64 MB or more, and the exit code is the command's.
func TestPeakRSSIsTheCommands(t *testing.T) {
	ballast := make([]byte, 256<<20)
	for i := range ballast {
		ballast[i] = 1
	}
	m := newPeakRSS(t)
	ctx := context.Background()
	if code, out, errs, peak := m.run(t, ctx, nil, "/bin/sh", "-c", "exit 0"); code != 0 || peak > 16<<20 {
		t.Errorf("sh -c 'exit 0': exit %d, peak %.1f MB, want 0 and at most 16.8 MB\n%s%s", code, float64(peak)/1e6, out, errs)
	} else {
		t.Logf("sh -c 'exit 0': peak %.1f MB", float64(peak)/1e6)
	}
	// dd reads a 64 MB block into a buffer of its own: every page of it touched.
	if code, out, errs, peak := m.run(t, ctx, nil, "dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"); code != 0 || peak < 64<<20 {
		t.Errorf("dd bs=64M: exit %d, peak %.1f MB, want 0 and at least 67.1 MB\n%s%s", code, float64(peak)/1e6, out, errs)
	} else {
		t.Logf("dd bs=64M: peak %.1f MB", float64(peak)/1e6)
	}
	if code, _, _, _ := m.run(t, ctx, nil, "/bin/sh", "-c", "exit 3"); code != 3 {
		t.Errorf("sh -c 'exit 3': exit %d, want 3", code)
	}
	runtime.KeepAlive(ballast)
}
