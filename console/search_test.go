package console_test

import (
	"html"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/console"
)

// searchStore holds the findings the search tests look for: payment pi_1Alpha (order
// ord_100) has three, one resolved; pi_1Beta (ord_200) one, in the refunds job; the job
// "other" is not the console's.
func searchStore() *memReviewer {
	at := time.Now().Add(-time.Hour)
	f := func(id int64, job, record, ext, kind string, resolved bool) reconcile.Finding {
		fd := reconcile.Finding{ID: id, Job: job, RecordID: record, ExternalID: ext, Kind: kind, Local: "paid", External: "succeeded", DetectedAt: at}
		if resolved {
			fd.ResolvedAt, fd.Resolution, fd.ResolvedBy = at, "fixed", "bob"
		}
		return fd
	}
	return &memReviewer{
		findings: []reconcile.Finding{
			f(1, "payments", "r-1", "pi_1Alpha", "amount_mismatch", false),
			f(2, "payments", "r-1", "pi_1Alpha", "missed_refund", false),
			f(3, "payments", "r-1", "pi_1Alpha", "dispute_lost", true),
			f(4, "refunds", "r-2", "pi_1Beta", "refund_failed", false),
			f(5, "payments", "r-3", "pi_1Gamma", "missed_success", false),
			f(6, "other", "r-1", "pi_1Alpha", "missed_refund", false),
		},
		columns: map[string][]string{"r-1": {"ord_100"}, "r-2": {"ord_200"}, "r-3": {"ord_300"}},
	}
}

func newSearchConsole(t *testing.T, store *memReviewer, pageSize int) *console.Console {
	t.Helper()
	c, err := console.New(console.Config{Store: store, Authenticate: headerAuth, Jobs: []string{"payments", "refunds"}, PageSize: pageSize, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTheSearchBoxFindsByExternalIDRecordIDOrAHostColumn(t *testing.T) {
	t.Parallel()
	store := searchStore()
	c := newSearchConsole(t, store, 0)
	tests := []struct {
		name, query string
		search      string // what the store was asked to search for
		want        []string
	}{
		{"no search lists every open finding", "", "", []string{"1", "2", "4", "5"}},
		{"an empty search is no search", "q=", "", []string{"1", "2", "4", "5"}},
		{"a search of spaces is no search", "q=++", "", []string{"1", "2", "4", "5"}},
		{"an external id", "q=pi_1Alpha", "pi_1Alpha", []string{"1", "2"}},
		{"a record id", "q=r-2", "r-2", []string{"4"}},
		{"an order id in the row", "q=ord_100", "ord_100", []string{"1", "2"}},
		{"an id pasted with spaces around it", "q=%20ord_300%09", "ord_300", []string{"5"}},
		{"a part of an id matches nothing", "q=pi_1Alph", "pi_1Alph", nil},
		{"a search and a kind", "q=ord_100&kind=missed_refund", "ord_100", []string{"2"}},
		{"a search and a job", "q=pi_1Beta&job=payments", "pi_1Beta", nil},
		{"a search of every state", "q=pi_1Alpha&state=all", "pi_1Alpha", []string{"1", "2", "3"}},
		{"a search of resolved findings", "q=ord_100&state=resolved", "ord_100", []string{"3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := serve(c, http.MethodGet, "/findings?"+tt.query, "alice")
			body := r.Body.String()
			if r.Code != http.StatusOK {
				t.Fatalf("GET /findings?%s = %d:\n%s", tt.query, r.Code, body)
			}
			if got := findingIDs(body); !slices.Equal(got, tt.want) {
				t.Errorf("GET /findings?%s listed %v, want %v", tt.query, got, tt.want)
			}
			if got := store.lastQuery(); got.Search != tt.search || !slices.Equal(got.Jobs, []string{"payments", "refunds"}) && got.Job == "" {
				t.Errorf("the store was asked %+v; want Search %q within the console's jobs", got, tt.search)
			}
			if tt.search == "" {
				if strings.Contains(body, `id="searched"`) {
					t.Errorf("no search, yet the page says what was searched for:\n%s", body)
				}
				return
			}
			for _, want := range []string{
				`id="f-q" value="` + tt.search + `"`,
				`Searched for <strong id="search-term">` + tt.search + `</strong>`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("the page lacks %q:\n%s", want, body)
				}
			}
			if len(tt.want) == 0 && !strings.Contains(body, "No findings match.") {
				t.Error("an empty result does not say so")
			}
		})
	}
}

func TestASearchSurvivesPaginationAndTheOtherFilters(t *testing.T) {
	t.Parallel()
	store := searchStore()
	at := time.Now().Add(-time.Hour)
	for id := int64(10); id < 15; id++ { // five more findings of order ord_100, over two pages and a half
		store.findings = append(store.findings, reconcile.Finding{ID: id, Job: "payments", RecordID: "r-1", ExternalID: "pi_1Alpha", Kind: "dispute_updated", DetectedAt: at})
	}
	c := newSearchConsole(t, store, 2)
	path := "/findings?q=ord_100&job=payments&kind=dispute_updated&state=all"
	var seen []string
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatalf("more pages than findings: %v", seen)
		}
		r := serve(c, http.MethodGet, path, "alice")
		body := r.Body.String()
		if r.Code != http.StatusOK {
			t.Fatalf("GET %s = %d:\n%s", path, r.Code, body)
		}
		seen = append(seen, findingIDs(body)...)
		if !strings.Contains(body, `id="f-q" value="ord_100"`) || !strings.Contains(body, `<strong id="search-term">ord_100</strong>`) {
			t.Errorf("page %s does not show the search", path)
		}
		// Clearing the search keeps the other filters.
		if got := unescape(hrefOf(body, `id="clear-search"`)); got != "./findings?job=payments&kind=dispute_updated&state=all" {
			t.Errorf("page %s: the clear-search link is %q", path, got)
		}
		if pages > 0 {
			if first := unescape(hrefOf(body, `id="first"`)); first != "./findings?job=payments&kind=dispute_updated&q=ord_100&state=all" {
				t.Errorf("page %s: the first-page link is %q", path, first)
			}
		}
		next := unescape(hrefOf(body, `id="next"`))
		if next == "" {
			break
		}
		for _, want := range []string{"q=ord_100", "job=payments", "kind=dispute_updated", "state=all"} {
			if !strings.Contains(next, want) {
				t.Fatalf("page %s: the next link %q drops %s", path, next, want)
			}
		}
		path = "/" + strings.TrimPrefix(next, "./")
	}
	if want := []string{"10", "11", "12", "13", "14"}; !slices.Equal(seen, want) {
		t.Fatalf("the pages listed %v, want %v once each", seen, want)
	}
}

// unescape reads an attribute's value as the browser does.
func unescape(s string) string { return html.UnescapeString(s) }

func TestAFindingLinksToEveryFindingOfItsExternalObject(t *testing.T) {
	t.Parallel()
	c := newSearchConsole(t, searchStore(), 0)
	r := serve(c, http.MethodGet, "/findings/2", "alice")
	link := unescape(hrefOf(r.Body.String(), `id="same-external"`))
	if r.Code != http.StatusOK || link != "../findings?q=pi_1Alpha&state=all" {
		t.Fatalf("GET /findings/2 = %d with the link %q to pi_1Alpha's findings", r.Code, link)
	}
	r = serve(c, http.MethodGet, "/"+strings.TrimPrefix(link, "../"), "alice")
	if got := findingIDs(r.Body.String()); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Errorf("the link lists %v, want pi_1Alpha's findings 1, 2 and 3 (not job other's 6)", got)
	}
}

func TestABadSearchIsA400ThatDoesNotShowIt(t *testing.T) {
	t.Parallel()
	store := &countingStore{}
	c, err := console.New(console.Config{Store: store, Authenticate: headerAuth, Jobs: []string{"payments"}, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		strings.Repeat("q", 201),
		"pi_1%00", "ord%0A1", "%1B[2J", "%FF%FE",
		url.QueryEscape(leakedKey), url.QueryEscape("order " + leakedKey), "rk_live_51FakeRestrictedKey0123456789",
	} {
		r := serve(c, http.MethodGet, "/findings?q="+q, "alice")
		body := r.Body.String()
		if r.Code != http.StatusBadRequest {
			t.Errorf("GET /findings?q=%s = %d, want 400", q, r.Code)
		}
		if strings.Contains(body, "FakeKey") || strings.Contains(body, "FakeRestricted") || strings.Contains(body, "qqqqq") {
			t.Errorf("GET /findings?q=%s shows the search:\n%s", q, body)
		}
	}
	// The other filters are shown and linked the same way: no key among them either.
	for _, name := range []string{"record", "kind", "job"} {
		r := serve(c, http.MethodGet, "/findings?"+name+"="+url.QueryEscape(leakedKey), "alice")
		if r.Code != http.StatusBadRequest || strings.Contains(r.Body.String(), "FakeKey") {
			t.Errorf("GET /findings?%s=<a key> = %d, want 400 without the key:\n%s", name, r.Code, r.Body.String())
		}
	}
	// At the limit, it is searched for.
	if r := serve(c, http.MethodGet, "/findings?q="+strings.Repeat("q", 200), "alice"); r.Code != http.StatusOK {
		t.Errorf("a search of 200 bytes = %d, want 200", r.Code)
	}
	if n := store.calls.Load(); n != 1 {
		t.Errorf("the store was called %d times, want once: bad searches never reach it", n)
	}
}

func TestAHostileSearchIsRenderedHarmlessly(t *testing.T) {
	t.Parallel()
	c := newSearchConsole(t, searchStore(), 1)
	const hostile = `"><script>alert('q')</script><img src=x onerror=alert(1)>`
	r := serve(c, http.MethodGet, "/findings?state=all&q="+url.QueryEscape(hostile), "alice")
	body := r.Body.String()
	if r.Code != http.StatusOK {
		t.Fatalf("GET = %d:\n%s", r.Code, body)
	}
	for _, raw := range []string{"<script", "<img"} {
		if strings.Contains(body, raw) {
			t.Errorf("the page holds the raw %q:\n%s", raw, body)
		}
	}
	escaped := `&#34;&gt;&lt;script&gt;alert(&#39;q&#39;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;`
	for _, want := range []string{`id="f-q" value="` + escaped + `"`, `<strong id="search-term">` + escaped + `</strong>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}
	// And in a link, as a query value.
	c = newSearchConsole(t, &memReviewer{findings: []reconcile.Finding{
		{ID: 1, Job: "payments", RecordID: hostile, DetectedAt: time.Now()},
		{ID: 2, Job: "payments", RecordID: hostile, DetectedAt: time.Now()},
	}}, 1)
	body = serve(c, http.MethodGet, "/findings?q="+url.QueryEscape(hostile), "alice").Body.String()
	next := unescape(hrefOf(body, `id="next"`))
	u, err := url.Parse(next)
	if err != nil || u.Query().Get("q") != hostile || u.Query().Get("after") != strconv.Itoa(1) {
		t.Errorf("the next link %q does not carry the search as a value: %v", next, err)
	}
	if strings.Contains(body, "<script") {
		t.Errorf("the page holds a raw script:\n%s", body)
	}
}
