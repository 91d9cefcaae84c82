package stripemock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Version is the stripe-mock release the wire tests are written against.
const Version = "v0.203.0"

// Module is stripe-mock's module path.
const Module = "github.com/stripe/stripe-mock"

var (
	once    sync.Once
	url     string
	startup error
)

// URL returns the base URL of a stripe-mock server, starting one for the test binary's
// lifetime if needed. It fails the test, saying how to provide one, when none can be had.
func URL(t testing.TB) string {
	t.Helper()
	once.Do(func() { url, startup = start() })
	if startup != nil {
		t.Fatalf("stripemock: %v\nProvide stripe-mock with one of: STRIPE_MOCK_URL=http://127.0.0.1:12111 (a running server), "+
			"STRIPE_MOCK_BIN=/path/to/stripe-mock, or `go install %s@%s` so that it is on PATH or in $(go env GOPATH)/bin.", startup, Module, Version)
	}
	return url
}

func start() (string, error) {
	if u := os.Getenv("STRIPE_MOCK_URL"); u != "" {
		return strings.TrimRight(u, "/"), nil
	}
	bin, err := binary()
	if err != nil {
		return "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	l.Close()
	// Its HTTPS listener would take :12112 by default, which a second stripe-mock (another test
	// binary running in parallel) then cannot: give it a free port of its own.
	cmd := exec.Command(bin, "-http-addr", addr, "-https-addr", "127.0.0.1:")
	// One server serves every test of the binary; Stop (from TestMain) kills it, and on Linux
	// the kernel kills it too if the test binary dies first.
	dieWithParent(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	registerKill(cmd.Process)
	// It loads Stripe's whole OpenAPI spec first: seconds on an idle machine, much longer on a
	// loaded one.
	const patience = 90 * time.Second
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return "http://" + addr, nil
		}
		select {
		case err := <-exited:
			return "", fmt.Errorf("%s exited before listening on %s: %v: %s", bin, addr, err, bytes.TrimSpace(stderr.Bytes()))
		case <-time.After(50 * time.Millisecond):
		}
	}
	_ = cmd.Process.Kill()
	return "", fmt.Errorf("%s did not listen on %s within %v", bin, addr, patience)
}

// limitedWriter keeps the first n bytes written to it and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.n -= k
		_, _ = l.w.Write(p[:k])
	}
	return len(p), nil
}

// binary finds or installs the stripe-mock executable.
func binary() (string, error) {
	if b := os.Getenv("STRIPE_MOCK_BIN"); b != "" {
		return b, nil
	}
	if b, err := exec.LookPath("stripe-mock"); err == nil {
		return b, nil
	}
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(gopath))) {
			if b := filepath.Join(dir, "bin", "stripe-mock"); isExecutable(b) {
				return b, nil
			}
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "reconcile", "stripe-mock-"+Version)
	b := filepath.Join(dir, "stripe-mock")
	if isExecutable(b) {
		return b, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, "go", "install", Module+"@"+Version)
	install.Env = append(os.Environ(), "GOBIN="+dir)
	if out, err := install.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s@%s: %w\n%s", Module, Version, err, out)
	}
	if !isExecutable(b) {
		return "", errors.New("go install succeeded but " + b + " is missing")
	}
	return b, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

var (
	killMu sync.Mutex
	procs  []*os.Process
)

func registerKill(p *os.Process) {
	killMu.Lock()
	defer killMu.Unlock()
	procs = append(procs, p)
}

// Stop kills the servers this package started. Call it from TestMain after m.Run, so that no
// stripe-mock outlives the test binary.
func Stop() {
	killMu.Lock()
	defer killMu.Unlock()
	for _, p := range procs {
		_ = p.Kill()
	}
	procs = nil
}
