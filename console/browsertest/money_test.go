package browsertest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAReviewerSearchesAndSeesWhatDiffersInABrowser drives the console in headless Chromium
// over orders reconciled by amount and currency (a typed pgstore with the order reference as a
// search column): the list shows each finding's fields that differ, amounts in their own
// decimals; the search box finds a finding by its PaymentIntent id and by its order reference;
// the finding's page shows its table; and a hostile search stays text.
func TestAReviewerSearchesAndSeesWhatDiffersInABrowser(t *testing.T) {
	b := newSession(t, "alice")
	w := newMoneyWorld(t)
	srv := httptest.NewServer(http.StripPrefix("/review", w.console))
	t.Cleanup(srv.Close)
	row := func(order int64) string { return fmt.Sprintf("#finding-%d", w.ids[order]) }
	if len(w.ids) != 3 || w.ids[2] != 0 {
		t.Fatalf("findings by order %v; want orders 1, 3 and 4", w.ids)
	}

	// 1. The list: every finding with its fields that differ.
	b.do("open the list", chromedp.Navigate(srv.URL+"/review/findings"), chromedp.WaitVisible(chromedp.CSS(row(1))), b.screenshot("list"))
	for _, r := range moneyRows {
		if r.kind == "" {
			continue
		}
		got := b.text(row(r.id) + " table.diffs")
		if want := "amount\t" + r.amount[0] + "\t" + r.amount[1]; !strings.Contains(got, want) {
			t.Errorf("order %d's diffs read %q, want the row %q", r.id, got, want)
		}
	}
	if got := b.text(row(3) + " table.diffs"); !strings.Contains(got, "currency\tUSD\tJPY") {
		t.Errorf("the currency mismatch's diffs read %q, want the currency row", got)
	}

	// 2. Search by the PaymentIntent's id: only that finding, and the page says what it searched.
	search := func(step, term string) {
		t.Helper()
		b.do(step,
			// The page being left is marked, so that the wait is for the next page's result,
			// not this one's.
			chromedp.SetAttributeValue(chromedp.CSS(`body`), "data-left", "yes"),
			chromedp.Clear(chromedp.CSS(`#f-q`)),
			chromedp.SendKeys(chromedp.CSS(`#f-q`), term),
			chromedp.Click(chromedp.CSS(`#f-submit`)),
			chromedp.WaitVisible(chromedp.CSS(`body:not([data-left]) #searched`)),
			b.screenshot(strings.ReplaceAll(step, " ", "-")))
		u, err := url.Parse(b.location())
		if err != nil || u.Query().Get("q") != term {
			t.Errorf("%s: the browser is at %s, not searching for %q", step, b.location(), term)
		}
		if got := b.text("#search-term"); got != term {
			t.Errorf("%s: the page says it searched for %q", step, got)
		}
	}
	listed := func(step string, want ...int64) {
		t.Helper()
		for _, r := range moneyRows {
			shown := w.ids[r.id] != 0 && b.present(row(r.id))
			if wanted := slices.Contains(want, r.id); shown != wanted {
				t.Errorf("%s: order %d listed %v, want %v", step, r.id, shown, wanted)
			}
		}
	}
	search("search by payment id", "pi_1YenShort")
	listed("search by payment id", 1)

	// 3. Search by the order reference, a column of the host's row.
	search("search by order reference", "ord-1004")
	listed("search by order reference", 4)
	if !b.eval(`document.querySelector("#f-q").value === "ord-1004"`) {
		t.Error("the search box does not keep the term")
	}

	// 4. Its page: the table of what differs, in dinars' three decimals.
	b.do("open the finding",
		chromedp.Click(chromedp.CSS(row(4)+" td:nth-child(2) a")),
		chromedp.WaitVisible(chromedp.CSS(`#diffs`)),
		b.screenshot("finding"))
	if got := b.text("#diffs"); !strings.Contains(got, "amount\tKWD 1.500\tKWD 1.250") {
		t.Errorf("the finding's diffs read %q", got)
	}

	// 5. From there, every finding of the same payment: a search by its id.
	b.do("every finding of the payment",
		chromedp.Click(chromedp.CSS(`#same-external`)),
		chromedp.WaitVisible(chromedp.CSS(`#searched`)),
		b.screenshot("same-payment"))
	if got := b.text("#search-term"); got != "pi_1DinarShort" {
		t.Errorf("the finding's link searched for %q, want its payment pi_1DinarShort", got)
	}
	listed("every finding of the payment", 4)

	// 6. An order in sync has no finding; a hostile term is shown as text, and runs nothing.
	search("search for an order in sync", "ord-1002")
	listed("search for an order in sync")
	if !b.present("#empty") {
		t.Error("an empty search result does not say so")
	}
	const hostile = `<script>document.title="pwned"</script><img src=x onerror="document.title='pwned'">`
	search("a hostile search", hostile)
	if b.eval(`document.title === "pwned" || document.querySelectorAll("main script, main img").length > 0`) {
		t.Error("the hostile search term became markup")
	}
}
