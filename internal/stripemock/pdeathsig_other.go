//go:build !linux

package stripemock

import "os/exec"

// dieWithParent does nothing here: without Pdeathsig, Stop in TestMain is what ends the server.
func dieWithParent(*exec.Cmd) {}
