package browsertest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAReviewerResolvesAFindingInABrowser drives the console in headless Chromium, served
// under a prefix on 127.0.0.1 over real PostgreSQL: open the list, filter it, open a finding,
// resolve it with a note, and see it gone from the open list and in the audit history.
// Screenshots of each step go to $CONSOLE_ARTIFACTS (default: a temporary directory).
func TestAReviewerResolvesAFindingInABrowser(t *testing.T) {
	b := newSession(t, "alice")
	w := newWorld(t)
	mux := http.NewServeMux()
	mux.Handle("/review/", http.StripPrefix("/review", w.console))
	srv := httptest.NewServer(mux) // on 127.0.0.1
	t.Cleanup(srv.Close)
	base := srv.URL + "/review/"

	missed, review, other := w.ids["1"], w.ids["3"], w.ids["4"]
	row := func(id int64) string { return fmt.Sprintf("#finding-%d", id) }

	// 1. The open list, from the overview's link.
	b.do("open the overview", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`#job-sweep`)), b.screenshot("overview"))
	if !strings.Contains(b.text("#job-sweep"), "OK") {
		t.Errorf("the overview does not show the sweep job OK: %q", b.text("#job-sweep"))
	}
	// The inline style applies: the policy's hash matches it.
	if !b.eval(`getComputedStyle(document.querySelector("header")).backgroundColor === "rgb(36, 41, 47)"`) {
		t.Error("the console's style did not apply in the browser (Content-Security-Policy hash?)")
	}
	b.do("open the list", chromedp.Click(chromedp.CSS(`main > p:last-child a`)), chromedp.WaitVisible(chromedp.CSS(row(missed))), b.screenshot("open-findings"))
	for _, id := range []int64{missed, review, other} {
		if !b.present(row(id)) {
			t.Errorf("the open list lacks finding %d", id)
		}
	}

	// 2. Filter: the sweep job's findings that need review.
	b.do("filter",
		chromedp.SetValue(chromedp.CSS(`#f-job`), "sweep"),
		chromedp.SetValue(chromedp.CSS(`#f-kind`), "paid_locally_not_externally"),
		chromedp.Click(chromedp.CSS(`#f-submit`)),
		chromedp.WaitNotPresent(chromedp.CSS(row(missed))),
		chromedp.WaitVisible(chromedp.CSS(row(review))),
		b.screenshot("filtered"))
	if loc := b.location(); !strings.HasPrefix(loc, srv.URL+"/review/findings?") || !strings.Contains(loc, "kind=paid_locally_not_externally") || !strings.Contains(loc, "job=sweep") {
		t.Errorf("the filtered list is at %s", loc)
	}
	if got := b.text(row(review) + " td:nth-child(10)"); got != "pi_1TestCanceled03" {
		t.Errorf("the external object column shows %q", got)
	}
	if href := b.text(row(review)); !strings.Contains(href, "canceled") {
		t.Errorf("the row does not show the external state: %q", href)
	}

	// 3. Open the finding.
	b.do("open the finding",
		chromedp.Click(chromedp.CSS(row(review)+" td:nth-child(2) a")),
		chromedp.WaitVisible(chromedp.CSS(`#resolve`)),
		b.screenshot("finding"))
	if got := b.text("h1"); !strings.Contains(got, fmt.Sprint(review)) || !strings.Contains(got, "open") {
		t.Errorf("the finding's page is titled %q", got)
	}

	// 4. Resolve it with a note.
	const note = "Customer refunded by hand, ticket OPS-1234."
	b.do("resolve",
		chromedp.SetValue(chromedp.CSS(`#resolution`), "accepted"),
		chromedp.SendKeys(chromedp.CSS(`#resolve-note`), note),
		b.screenshot("resolving"),
		chromedp.Click(chromedp.CSS(`#resolve-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`#reopen`)),
		b.screenshot("resolved"))
	if loc, want := b.location(), fmt.Sprintf("%s/review/findings/%d", srv.URL, review); loc != want {
		t.Errorf("after resolving, the browser is at %s, want %s", loc, want)
	}
	if got := b.text("#state"); got != "resolved" {
		t.Errorf("the finding's state reads %q", got)
	}
	history := b.text("#history")
	if !strings.Contains(history, "resolved") || !strings.Contains(history, "alice") || !strings.Contains(history, "accepted") || !strings.Contains(history, note) {
		t.Errorf("the audit history does not show alice's resolution:\n%s", history)
	}

	// 5. Back to the open list: it is gone, the other one is still there.
	b.do("back to the open list",
		chromedp.Click(chromedp.CSS(`#back`)),
		chromedp.WaitVisible(chromedp.CSS(row(other))),
		b.screenshot("open-findings-after"))
	if b.present(row(review)) {
		t.Errorf("finding %d is still in the open list", review)
	}

	// And in the database, by alice.
	d := w.finding(t, review)
	if d.Open() || d.ResolvedBy != "alice" || d.Resolution != "accepted" || d.ResolutionNote != note {
		t.Fatalf("the finding as stored: %+v", d.Finding)
	}
}
