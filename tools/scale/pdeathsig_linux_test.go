package scale

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parentEnv makes this test binary a parent that starts a child with dieWithParent, prints its
// pid and waits to be killed.
const parentEnv = "RECONCILE_SCALE_TEST_PARENT"

func init() {
	if os.Getenv(parentEnv) == "" {
		return
	}
	child := exec.Command("sleep", "120")
	dieWithParent(child)
	if err := child.Start(); err != nil {
		fmt.Println("start:", err)
		os.Exit(2)
	}
	fmt.Println(child.Process.Pid)
	time.Sleep(2 * time.Minute)
	os.Exit(0)
}

// gone reports whether process pid has ended: it no longer exists, or is a zombie that no one
// has reaped yet.
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

func TestAWorkerDiesWithItsParentEvenWhenTheParentIsKilled(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(exe, "-test.run=^$")
	parent.Env = append(os.Environ(), parentEnv+"=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		_ = parent.Process.Kill()
		_ = parent.Wait()
		t.Fatalf("the parent said %q (%v, %v), want its child's pid", line, err, perr)
	}
	defer syscall.Kill(pid, syscall.SIGKILL) // if the test fails
	if gone(pid) {
		t.Fatal("the child ended before its parent")
	}
	_ = parent.Process.Signal(syscall.SIGKILL)
	_ = parent.Wait()
	for deadline := time.Now().Add(10 * time.Second); !gone(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the child outlived its parent by 10 s")
		}
	}
}
