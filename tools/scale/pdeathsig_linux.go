package scale

import (
	"os/exec"
	"syscall"
)

// dieWithParent asks the kernel to kill cmd's process when this process ends, however it ends
// (a SIGKILL, a crash), so that a worker never outlives the process that started it.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
