package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/console"
)

func TestTheOverviewJudgesEachJobAndCountsItsOpenFindingsByKind(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, func(c *console.Config) {
		// "sweep" ran a full cycle; "idle" never ran; "lost" has no store.
		c.Jobs = []string{"sweep", "idle", "lost"}
	})
	body := w.get(t, "/", "alice")
	sweep, idle, lost := section(t, body, "sweep"), section(t, body, "idle"), section(t, body, "lost")
	for _, want := range []string{
		`<span class="ok">OK</span>`,
		`<dt>Last completed cycle</dt><dd>20`, // a time, not "never"
		`<dt>Unverifiable</dt><dd>0% (0 of 2 rows of the last batch)</dd>`,
		`<a href="./findings?job=sweep&amp;kind=missed_success">missed_success</a></td><td><a href="./findings?job=sweep&amp;kind=missed_success">2</a></td>`,
		`<a href="./findings?job=sweep&amp;kind=paid_locally_not_externally">paid_locally_not_externally</a></td><td><a href="./findings?job=sweep&amp;kind=paid_locally_not_externally">2</a></td>`,
		// The total of open findings links to them, and so do the stale ones.
		`<dt>Open findings</dt><dd><a href="./findings?job=sweep" class="open-total">4</a></dd>`,
		`<a href="./findings?age=24h&amp;job=sweep" class="stale">0</a>`,
	} {
		if !strings.Contains(sweep, want) {
			t.Errorf("the sweep job's overview lacks %q:\n%s", want, sweep)
		}
	}
	for _, want := range []string{`<span class="bad">FAILING</span>`, "cycle_age: the job has never run a batch", "<dd>never</dd>"} {
		if !strings.Contains(idle, want) {
			t.Errorf("the idle job's overview lacks %q:\n%s", want, idle)
		}
	}
	if !strings.Contains(lost, "STATUS UNAVAILABLE") || strings.Contains(lost, ">OK<") {
		t.Errorf("a job whose status cannot be read is not shown as unavailable:\n%s", lost)
	}
	if strings.Contains(body, "no store is configured") {
		t.Error("the store's error text is on the page")
	}

	// A resolution through the console shows on the overview at once, whatever the cache.
	w2 := newWorldTTL(t, false, 0, nil)
	w2.get(t, "/", "alice") // kept now, for DefaultMonitorTTL
	id := w2.ids["1"]
	r := w2.do(t, http.MethodPost, fmt.Sprintf("/findings/%d/resolve", id), "alice",
		url.Values{"csrf_token": {w2.token(t, id, "alice")}, "resolution": {"fixed"}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("resolve = %d:\n%s", r.status, r.body)
	}
	if got := section(t, w2.get(t, "/", "alice"), "sweep"); !strings.Contains(got, `kind=missed_success">1</a></td>`) {
		t.Errorf("after a resolution the overview still shows the cached count:\n%s", got)
	}
}

// section returns the overview's section about job.
func section(t *testing.T, body, job string) string {
	t.Helper()
	start := strings.Index(body, `<section class="job" id="job-`+job+`">`)
	if start < 0 {
		t.Fatalf("the overview has no section for job %s:\n%s", job, body)
	}
	end := strings.Index(body[start:], "</section>")
	return body[start : start+end]
}

func TestTheListShowsOpenFindingsWithBothStatesAndAStripeLink(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	body := w.get(t, "/findings", "alice")
	if got, want := findingIDs(body), w.idsOf("1", "2", "3", "4"); !slices.Equal(got, want) {
		t.Fatalf("open findings listed %v, want %v", got, want)
	}
	row := rowOf(t, body, w.ids["3"])
	for _, want := range []string{
		fmt.Sprintf(`<a href="./findings/%d">#%d</a>`, w.ids["3"], w.ids["3"]),
		"<td><span>paid_locally_not_externally</span></td>",
		`<td class="text">paid</td>`, `<td class="text">canceled</td>`,
		`<td class="age">`, `<td class="resolved-at"><span class="muted">—</span></td>`,
		`<a href="https://dashboard.stripe.com/payments/pi_1TestCanceled03" rel="noopener noreferrer" target="_blank">pi_1TestCanceled03</a>`,
		"<td>open</td>",
	} {
		if !strings.Contains(row, want) {
			t.Errorf("the row of finding %d lacks %q:\n%s", w.ids["3"], want, row)
		}
	}
}

// idsOf returns the finding ids of records, as strings.
func (w *world) idsOf(records ...string) []string {
	var ids []string
	for _, r := range records {
		ids = append(ids, strconv.FormatInt(w.ids[r], 10))
	}
	return ids
}

// rowOf returns the list's row of a finding, with the rows of the tables nested in it.
func rowOf(t *testing.T, body string, id int64) string {
	t.Helper()
	start := strings.Index(body, fmt.Sprintf(`<tr id="finding-%d">`, id))
	if start < 0 {
		t.Fatalf("the list has no row for finding %d:\n%s", id, body)
	}
	depth := 0
	for i := start; i < len(body); i++ {
		switch {
		case strings.HasPrefix(body[i:], "<tr"):
			depth++
		case strings.HasPrefix(body[i:], "</tr>"):
			if depth--; depth == 0 {
				return body[start:i]
			}
		}
	}
	t.Fatalf("the row of finding %d does not end:\n%s", id, body[start:])
	return ""
}

func TestTheListFiltersByJobKindRecordSearchStateAndAge(t *testing.T) {
	t.Parallel()
	w := newWorld(t, true, nil)
	if err := w.store.ResolveFinding(context.Background(), w.ids["2"], reconcile.Resolution{As: "fixed", By: "bob"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.pool.Exec(context.Background(), `UPDATE reconcile_findings SET detected_at = now() - interval '2 days' WHERE id = $1`, w.ids["4"]); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, query string
		want        []string
	}{
		{"no filter lists every open finding", "", w.idsOf("1", "3", "4", hostileID)},
		{"a job", "job=sweep", w.idsOf("1", "3", "4")},
		{"another job", "job=hostile", w.idsOf(hostileID)},
		{"a kind", "kind=missed_success", w.idsOf("1")},
		{"a kind nobody found", "kind=nothing", nil},
		{"a job and a kind", "job=sweep&kind=paid_locally_not_externally", w.idsOf("3", "4")},
		{"a record", "record=3", w.idsOf("3")},
		{"resolved findings", "state=resolved", w.idsOf("2")},
		{"all findings", "state=all&job=sweep", w.idsOf("1", "2", "3", "4")},
		{"findings older than a day", "age=24h", w.idsOf("4")},
		{"any age, spelled out", "age=", w.idsOf("1", "3", "4", hostileID)},
		{"a search by external id", "q=pi_1TestCanceled03", w.idsOf("3")},
		{"a search by record id", "q=4", w.idsOf("4")},
		{"a search by a host column", "q=ord-1", w.idsOf("1")},
		{"a search by a host column, every state", "q=ord-2&state=all", w.idsOf("2")},
		{"a search for part of an id", "q=pi_1TestCanceled", nil},
		{"a search and a kind", "q=ord-1&kind=paid_locally_not_externally", nil},
		{"a search by a hostile record id", "q=" + url.QueryEscape(hostileID), w.idsOf(hostileID)},
		{"a search by a hostile external id", "q=" + url.QueryEscape(hostileExtID), w.idsOf(hostileID)},
		{"a search that is SQL", "q=" + url.QueryEscape(`3' OR '1'='1`), nil},
		{"an empty search", "q=", w.idsOf("1", "3", "4", hostileID)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := w.get(t, "/findings?"+tt.query, "alice")
			if got := findingIDs(body); !slices.Equal(got, tt.want) {
				t.Errorf("GET /findings?%s listed %v, want %v", tt.query, got, tt.want)
			}
			if len(tt.want) == 0 && !strings.Contains(body, "No findings match.") {
				t.Error("an empty result does not say so")
			}
		})
	}
	// The form shows the filter it applied.
	body := w.get(t, "/findings?job=sweep&kind=missed_success&state=all&age=36h", "alice")
	for _, want := range []string{
		`<option value="sweep" selected>sweep</option>`,
		`<option value="missed_success" selected>missed_success</option>`,
		`<option value="all" selected>all</option>`,
		`<option value="36h" selected>older than 36h</option>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the filter form lacks %q", want)
		}
	}
}

func TestTheListPagesByKeysetWithANextLink(t *testing.T) {
	t.Parallel()
	w := newWorld(t, true, func(c *console.Config) { c.PageSize = 2 })
	var seen []string
	path := "/findings?state=all"
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatalf("more pages than findings: %v", seen)
		}
		body := w.get(t, path, "alice")
		ids := findingIDs(body)
		if len(ids) > 2 {
			t.Fatalf("page %s has %d findings, want at most 2", path, len(ids))
		}
		seen = append(seen, ids...)
		if pages > 0 && !strings.Contains(body, `id="first"`) {
			t.Errorf("page %s has no link to the first page", path)
		}
		next := hrefOf(body, `id="next"`)
		if next == "" {
			break
		}
		if !strings.Contains(next, "state=all") || !strings.Contains(next, "after="+ids[len(ids)-1]) {
			t.Fatalf("next link %q does not keep the filter and continue after the last id %s", next, ids[len(ids)-1])
		}
		// The link is relative to /findings.
		u, err := url.Parse("/findings")
		if err != nil {
			t.Fatal(err)
		}
		ref, err := url.Parse(strings.ReplaceAll(next, "&amp;", "&"))
		if err != nil {
			t.Fatal(err)
		}
		path = u.ResolveReference(ref).RequestURI()
	}
	if want := w.idsOf("1", "2", "3", "4", hostileID); !slices.Equal(seen, want) {
		t.Fatalf("paging listed %v, want each finding once, in order: %v", seen, want)
	}
}

// hrefOf returns the href of the first element whose tag holds attr.
func hrefOf(body, attr string) string {
	i := strings.Index(body, attr)
	if i < 0 {
		return ""
	}
	tagStart := strings.LastIndex(body[:i], "<")
	tag := body[tagStart : i+strings.Index(body[i:], ">")]
	_, after, ok := strings.Cut(tag, `href="`)
	if !ok {
		return ""
	}
	href, _, _ := strings.Cut(after, `"`)
	return href
}

func TestTheDetailShowsTheFindingItsRepairAndItsHistory(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	id := w.ids["1"]
	if err := w.store.ResolveFinding(context.Background(), id, reconcile.Resolution{As: "accepted", By: "bob", Note: "refunded by hand"}); err != nil {
		t.Fatal(err)
	}
	if err := w.store.ReopenFinding(context.Background(), id, "carol", "the refund bounced"); err != nil {
		t.Fatal(err)
	}
	body := w.get(t, fmt.Sprintf("/findings/%d", id), "alice")
	for _, want := range []string{
		fmt.Sprintf("Finding #%d", id), `id="state">open</span>`,
		"<dt>Record</dt><dd>1</dd>", "<dt>Local state</dt><dd>pending</dd>", "<dt>External state</dt><dd>succeeded</dd>",
		`href="https://dashboard.stripe.com/payments/pi_1TestMissed0001"`,
		"<dt>Repair command</dt><dd>ApplyPaymentSucceeded</dd>",
		"<td>detected</td><td class=\"who\">job sweep <span class=\"muted\">(detection)</span></td>",
		"<td>resolved</td><td class=\"who\">bob</td><td>accepted</td><td class=\"text\">refunded by hand</td>",
		"<td>reopened</td><td class=\"who\">carol</td><td></td><td class=\"text\">the refund bounced</td>",
		"<td>command pending</td><td class=\"who\">repair command ApplyPaymentSucceeded</td>",
		`id="resolve"`, `<option value="fixed">fixed</option>`, `<option value="false_positive">false_positive</option>`,
		`<a href="../findings?job=sweep" id="back">`,
		"Signed in as <strong id=\"actor\">alice</strong>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the finding's page lacks %q", want)
		}
	}
	if strings.Contains(body, `value="repaired"`) {
		t.Error("a person is offered the repair commands' own resolution")
	}
	if strings.Contains(body, `id="reopen"`) {
		t.Error("an open finding has a reopen form")
	}
}

func TestResolvingRecordsTheAuthenticatedActorAndLeavesTheOpenList(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	id := w.ids["3"]
	r := w.do(t, http.MethodPost, fmt.Sprintf("/findings/%d/resolve", id), "alice", url.Values{
		"csrf_token": {w.token(t, id, "alice")},
		"resolution": {"accepted"},
		"note":       {"  customer refunded by hand  "},
		// Not ours to give: the actor comes from Authenticate.
		"by": {"mallory"}, "actor": {"mallory"}, "resolved_by": {"mallory"},
	})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != fmt.Sprintf("../../findings/%d", id) {
		t.Fatalf("resolve = %d, Location %q; want 303 back to the finding:\n%s", r.status, r.header.Get("Location"), r.body)
	}
	d := w.finding(t, id)
	if d.Open() || d.Resolution != "accepted" || d.ResolvedBy != "alice" || d.ResolutionNote != "customer refunded by hand" {
		t.Fatalf("finding after resolve: %+v; want accepted by alice with the note", d.Finding)
	}
	if last := d.History[len(d.History)-1]; last.Action != "resolved" || last.Actor != "alice" || last.Note != "customer refunded by hand" {
		t.Fatalf("history ends with %+v, want alice's resolution", last)
	}
	if slices.Contains(findingIDs(w.get(t, "/findings", "alice")), strconv.FormatInt(id, 10)) {
		t.Error("the resolved finding is still in the open list")
	}
	if !slices.Contains(findingIDs(w.get(t, "/findings?state=resolved", "alice")), strconv.FormatInt(id, 10)) {
		t.Error("the resolved finding is not in the resolved list")
	}
	body := w.get(t, fmt.Sprintf("/findings/%d", id), "alice")
	for _, want := range []string{`id="state">resolved</span>`, "as accepted by alice", `id="reopen"`,
		`<td>resolved</td><td class="who">alice</td><td>accepted</td><td class="text">customer refunded by hand</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the resolved finding's page lacks %q", want)
		}
	}

	// Resolving again (a second tab, a colleague) changes nothing: 409.
	again := w.do(t, http.MethodPost, fmt.Sprintf("/findings/%d/resolve", id), "bob",
		url.Values{"csrf_token": {w.token(t, w.ids["4"], "bob")}, "resolution": {"fixed"}})
	if again.status != http.StatusConflict || !strings.Contains(again.body, "resolved already") {
		t.Fatalf("resolving a resolved finding = %d:\n%s", again.status, again.body)
	}
	if d := w.finding(t, id); d.ResolvedBy != "alice" {
		t.Fatalf("the second resolution overwrote the first: %+v", d.Finding)
	}
}

func TestReopeningRecordsTheActorAndRefusesAFindingThatIsOpenOrFoundAgain(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	id := w.ids["3"]
	post := func(path, actor string, form url.Values) response {
		form.Set("csrf_token", w.token(t, w.ids["4"], actor))
		return w.do(t, http.MethodPost, fmt.Sprintf(path, id), actor, form)
	}
	if r := post("/findings/%d/reopen", "alice", url.Values{}); r.status != http.StatusConflict || !strings.Contains(r.body, "is open already") {
		t.Fatalf("reopening an open finding = %d:\n%s", r.status, r.body)
	}
	if r := post("/findings/%d/resolve", "alice", url.Values{"resolution": {"false_positive"}}); r.status != http.StatusSeeOther {
		t.Fatalf("resolve = %d:\n%s", r.status, r.body)
	}
	r := post("/findings/%d/reopen", "bob", url.Values{"note": {"it was real after all"}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != fmt.Sprintf("../../findings/%d", id) {
		t.Fatalf("reopen = %d, Location %q:\n%s", r.status, r.header.Get("Location"), r.body)
	}
	d := w.finding(t, id)
	if last := d.History[len(d.History)-1]; !d.Open() || last.Action != "reopened" || last.Actor != "bob" || last.Note != "it was real after all" {
		t.Fatalf("after reopen: open %v, history ends with %+v", d.Open(), last)
	}
	if !slices.Contains(findingIDs(w.get(t, "/findings", "alice")), strconv.FormatInt(id, 10)) {
		t.Error("the reopened finding is not in the open list")
	}

	// Resolved again, and the next cycle finds the same drift: a newer finding is open, and
	// reopening the old one is refused with a link to it.
	if r := post("/findings/%d/resolve", "alice", url.Values{"resolution": {"fixed"}}); r.status != http.StatusSeeOther {
		t.Fatalf("resolve = %d:\n%s", r.status, r.body)
	}
	ext := map[string]string{}
	for _, row := range sweepRows {
		ext[row.ext] = row.remote
	}
	w.cycle(t, "sweep", ext)
	newer, err := w.store.ListFindings(context.Background(), reconcile.FindingQuery{RecordID: "3"})
	if err != nil || len(newer) != 1 || newer[0].ID == id {
		t.Fatalf("open findings of record 3 after the second cycle: %+v, %v", newer, err)
	}
	r = post("/findings/%d/reopen", "alice", url.Values{})
	if r.status != http.StatusConflict || !strings.Contains(r.body, "found again") ||
		!strings.Contains(r.body, fmt.Sprintf(`<a href="../../findings/%d">Open finding %d</a>`, newer[0].ID, newer[0].ID)) {
		t.Fatalf("reopening a finding found again = %d:\n%s", r.status, r.body)
	}
}

func TestRequestsThatAuthenticateRefusesAreRefused(t *testing.T) {
	t.Parallel()
	for _, challenge := range []string{"", `Basic realm="review"`} {
		w := newWorld(t, false, func(c *console.Config) { c.Challenge = challenge })
		wantStatus := http.StatusForbidden
		if challenge != "" {
			wantStatus = http.StatusUnauthorized
		}
		id := w.ids["3"]
		token := w.token(t, id, "alice")
		for _, tt := range []struct {
			method, path string
			form         url.Values
		}{
			{http.MethodGet, "/", nil},
			{http.MethodGet, "/findings", nil},
			{http.MethodGet, "/findings?state=all", nil},
			{http.MethodGet, fmt.Sprintf("/findings/%d", id), nil},
			{http.MethodGet, "/no/such/page", nil},
			{http.MethodPost, fmt.Sprintf("/findings/%d/resolve", id), url.Values{"csrf_token": {token}, "resolution": {"fixed"}}},
			{http.MethodPost, fmt.Sprintf("/findings/%d/reopen", id), url.Values{"csrf_token": {token}}},
		} {
			r := w.do(t, tt.method, tt.path, "", tt.form)
			if r.status != wantStatus || r.header.Get("WWW-Authenticate") != challenge {
				t.Errorf("unauthenticated %s %s = %d, WWW-Authenticate %q; want %d, %q", tt.method, tt.path, r.status, r.header.Get("WWW-Authenticate"), wantStatus, challenge)
			}
			if strings.Contains(r.body, "pi_1Test") || strings.Contains(r.body, "csrf_token") || strings.Contains(r.body, "X-Test-User") {
				t.Errorf("unauthenticated %s %s shows data or the reason:\n%s", tt.method, tt.path, r.body)
			}
		}
		if !w.finding(t, id).Open() {
			t.Fatal("an unauthenticated post resolved the finding")
		}
	}
}

func TestWritesNeedAFormTokenOfTheActorAndTheSameOrigin(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	// Finding 3 is open, to resolve; finding 4 is resolved, to reopen.
	if err := w.store.ResolveFinding(context.Background(), w.ids["4"], reconcile.Resolution{As: "fixed", By: "bob"}); err != nil {
		t.Fatal(err)
	}
	for _, write := range []struct {
		action   string
		id       int64
		wantOpen bool // the finding's state until a good post
		fields   url.Values
	}{
		{"resolve", w.ids["3"], true, url.Values{"resolution": {"fixed"}}},
		{"reopen", w.ids["4"], false, url.Values{"note": {"not fixed"}}},
	} {
		t.Run(write.action, func(t *testing.T) {
			id := write.id
			path := fmt.Sprintf("/findings/%d/%s", id, write.action)
			alices := w.token(t, id, "alice")
			form := func(token ...string) url.Values {
				f := url.Values{}
				for k, v := range write.fields {
					f[k] = v
				}
				if len(token) > 0 {
					f.Set("csrf_token", token[0])
				}
				return f
			}
			tests := []struct {
				name   string
				form   url.Values
				query  string
				header []string
			}{
				{"no token", form(), "", nil},
				{"an empty token", form(""), "", nil},
				{"a garbled token", form(alices[:len(alices)-3] + "AAA"), "", nil},
				{"a token without its time", form(alices[strings.Index(alices, "."):]), "", nil},
				{"another person's token", form(w.token(t, id, "bob")), "", nil},
				{"the token in the query string", form(), "?csrf_token=" + url.QueryEscape(alices), nil},
				{"a cross-site fetch", form(alices), "", []string{"Sec-Fetch-Site", "cross-site"}},
				{"another origin", form(alices), "", []string{"Origin", "https://evil.example"}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					r := w.do(t, http.MethodPost, path+tt.query, "alice", tt.form, tt.header...)
					if r.status != http.StatusForbidden {
						t.Fatalf("POST %s with %s = %d, want 403:\n%s", write.action, tt.name, r.status, r.body)
					}
					if w.finding(t, id).Open() != write.wantOpen {
						t.Fatalf("the refused %s changed the finding", write.action)
					}
				})
			}
			// The same post, from the console's own page: accepted.
			r := w.do(t, http.MethodPost, path, "alice", form(alices), "Sec-Fetch-Site", "same-origin", "Origin", w.srv.URL)
			if r.status != http.StatusSeeOther || w.finding(t, id).Open() == write.wantOpen {
				t.Fatalf("a same-origin %s with alice's token = %d:\n%s", write.action, r.status, r.body)
			}
		})
	}
}

func TestWriteRoutesRefuseOtherMethods(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	id := w.ids["3"]
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete} {
		for _, action := range []string{"resolve", "reopen"} {
			path := fmt.Sprintf("/findings/%d/%s?csrf_token=%s&resolution=fixed", id, action, url.QueryEscape(w.token(t, id, "alice")))
			r := w.do(t, method, path, "alice", nil)
			if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != http.MethodPost {
				t.Errorf("%s %s = %d, Allow %q; want 405, POST", method, action, r.status, r.header.Get("Allow"))
			}
		}
	}
	if !w.finding(t, id).Open() {
		t.Fatal("a GET resolved the finding")
	}
}

func TestBadInputIsA400AndUnknownFindingsA404(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	id := w.ids["3"]
	token := w.token(t, id, "alice")
	tests := []struct {
		name, method, path string
		form               url.Values
		want               int
	}{
		{"an unknown state", "GET", "/findings?state=closed", nil, 400},
		{"a negative age", "GET", "/findings?age=-1h", nil, 400},
		{"an age that is no duration", "GET", "/findings?age=yesterday", nil, 400},
		{"an after that is no id", "GET", "/findings?after=x", nil, 400},
		{"an overlong kind", "GET", "/findings?kind=" + strings.Repeat("k", 201), nil, 400},
		{"a job the console is not for", "GET", "/findings?job=nobody", nil, 400},
		{"a finding id that is no number", "GET", "/findings/abc", nil, 400},
		{"finding id zero", "GET", "/findings/0", nil, 400},
		{"an unknown finding", "GET", "/findings/999999", nil, 404},
		{"an unknown page", "GET", "/findings/1/edit", nil, 404},
		{"a resolution not offered", "POST", fmt.Sprintf("/findings/%d/resolve", id), url.Values{"csrf_token": {token}, "resolution": {"repaired"}}, 400},
		{"no resolution", "POST", fmt.Sprintf("/findings/%d/resolve", id), url.Values{"csrf_token": {token}}, 400},
		{"an overlong note", "POST", fmt.Sprintf("/findings/%d/resolve", id), url.Values{"csrf_token": {token}, "resolution": {"fixed"}, "note": {strings.Repeat("n", 2001)}}, 400},
		{"resolving an unknown finding", "POST", "/findings/999999/resolve", url.Values{"csrf_token": {token}, "resolution": {"fixed"}}, 404},
		{"reopening an unknown finding", "POST", "/findings/999999/reopen", url.Values{"csrf_token": {token}}, 404},
		{"resolving finding -1", "POST", "/findings/-1/resolve", url.Values{"csrf_token": {token}, "resolution": {"fixed"}}, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := w.do(t, tt.method, tt.path, "alice", tt.form)
			if r.status != tt.want {
				t.Fatalf("%s %s = %d, want %d:\n%s", tt.method, tt.path, r.status, tt.want, r.body)
			}
			if !strings.Contains(r.body, fmt.Sprintf(`id="status">%d</p>`, tt.want)) {
				t.Errorf("the error page does not show the status:\n%s", r.body)
			}
			if strings.Contains(r.body, "pgstore") || strings.Contains(r.body, "goroutine") || strings.Contains(r.body, "SQLSTATE") {
				t.Errorf("the error page shows internals:\n%s", r.body)
			}
		})
	}
	if !w.finding(t, id).Open() {
		t.Fatal("a bad request resolved the finding")
	}
}

func TestHostileFindingDataIsRenderedHarmlessly(t *testing.T) {
	t.Parallel()
	w := newWorld(t, true, func(c *console.Config) {
		// A careless host that links to whatever the external id is.
		c.ExternalURL = func(f reconcile.Finding) string { return f.ExternalID }
	})
	id := w.ids[hostileID]
	r := w.do(t, http.MethodPost, fmt.Sprintf("/findings/%d/resolve", id), `alice<script>alert("actor")</script>`, url.Values{
		"csrf_token": {w.token(t, id, `alice<script>alert("actor")</script>`)}, "resolution": {"accepted"}, "note": {hostileNote},
	})
	if r.status != http.StatusSeeOther {
		t.Fatalf("resolve = %d:\n%s", r.status, r.body)
	}
	pages := map[string]string{
		"list":   w.get(t, "/findings?state=all&job=hostile", "alice"),
		"detail": w.get(t, fmt.Sprintf("/findings/%d", id), `alice<script>alert("actor")</script>`),
	}
	for name, body := range pages {
		for _, raw := range []string{"<script", "<img", `href="javascript:`, "href='javascript:"} {
			if strings.Contains(strings.ToLower(body), raw) {
				t.Errorf("the %s page holds the raw %q", name, raw)
			}
		}
		for _, escaped := range []string{
			`&lt;script&gt;alert(&#34;id&#34;)&lt;/script&gt;`,          // record id
			`&#34;&gt;&lt;img src=x onerror=alert(&#39;local&#39;)&gt;`, // local state
			`&lt;/td&gt;&lt;script&gt;alert(&#39;external&#39;)&lt;/script&gt;`,
			`href="#ZgotmplZ"`, // the javascript: URL, replaced
			// The diff, stored as JSON and read back.
			`<th scope="row">&lt;script&gt;alert(&#34;field&#34;)&lt;/script&gt;</th><td class="text">&lt;/td&gt;&lt;/tr&gt;&lt;script&gt;alert(&#39;diff&#39;)&lt;/script&gt;</td><td class="text">JPY 1,000</td>`,
		} {
			if !strings.Contains(body, escaped) {
				t.Errorf("the %s page lacks the escaped %q", name, escaped)
			}
		}
	}
	for _, escaped := range []string{
		`&lt;script&gt;alert(&#39;detail&#39;)&lt;/script&gt; &amp; &#34;quoted&#34; &#39;too&#39;`,
		`&lt;script&gt;alert(&#39;note&#39;)&lt;/script&gt;&#34;&#39;`,
		`alice&lt;script&gt;alert(&#34;actor&#34;)&lt;/script&gt;`,
	} {
		if !strings.Contains(pages["detail"], escaped) {
			t.Errorf("the finding's page lacks the escaped %q", escaped)
		}
	}
	// And as stored, unchanged: escaping is the page's business.
	if d := w.finding(t, id); d.ResolutionNote != strings.TrimSpace(hostileNote) || d.ResolvedBy != `alice<script>alert("actor")</script>` {
		t.Fatalf("stored %q by %q", d.ResolutionNote, d.ResolvedBy)
	}
}

func TestAFailingStoreIsA500ThatShowsNoInternals(t *testing.T) {
	t.Parallel()
	secret := "password=hunter2 host=db.internal.example"
	store := &fakeStore{err: fmt.Errorf("dial %s: refused", secret)}
	c, err := console.New(console.Config{Store: store, Monitor: monitorOf(t, store, "sweep"), Authenticate: headerAuth, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/findings", "/findings/7"} {
		r := serve(c, http.MethodGet, path, "alice")
		if r.Code != http.StatusInternalServerError || strings.Contains(r.Body.String(), "hunter2") || strings.Contains(r.Body.String(), "db.internal") {
			t.Errorf("GET %s with a failing store = %d:\n%s", path, r.Code, r.Body.String())
		}
	}
	r := serve(c, http.MethodGet, "/", "alice")
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), "STATUS UNAVAILABLE") || strings.Contains(r.Body.String(), "hunter2") {
		t.Errorf("the overview with a failing store = %d:\n%s", r.Code, r.Body.String())
	}
}

func TestTheConsoleWorksUnderAPrefixStrippedOrNot(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, func(c *console.Config) { c.BasePath = "/ops/review" })
	stripped, err := console.New(console.Config{Store: w.store, Monitor: w.monitor(t, -1), Authenticate: headerAuth, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/review/", http.StripPrefix("/review", stripped))
	mux.Handle("/ops/review/", w.console) // BasePath, not stripped
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	for _, prefix := range []string{"/review", "/ops/review"} {
		t.Run(prefix, func(t *testing.T) {
			client := &http.Client{Transport: actorTransport("alice")}
			get := func(u string) (string, string) {
				t.Helper()
				resp, err := client.Get(u)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("GET %s = %d:\n%s", u, resp.StatusCode, b)
				}
				return resp.Request.URL.String(), string(b)
			}
			// The prefix without its slash lands on the overview.
			at, body := get(srv.URL + prefix)
			if at != srv.URL+prefix+"/" {
				t.Fatalf("GET %s ended at %s", prefix, at)
			}
			// Overview -> the sweep job's missed successes -> the first one: every link resolves
			// under the prefix.
			follow := func(at, body, attr string) (string, string) {
				t.Helper()
				href := hrefOf(body, attr)
				if href == "" {
					t.Fatalf("no link %s on %s", attr, at)
				}
				base, _ := url.Parse(at)
				ref, err := url.Parse(strings.ReplaceAll(href, "&amp;", "&"))
				if err != nil {
					t.Fatal(err)
				}
				return get(base.ResolveReference(ref).String())
			}
			at, body = follow(at, body, `missed_success</a>`)
			if !strings.HasPrefix(at, srv.URL+prefix+"/findings?") {
				t.Fatalf("the kind link led to %s", at)
			}
			id := w.ids["1"]
			if prefix == "/ops/review" {
				id = w.ids["2"]
			}
			at, body = follow(at, body, fmt.Sprintf(`>#%d</a>`, id))
			if at != fmt.Sprintf("%s%s/findings/%d", srv.URL, prefix, id) {
				t.Fatalf("the finding link led to %s", at)
			}
			// The form posts under the prefix and the 303 comes back to the finding.
			action := hrefOfAction(body)
			base, _ := url.Parse(at)
			ref, _ := url.Parse(action)
			resp, err := client.PostForm(base.ResolveReference(ref).String(), url.Values{
				"csrf_token": {tokenRE.FindStringSubmatch(body)[1]}, "resolution": {"fixed"}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Request.URL.String() != at {
				t.Fatalf("after resolving: %d at %s, want 200 at %s", resp.StatusCode, resp.Request.URL, at)
			}
			if w.finding(t, id).Open() {
				t.Fatal("the finding is still open")
			}
		})
	}
	// Outside the base path, nothing.
	for _, path := range []string{"/elsewhere/findings", "/ops/reviewer", "/ops/reviewer/findings", "/"} {
		if r := serve(w.console, http.MethodGet, path, "alice"); r.Code != http.StatusNotFound || !strings.Contains(r.Body.String(), `id="status">404`) {
			t.Errorf("GET %s with BasePath /ops/review = %d, want the console's 404", path, r.Code)
		}
	}
	// Mounted on the exact prefix, the console sends the prefix itself to its slash.
	r := serve(http.StripPrefix("/review", stripped), http.MethodGet, "/review", "alice")
	if r.Code != http.StatusSeeOther || r.Header().Get("Location") != "/review/" {
		t.Errorf("GET /review, stripped = %d, Location %q; want 303 to /review/", r.Code, r.Header().Get("Location"))
	}
}

// hrefOfAction returns the action of the page's first form that posts.
func hrefOfAction(body string) string {
	_, after, _ := strings.Cut(body, `method="post" action="`)
	action, _, _ := strings.Cut(after, `"`)
	return action
}

// actorTransport signs every request in as actor.
type actorTransport string

func (a actorTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-User", string(a))
	return http.DefaultTransport.RoundTrip(r)
}
