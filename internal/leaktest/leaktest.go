// Package leaktest fails a test that leaves goroutines behind. It does what the tests used
// go.uber.org/goleak for (VerifyNone, VerifyTestMain, IgnoreCurrent) with the standard library only: a test
// requirement of the root module is a requirement every service importing the library sees
// (DESIGN.md, "What a host pays for importing it").
//
//	func TestSomething(t *testing.T) {
//		defer leaktest.VerifyNone(t)
//		...
//	}
//
// Like goleak it ignores the calling goroutine, the testing package's own goroutines waiting
// for tests, and the os/signal loop, and retries for a while (Timeout) before failing, so that
// goroutines already told to stop may finish.
package leaktest

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Timeout is how long VerifyNone waits for unexpected goroutines to end.
const Timeout = 5 * time.Second

// Option changes what VerifyNone ignores.
type Option struct {
	ids map[uint64]bool
}

// IgnoreCurrent is an Option that ignores the goroutines running now.
func IgnoreCurrent() Option {
	o := Option{ids: map[uint64]bool{}}
	for _, g := range goroutines() {
		o.ids[g.id] = true
	}
	return o
}

// VerifyNone reports an error on t, with their stacks, if goroutines other than the ignored
// ones are still running after Timeout.
func VerifyNone(t testing.TB, opts ...Option) {
	t.Helper()
	if leaked := wait(opts); len(leaked) > 0 {
		t.Errorf("%s", report(leaked))
	}
}

// VerifyTestMain is for a TestMain: it runs the tests and, if they passed, fails the test
// binary when goroutines are still running after Timeout.
func VerifyTestMain(m *testing.M, opts ...Option) {
	code := m.Run()
	if code == 0 {
		if leaked := wait(opts); len(leaked) > 0 {
			fmt.Fprintln(os.Stderr, report(leaked))
			code = 1
		}
	}
	os.Exit(code)
}

// wait returns the stacks of the goroutines, other than the caller and the ignored ones, still
// running after Timeout; nil as soon as there are none.
func wait(opts []Option) []string {
	self := currentID()
	deadline := time.Now().Add(Timeout)
	delay := time.Millisecond
	for {
		var leaked []string
		for _, g := range goroutines() {
			if g.id == self || ignored(g, opts) {
				continue
			}
			leaked = append(leaked, g.stack)
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(delay)
		delay = min(2*delay, 100*time.Millisecond)
	}
}

func report(leaked []string) string {
	return fmt.Sprintf("leaktest: %d unexpected goroutines still running after %v:\n\n%s", len(leaked), Timeout, strings.Join(leaked, "\n\n"))
}

// goroutine is one goroutine of a runtime.Stack dump.
type goroutine struct {
	id    uint64
	state string // "chan receive", "select", ...
	first string // the function on top of the stack, without arguments
	stack string // the whole block, header included
}

func ignored(g goroutine, opts []Option) bool {
	for _, o := range opts {
		if o.ids[g.id] {
			return true
		}
	}
	switch g.first {
	case "testing.RunTests", "testing.(*T).Run", "testing.(*T).Parallel", "testing.runFuzzing", "testing.runFuzzTests":
		// The testing package's goroutines waiting for tests to end.
		return strings.HasPrefix(g.state, "chan receive")
	}
	return strings.Contains(g.stack, "os/signal.signal_recv") || strings.Contains(g.stack, "os/signal.loop")
}

// goroutines parses runtime.Stack(all).
func goroutines() []goroutine {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var gs []goroutine
	for _, block := range bytes.Split(buf, []byte("\n\n")) {
		if g, ok := parse(string(block)); ok {
			gs = append(gs, g)
		}
	}
	return gs
}

// parse reads a block that starts "goroutine 12 [chan receive, 2 minutes]:".
func parse(block string) (goroutine, bool) {
	header, rest, _ := strings.Cut(strings.TrimSpace(block), "\n")
	idText, state, ok := strings.Cut(strings.TrimPrefix(header, "goroutine "), " [")
	if !ok {
		return goroutine{}, false
	}
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil {
		return goroutine{}, false
	}
	state, _, _ = strings.Cut(strings.TrimSuffix(state, "]:"), ",")
	first, _, _ := strings.Cut(rest, "\n")
	if i := strings.LastIndexByte(first, '('); i > 0 {
		first = first[:i]
	}
	return goroutine{id: id, state: state, first: first, stack: block}, true
}

// currentID is the id of the calling goroutine.
func currentID() uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	g, _ := parse(string(buf) + "\n")
	return g.id
}
