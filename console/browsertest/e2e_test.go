package browsertest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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

// TestAReviewerResolvesAFindingInABrowser drives the console in headless Chromium, served
// under a prefix on 127.0.0.1 over real PostgreSQL: open the list, filter it, open a finding,
// resolve it with a note, and see it gone from the open list and in the audit history.
// Screenshots of each step go to $CONSOLE_ARTIFACTS (default: a temporary directory).
func TestAReviewerResolvesAFindingInABrowser(t *testing.T) {
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

	w := newWorld(t)
	mux := http.NewServeMux()
	mux.Handle("/review/", http.StripPrefix("/review", w.console))
	srv := httptest.NewServer(mux) // on 127.0.0.1
	t.Cleanup(srv.Close)
	base := srv.URL + "/review/"

	// The test's own context bounds everything; the browser lives as long as allocCtx.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
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
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()

	shot := 0
	screenshot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			shot++
			path := filepath.Join(artifacts, fmt.Sprintf("%02d-%s.png", shot, name))
			t.Logf("screenshot %s", path)
			return os.WriteFile(path, png, 0o644)
		})
	}
	do := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			// A picture of where it stopped, if the browser still answers.
			_ = chromedp.Do(bctx, screenshot("failed-"+strings.ReplaceAll(step, " ", "-")))
			t.Fatalf("%s: %v", step, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	eval := func(expr string) bool {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}

	// Start the browser, and sign in the way a proxy in front of the console would: a header
	// on every request, the form posts included.
	do("start the browser", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
			Headers: network.Headers{"X-Test-User": "alice"}})
		return err
	}))

	missed, review, other := w.ids["1"], w.ids["3"], w.ids["4"]
	row := func(id int64) string { return fmt.Sprintf("#finding-%d", id) }

	// 1. The open list, from the overview's link.
	do("open the overview", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`#job-sweep`)), screenshot("overview"))
	if !strings.Contains(text("#job-sweep"), "OK") {
		t.Errorf("the overview does not show the sweep job OK: %q", text("#job-sweep"))
	}
	// The inline style applies: the policy's hash matches it.
	if !eval(`getComputedStyle(document.querySelector("header")).backgroundColor === "rgb(36, 41, 47)"`) {
		t.Error("the console's style did not apply in the browser (Content-Security-Policy hash?)")
	}
	do("open the list", chromedp.Click(chromedp.CSS(`main > p:last-child a`)), chromedp.WaitVisible(chromedp.CSS(row(missed))), screenshot("open-findings"))
	for _, id := range []int64{missed, review, other} {
		if !eval(fmt.Sprintf(`document.querySelector(%q) !== null`, row(id))) {
			t.Errorf("the open list lacks finding %d", id)
		}
	}

	// 2. Filter: the sweep job's findings that need review.
	do("filter",
		chromedp.SetValue(chromedp.CSS(`#f-job`), "sweep"),
		chromedp.SendKeys(chromedp.CSS(`#f-kind`), "paid_locally_not_externally"),
		chromedp.Click(chromedp.CSS(`#f-submit`)),
		chromedp.WaitNotPresent(chromedp.CSS(row(missed))),
		chromedp.WaitVisible(chromedp.CSS(row(review))),
		screenshot("filtered"))
	loc, err := chromedp.Run(bctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(loc, srv.URL+"/review/findings?") || !strings.Contains(loc, "kind=paid_locally_not_externally") || !strings.Contains(loc, "job=sweep") {
		t.Errorf("the filtered list is at %s", loc)
	}
	if got := text(row(review) + " td:nth-child(8)"); got != "pi_1TestCanceled03" {
		t.Errorf("the external object column shows %q", got)
	}
	if href := text(row(review)); !strings.Contains(href, "canceled") {
		t.Errorf("the row does not show the external state: %q", href)
	}

	// 3. Open the finding.
	do("open the finding",
		chromedp.Click(chromedp.CSS(row(review)+" td:first-child a")),
		chromedp.WaitVisible(chromedp.CSS(`#resolve`)),
		screenshot("finding"))
	if got := text("h1"); !strings.Contains(got, fmt.Sprint(review)) || !strings.Contains(got, "open") {
		t.Errorf("the finding's page is titled %q", got)
	}

	// 4. Resolve it with a note.
	const note = "Customer refunded by hand, ticket OPS-1234."
	do("resolve",
		chromedp.SetValue(chromedp.CSS(`#resolution`), "accepted"),
		chromedp.SendKeys(chromedp.CSS(`#resolve-note`), note),
		screenshot("resolving"),
		chromedp.Click(chromedp.CSS(`#resolve-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`#reopen`)),
		screenshot("resolved"))
	loc, err = chromedp.Run(bctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%s/review/findings/%d", srv.URL, review); loc != want {
		t.Errorf("after resolving, the browser is at %s, want %s", loc, want)
	}
	if got := text("#state"); got != "resolved" {
		t.Errorf("the finding's state reads %q", got)
	}
	history := text("#history")
	if !strings.Contains(history, "resolved") || !strings.Contains(history, "alice") || !strings.Contains(history, "accepted") || !strings.Contains(history, note) {
		t.Errorf("the audit history does not show alice's resolution:\n%s", history)
	}

	// 5. Back to the open list: it is gone, the other one is still there.
	do("back to the open list",
		chromedp.Click(chromedp.CSS(`#back`)),
		chromedp.WaitVisible(chromedp.CSS(row(other))),
		screenshot("open-findings-after"))
	if eval(fmt.Sprintf(`document.querySelector(%q) !== null`, row(review))) {
		t.Errorf("finding %d is still in the open list", review)
	}

	// And in the database, by alice.
	d := w.finding(t, review)
	if d.Open() || d.ResolvedBy != "alice" || d.Resolution != "accepted" || d.ResolutionNote != note {
		t.Fatalf("the finding as stored: %+v", d.Finding)
	}
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
