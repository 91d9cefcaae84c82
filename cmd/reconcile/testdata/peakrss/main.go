//go:build linux

// Command peakrss runs a command, writes its peak resident set size in bytes into a file, and
// exits with its exit code: peakrss FILE COMMAND [ARG...]. cmd/reconcile's tests measure the
// audit through it (see runMeasured) because Linux puts into a child's ru_maxrss the peak of the
// memory the child leaves at exec, and Go starts children with vfork: a child of the test
// process would report at least the test process's peak. This program's own is a few MB.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: peakrss FILE COMMAND [ARG...]")
		os.Exit(125)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // killed with peakrss
	var exit *exec.ExitError
	if err := cmd.Run(); err != nil && !errors.As(err, &exit) {
		fmt.Fprintln(os.Stderr, "peakrss:", err)
		os.Exit(125)
	}
	peak := uint64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) * 1024 // Linux counts KB
	if err := os.WriteFile(os.Args[1], strconv.AppendUint(nil, peak, 10), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "peakrss:", err)
		os.Exit(125)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}
