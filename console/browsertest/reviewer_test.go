package browsertest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAFinanceReviewerWorksThroughTheQueueInABrowser drives the pages a finance reviewer works
// in, in headless Chromium under a prefix: from the overview's count to the list behind it,
// the kind picked from a list that says what it means, the total, the list turned newest
// first by its column, two findings selected and resolved at once (refused without a note,
// since their kind involves money), the export link, and the times shown in the zone the
// reviewer chose.
func TestAFinanceReviewerWorksThroughTheQueueInABrowser(t *testing.T) {
	b := newSession(t, "alice")
	w := newWorld(t)
	srv := httptest.NewServer(http.StripPrefix("/review", w.console))
	t.Cleanup(srv.Close)
	row := func(record string) string { return fmt.Sprintf("#finding-%d", w.ids[record]) }
	// leave marks the page being left, so that a wait is for the next page, not this one.
	leave := chromedp.SetAttributeValue(chromedp.CSS(`body`), "data-left", "yes")
	next := func(sel string) chromedp.Action[chromedp.Void] {
		return chromedp.WaitVisible(chromedp.CSS(`body:not([data-left]) ` + sel))
	}

	// 1. The overview's count of open findings leads to them.
	b.do("open the overview", chromedp.Navigate(srv.URL+"/review/"), chromedp.WaitVisible(chromedp.CSS(`#job-sweep .open-total`)), b.screenshot("overview"))
	if got := b.text("#job-sweep .open-total"); got != "4" {
		t.Errorf("the overview counts %q open findings, want 4", got)
	}
	b.do("follow the count", leave, chromedp.Click(chromedp.CSS(`#job-sweep .open-total`)), next(`#findings`), b.screenshot("list"))
	if got := b.text("#total"); got != "4" {
		t.Errorf("the list's total reads %q, want 4", got)
	}

	// 2. The kind from the pick list, which says what each kind means.
	if !b.eval(`[...document.querySelectorAll("#f-kind option")].some(o => o.value === "paid_locally_not_externally" && o.textContent.includes("Stripe has no successful payment"))`) {
		t.Error("the kind pick list does not say what paid_locally_not_externally means")
	}
	b.do("pick a kind", leave,
		chromedp.SetValue(chromedp.CSS(`#f-kind`), "paid_locally_not_externally"),
		chromedp.Click(chromedp.CSS(`#f-submit`)),
		next(`#kind-meaning`), b.screenshot("kind"))
	if got := b.text("#kind-meaning"); !strings.Contains(got, "The row is paid but Stripe has no successful payment.") {
		t.Errorf("the list says the kind means %q", got)
	}
	if got := b.text("#total"); got != "2" || b.present(row("1")) || !b.present(row("3")) || !b.present(row("4")) {
		t.Errorf("the kind's list has a total of %q; want findings 3 and 4 only", got)
	}

	// 3. Newest first, by the detected column.
	b.do("sort newest first", leave, chromedp.Click(chromedp.CSS(`#sort-detected`)), next(`#findings`), b.screenshot("newest-first"))
	if !b.eval(fmt.Sprintf(`document.querySelector("#findings tbody tr").id === "finding-%d"`, w.ids["4"])) {
		t.Error("newest first, finding 4 is not the first row")
	}
	if !strings.Contains(b.location(), "sort=-detected") || !strings.Contains(b.location(), "kind=paid_locally_not_externally") {
		t.Errorf("the sorted list is at %s, without its filter or order", b.location())
	}
	if href := b.str(`document.querySelector("#export").href`); !strings.Contains(href, "/review/findings.csv?") || !strings.Contains(href, "kind=paid_locally_not_externally") {
		t.Errorf("the export link %q is not of the list's filter", href)
	}

	// 4. Both selected and resolved at once: refused without a note, since money is involved.
	selectBoth := []chromedp.Action[chromedp.Void]{
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#select-%d`, w.ids["3"]))),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#select-%d`, w.ids["4"]))),
		chromedp.SetValue(chromedp.CSS(`#bulk-resolution`), "accepted"),
	}
	listURL := b.location()
	b.do("resolve both without a note", append(selectBoth, leave, chromedp.Click(chromedp.CSS(`#bulk-submit`)), next(`#message`), b.screenshot("note-required"))...)
	if got := b.text("#message"); !strings.Contains(got, "A note is required") || !strings.Contains(got, "Nothing was changed") {
		t.Errorf("resolving money findings without a note says %q", got)
	}
	if !w.finding(t, w.ids["3"]).Open() || !w.finding(t, w.ids["4"]).Open() {
		t.Fatal("a refused bulk resolution changed a finding")
	}
	const note = "Both refunded by hand, ticket FIN-77."
	b.do("back to the list", chromedp.Navigate(listURL), next(`#findings`))
	b.do("resolve both with a note", append(selectBoth,
		chromedp.SendKeys(chromedp.CSS(`#bulk-note`), note), leave,
		chromedp.Click(chromedp.CSS(`#bulk-submit`)), next(`#results`), b.screenshot("resolved"))...)
	if got := b.text("h1"); got != "Resolved 2 of 2 findings" {
		t.Errorf("the result page is titled %q", got)
	}
	for _, r := range []string{"3", "4"} {
		d := w.finding(t, w.ids[r])
		if d.Open() || d.ResolvedBy != "alice" || d.ResolutionNote != note {
			t.Errorf("finding of record %s as stored: %+v", r, d.Finding)
		}
	}

	// 5. The resolved ones, with when, in the zone the reviewer chooses.
	b.do("list the resolved", leave, chromedp.Navigate(srv.URL+"/review/findings?state=resolved"), next(`#findings`))
	if got := b.text(row("3") + " .resolved-at"); !strings.HasSuffix(got, " UTC") {
		t.Errorf("the resolved-at column reads %q, want a time in UTC", got)
	}
	b.do("choose Tokyo", leave,
		chromedp.SetValue(chromedp.CSS(`#zone`), "Asia/Tokyo"),
		chromedp.Click(chromedp.CSS(`#zone-submit`)),
		next(`#findings`), b.screenshot("tokyo"))
	if got := b.text("#zone-name"); got != "Asia/Tokyo" {
		t.Errorf("the page says times are in %q", got)
	}
	if !strings.Contains(b.location(), "/review/findings?state=resolved") {
		t.Errorf("after choosing a zone the browser is at %s, not back on its page", b.location())
	}
	for _, sel := range []string{row("3") + " .resolved-at", row("3") + " .detected"} {
		if got := b.text(sel); !strings.HasSuffix(got, " JST") {
			t.Errorf("%s reads %q, want a time in Tokyo", sel, got)
		}
	}
	// The finding's history: who detected it (the job), who resolved it, in Tokyo time.
	b.do("open the finding", leave, chromedp.Click(chromedp.CSS(row("3")+" td:nth-child(2) a")), next(`#history`), b.screenshot("history"))
	history := b.text("#history")
	for _, want := range []string{"job sweep (detection)", "alice", note, "JST"} {
		if !strings.Contains(history, want) {
			t.Errorf("the history lacks %q:\n%s", want, history)
		}
	}
}

// str evaluates a JavaScript expression that gives a string.
func (s *session) str(expr string) string {
	s.t.Helper()
	v, err := chromedp.Run(s.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		s.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}
