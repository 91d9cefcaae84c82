package leaktest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/internal/leaktest"
)

// recorder is a testing.TB that keeps the error instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestVerifyNonePassesWhenGoroutinesEnd(t *testing.T) {
	done := make(chan struct{})
	go func() { time.Sleep(50 * time.Millisecond); close(done) }()
	leaktest.VerifyNone(t)
	<-done
}

func TestVerifyNoneReportsALeftoverGoroutine(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	go func() { <-stop }()
	r := &recorder{TB: t}
	leaktest.VerifyNone(r)
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "unexpected goroutines") {
		t.Fatalf("errors %q: want one about the goroutine left running", r.errs)
	}
}

func TestIgnoreCurrentIgnoresGoroutinesAlreadyRunning(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	go func() { <-stop }()
	time.Sleep(10 * time.Millisecond)
	leaktest.VerifyNone(t, leaktest.IgnoreCurrent())
}
