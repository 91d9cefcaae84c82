package browsertest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// browserLocations are the names and paths chromedp tries for goos, in its order (chromedp's
// execLocations in allocate.go, v0.23.0). chromedp's own lookup is not used as is because,
// finding nothing, it falls back to "google-chrome" and the test would fail with a bare
// "executable file not found" rather than saying how to install a browser.
func browserLocations(goos string) []string {
	switch goos {
	case "darwin":
		return []string{
			"/Applications/Chromium.app/Contents/MacOS/Chromium",
			"/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
		}
	case "windows":
		return []string{
			"chrome",
			"chrome.exe", // in case PATHEXT is misconfigured
			`C:\Program Files (x86)\Google\Chrome\Application\chrome.exe`,
			`C:\Program Files\Google\Chrome\Application\chrome.exe`,
			filepath.Join(os.Getenv("USERPROFILE"), `AppData\Local\Google\Chrome\Application\chrome.exe`),
			filepath.Join(os.Getenv("USERPROFILE"), `AppData\Local\Chromium\Application\chrome.exe`),
			"msedge",
			"msedge.exe",
			`C:\Program Files (x86)\Microsoft\Edge\Application\msedge.exe`,
			`C:\Program Files\Microsoft\Edge\Application\msedge.exe`,
		}
	default:
		return []string{
			"headless_shell",
			"headless-shell",
			"chromium",
			"chromium-browser",
			"google-chrome",
			"google-chrome-stable",
			"google-chrome-beta",
			"google-chrome-unstable",
			"/usr/bin/google-chrome",
			"/usr/local/bin/chrome",
			"/snap/bin/chromium",
			"chrome",
		}
	}
}

// findBrowser returns the first of browserLocations that exec.LookPath finds, or fails the
// test (it is not skipped) saying how to install one.
func findBrowser(t *testing.T) string {
	t.Helper()
	locations := browserLocations(runtime.GOOS)
	for _, loc := range locations {
		if p, err := exec.LookPath(loc); err == nil {
			return p
		}
	}
	t.Fatalf("the browser test needs Chromium or Google Chrome, and none was found (looked for: %s).\n"+
		"Install one, for example:\n"+
		"  Debian/Ubuntu (as root): apt-get install -y chromium\n"+
		"  Fedora: dnf install chromium\n"+
		"  macOS: brew install --cask chromium (or Google Chrome in /Applications)\n"+
		"(.ci/run installs Debian's chromium when it is missing.)", strings.Join(locations, ", "))
	return ""
}

// session is a headless browser signed in as one reviewer, with the helpers the tests drive it
// by. Every step that fails leaves a screenshot of where it stopped.
type session struct {
	t         *testing.T
	ctx       context.Context
	artifacts string
	shots     int
}

// newSession starts the browser for t, signed in as actor the way a proxy in front of the
// console would: a header on every request, the form posts included. Screenshots go to
// $CONSOLE_ARTIFACTS (default: a temporary directory), named after the test.
func newSession(t *testing.T, actor string) *session {
	t.Helper()
	browser := findBrowser(t)
	t.Logf("browser: %s", browser)
	artifacts := os.Getenv("CONSOLE_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots are written to %s", artifacts)

	// The test's own context bounds everything; the browser lives as long as allocCtx.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(browser),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profileDir(t)),
		chromedp.WindowSize(1280, 900),
	)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelBrowser)
	// Started on bctx itself, not under a step's timeout: the browser lives as long as the
	// context of its first action.
	if err := chromedp.Do(bctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
			Headers: network.Headers{"X-Test-User": actor}})
		return err
	})); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	return &session{t: t, ctx: bctx, artifacts: artifacts}
}

// screenshot is an action that saves the page as the next numbered picture.
func (s *session) screenshot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		png, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return err
		}
		s.shots++
		path := filepath.Join(s.artifacts, fmt.Sprintf("%s-%02d-%s.png", s.t.Name(), s.shots, name))
		s.t.Logf("screenshot %s", path)
		return os.WriteFile(path, png, 0o644)
	})
}

// stepTimeout bounds one step, so that a page that never shows what a step waits for fails
// the test soon, naming the step.
const stepTimeout = 30 * time.Second

// do runs a step's actions, or fails the test.
func (s *session) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		// A picture of where it stopped, if the browser still answers.
		_ = chromedp.Do(s.ctx, s.screenshot("failed-"+strings.ReplaceAll(step, " ", "-")))
		s.t.Fatalf("%s: %v", step, err)
	}
}

// text is the visible text of the first element sel selects.
func (s *session) text(sel string) string {
	s.t.Helper()
	v, err := chromedp.Run(s.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		s.t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

// eval evaluates a JavaScript expression that gives a boolean.
func (s *session) eval(expr string) bool {
	s.t.Helper()
	v, err := chromedp.Run(s.ctx, chromedp.Evaluate[bool](expr))
	if err != nil {
		s.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// location is the page's URL.
func (s *session) location() string {
	s.t.Helper()
	loc, err := chromedp.Run(s.ctx, chromedp.Location())
	if err != nil {
		s.t.Fatal(err)
	}
	return loc
}

// present reports whether sel selects an element.
func (s *session) present(sel string) bool {
	s.t.Helper()
	return s.eval(fmt.Sprintf(`document.querySelector(%q) !== null`, sel))
}

// profileDir is a temporary user-data-dir for the browser. It is removed with retries rather
// than by t.TempDir: Chromium's helper processes may still write there for a moment after
// the browser stops, and a leftover directory is no reason to fail the test.
func profileDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "console-e2e-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if err := os.RemoveAll(dir); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("could not remove the browser profile %s", dir)
	})
	return dir
}
