package stripemock

import (
	"os/exec"
	"syscall"
)

// dieWithParent asks the kernel to kill cmd when the test binary exits, however it exits.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
