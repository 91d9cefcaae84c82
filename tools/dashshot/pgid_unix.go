//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup keeps cmd out of our process group: a terminal's Ctrl-C goes to the whole
// foreground group, and would stop Prometheus before the run's queries are asked.
func ownProcessGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
