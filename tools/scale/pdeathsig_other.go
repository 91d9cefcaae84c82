//go:build !linux

package scale

import "os/exec"

// dieWithParent does nothing here: without Pdeathsig, a worker whose parent dies without
// stopping it runs on until it is done (or stopped by hand).
func dieWithParent(*exec.Cmd) {}
