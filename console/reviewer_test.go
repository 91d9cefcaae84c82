package console_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/console"
)

// The tests' kind table, as a host passes its policies' (stripepolicy.Kinds()).
var testKinds = []reconcile.KindInfo{
	{Kind: "paid_locally_not_externally", Meaning: "The row is paid but Stripe has no successful payment.", Money: true},
	{Kind: "missed_success", Meaning: "Stripe took the payment; the row is still pending.", Money: false},
}

func withKinds(c *console.Config) { c.Kinds = testKinds }

func TestTheKindIsAPickListThatSaysWhatEachKindMeans(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, withKinds)
	body := w.get(t, "/findings?kind=missed_success", "alice")
	for _, want := range []string{
		`<select name="kind" id="f-kind">`,
		`<option value="missed_success" selected title="Stripe took the payment; the row is still pending.">missed_success — Stripe took the payment; the row is still pending.</option>`,
		`<option value="paid_locally_not_externally" title="The row is paid but Stripe has no successful payment.">`,
		// The engine's own kinds are known without the host's table.
		`<option value="missing_externally" title="`,
		`<p id="kind-meaning"><strong>missed_success</strong>: Stripe took the payment; the row is still pending.</p>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the list lacks %q", want)
		}
	}
	// A kind the console does not know stays selectable when it is the filter.
	if body := w.get(t, "/findings?kind=custom_kind", "alice"); !strings.Contains(body, `<option value="custom_kind" selected>custom_kind</option>`) {
		t.Error("a kind outside the table is not kept in the pick list")
	}
	// The finding's page and the overview say it too.
	detail := w.get(t, fmt.Sprintf("/findings/%d", w.ids["3"]), "alice")
	if !strings.Contains(detail, `<span id="meaning">The row is paid but Stripe has no successful payment.</span>`) ||
		!strings.Contains(detail, `<span class="money">money</span>`) {
		t.Error("the finding's page does not say what its kind means and that it involves money")
	}
	if !strings.Contains(section(t, w.get(t, "/", "alice"), "sweep"), "<td>Stripe took the payment; the row is still pending.</td>") {
		t.Error("the overview does not say what a kind means")
	}
}

func TestNewRefusesBadKindsAndTimeZones(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		mod  func(*console.Config)
		want string
	}{
		{"an empty kind", func(c *console.Config) { c.Kinds = []reconcile.KindInfo{{Meaning: "x"}} }, "Config.Kinds[0]"},
		{"a meaning of two lines", func(c *console.Config) { c.Kinds = []reconcile.KindInfo{{Kind: "k", Meaning: "a\nb"}} }, "one line"},
		{"an unknown default zone", func(c *console.Config) { c.TimeZone = "Mars/Olympus" }, "Mars/Olympus"},
		{"an unknown zone to choose", func(c *console.Config) { c.TimeZones = []string{"UTC", "Nowhere/Else"} }, "Nowhere/Else"},
	} {
		cfg := console.Config{Store: &fakeStore{}, Authenticate: headerAuth}
		tt.mod(&cfg)
		if _, err := console.New(cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, want an error mentioning %q", tt.name, err, tt.want)
		}
	}
}

func TestTheListCountsSortsBothWaysAndPagesInEitherOrder(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, func(c *console.Config) { c.PageSize = 3 })
	oldest := w.idsOf("1", "2", "3", "4")
	newest := slices.Clone(oldest)
	slices.Reverse(newest)

	body := w.get(t, "/findings", "alice")
	if !strings.Contains(body, `<strong id="total">4</strong> findings match; <span id="shown">3</span> on this page.`) {
		t.Errorf("the list does not say 4 findings match, 3 shown:\n%s", body)
	}
	if got := w.get(t, "/findings?kind=missed_success", "alice"); !strings.Contains(got, `<strong id="total">2</strong> findings match`) {
		t.Error("the total is not of the filter")
	}
	// Every page of an order, followed by its next links.
	pages := func(path string) []string {
		var seen []string
		for range 5 {
			body := w.get(t, path, "alice")
			seen = append(seen, findingIDs(body)...)
			next := hrefOf(body, `id="next"`)
			if next == "" {
				return seen
			}
			path = "/" + strings.ReplaceAll(strings.TrimPrefix(next, "./"), "&amp;", "&")
		}
		t.Fatalf("more pages than findings from %s", path)
		return nil
	}
	for _, tt := range []struct {
		sort string
		want []string
	}{
		{"", oldest}, {"detected", oldest}, {"-age", oldest},
		{"-detected", newest}, {"age", newest},
	} {
		if got := pages("/findings?sort=" + tt.sort); !slices.Equal(got, tt.want) {
			t.Errorf("sort=%q listed %v, want %v", tt.sort, got, tt.want)
		}
	}
	// The column headers sort: the detected column's link turns the order around.
	if href := hrefOf(w.get(t, "/findings", "alice"), `id="sort-detected"`); href != "./findings?sort=-detected" {
		t.Errorf("the detected column links to %q, want the newest first", href)
	}
	if href := hrefOf(w.get(t, "/findings?sort=-detected", "alice"), `id="sort-detected"`); href != "./findings" {
		t.Errorf("the detected column, newest first, links to %q, want the oldest first", href)
	}
	if r := w.do(t, http.MethodGet, "/findings?sort=amount", "alice", nil); r.status != http.StatusBadRequest {
		t.Errorf("an unknown sort order = %d, want 400", r.status)
	}
}

func TestSelectedFindingsAreResolvedWithOneNoteEachInItsOwnHistory(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	one, two, three := w.ids["1"], w.ids["2"], w.ids["3"]
	tok := w.token(t, one, "alice")
	form := func(ids ...int64) url.Values {
		v := url.Values{"csrf_token": {tok}, "resolution": {"fixed"}, "note": {"settled in the ledger"}}
		for _, id := range ids {
			v.Add("id", strconv.FormatInt(id, 10))
		}
		return v
	}
	// The list offers it: a box per open finding, in a form with a token.
	list := w.get(t, "/findings", "alice")
	for _, want := range []string{`<form method="post" action="./resolve" id="bulk">`, fmt.Sprintf(`name="id" value="%d"`, one), `id="bulk-submit"`} {
		if !strings.Contains(list, want) {
			t.Errorf("the list lacks %q", want)
		}
	}
	// Resolved already, one of them: it is reported and left as it was.
	if err := w.store.ResolveFinding(context.Background(), three, reconcile.Resolution{As: "accepted", By: "bob"}); err != nil {
		t.Fatal(err)
	}

	// Without a token, or from another actor, nothing changes.
	bad := form(one, two)
	bad.Set("csrf_token", "")
	if r := w.do(t, http.MethodPost, "/resolve", "alice", bad); r.status != http.StatusForbidden {
		t.Errorf("a bulk resolution without a token = %d, want 403", r.status)
	}
	if r := w.do(t, http.MethodPost, "/resolve", "mallory", form(one, two)); r.status != http.StatusForbidden {
		t.Errorf("a bulk resolution with another actor's token = %d, want 403", r.status)
	}
	if r := w.do(t, http.MethodGet, "/resolve", "alice", nil); r.status != http.StatusMethodNotAllowed {
		t.Errorf("GET /resolve = %d, want 405", r.status)
	}
	if r := w.do(t, http.MethodPost, "/resolve", "alice", form()); r.status != http.StatusBadRequest {
		t.Errorf("a bulk resolution of nothing = %d, want 400", r.status)
	}
	if !w.finding(t, one).Open() || !w.finding(t, two).Open() {
		t.Fatal("a refused bulk resolution changed a finding")
	}

	r := w.do(t, http.MethodPost, "/resolve", "alice", form(one, two, three, one))
	if r.status != http.StatusOK {
		t.Fatalf("bulk resolution = %d:\n%s", r.status, r.body)
	}
	for _, want := range []string{"Resolved 2 of 3 findings", fmt.Sprintf(`id="result-%d"`, three), "resolved already"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("the result page lacks %q:\n%s", want, r.body)
		}
	}
	for _, id := range []int64{one, two} {
		d := w.finding(t, id)
		var resolved []reconcile.FindingEvent
		for _, e := range d.History {
			if e.Action == reconcile.ActionResolved {
				resolved = append(resolved, e)
			}
		}
		if d.Open() || d.ResolvedBy != "alice" || d.ResolutionNote != "settled in the ledger" || len(resolved) != 1 ||
			resolved[0].Actor != "alice" || resolved[0].Note != "settled in the ledger" {
			t.Errorf("finding %d after the bulk resolution: %+v, resolution events %+v; want one, by alice, with the note", id, d.Finding, resolved)
		}
	}
	if d := w.finding(t, three); d.ResolvedBy != "bob" {
		t.Errorf("the finding resolved already was resolved again: %+v", d.Finding)
	}
}

func TestAKindThatInvolvesMoneyCannotBeResolvedWithoutANote(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, withKinds)
	money, plain := w.ids["3"], w.ids["1"]
	tok := w.token(t, money, "alice")
	if body := w.get(t, fmt.Sprintf("/findings/%d", money), "alice"); !strings.Contains(body, `maxlength="2000" required>`) {
		t.Error("the form of a money finding does not require a note")
	}
	// Server-side, whatever the form says.
	for _, n := range []string{"", "   "} {
		r := w.do(t, http.MethodPost, fmt.Sprintf("/findings/%d/resolve", money), "alice",
			url.Values{"csrf_token": {tok}, "resolution": {"accepted"}, "note": {n}})
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, "A note is required to resolve a finding of kind paid_locally_not_externally, which involves money") {
			t.Errorf("resolving a money finding with the note %q = %d, want 400 saying a note is required:\n%s", n, r.status, r.body)
		}
	}
	// In bulk, one money finding without a note refuses them all.
	r := w.do(t, http.MethodPost, "/resolve", "alice", url.Values{"csrf_token": {tok}, "resolution": {"accepted"},
		"id": {strconv.FormatInt(plain, 10), strconv.FormatInt(money, 10)}})
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, fmt.Sprintf("#%d (paid_locally_not_externally)", money)) {
		t.Errorf("a bulk resolution with a money finding and no note = %d, want 400 naming it:\n%s", r.status, r.body)
	}
	if !w.finding(t, money).Open() || !w.finding(t, plain).Open() {
		t.Fatal("a refused resolution changed a finding")
	}
	// A kind without money needs none; with a note, the money one resolves.
	if r := w.do(t, http.MethodPost, fmt.Sprintf("/findings/%d/resolve", plain), "alice",
		url.Values{"csrf_token": {tok}, "resolution": {"fixed"}}); r.status != http.StatusSeeOther {
		t.Errorf("resolving a finding without money and without a note = %d, want 303", r.status)
	}
	if r := w.do(t, http.MethodPost, fmt.Sprintf("/findings/%d/resolve", money), "alice",
		url.Values{"csrf_token": {tok}, "resolution": {"accepted"}, "note": {"refunded by hand"}}); r.status != http.StatusSeeOther {
		t.Errorf("resolving a money finding with a note = %d, want 303", r.status)
	}
}

func TestTheListShowsWhenEachFindingWasResolved(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	id := w.ids["4"]
	if err := w.store.ResolveFinding(context.Background(), id, reconcile.Resolution{As: "accepted", By: "bob"}); err != nil {
		t.Fatal(err)
	}
	d := w.finding(t, id)
	row := rowOf(t, w.get(t, "/findings?state=all", "alice"), id)
	if want := `<td class="resolved-at">` + d.ResolvedAt.UTC().Format("2006-01-02 15:04:05") + " UTC</td>"; !strings.Contains(row, want) {
		t.Errorf("the resolved finding's row lacks %q:\n%s", want, row)
	}
	if page := w.get(t, fmt.Sprintf("/findings/%d", id), "alice"); !strings.Contains(page, `<dd id="resolved">`+d.ResolvedAt.UTC().Format("2006-01-02 15:04:05")+" UTC, as accepted by bob</dd>") {
		t.Error("the finding's page does not say when it was resolved")
	}
	if open := rowOf(t, w.get(t, "/findings?state=all", "alice"), w.ids["3"]); !strings.Contains(open, `<td class="resolved-at"><span class="muted">—</span></td>`) {
		t.Errorf("an open finding's row has a resolved-at time:\n%s", open)
	}
}

func TestTheOverviewsStaleFindingsAndItsReasonLinkToThem(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	// Two of the findings have been open for two days: stale past pgstore's 24 hours.
	if _, err := w.pool.Exec(context.Background(), `UPDATE reconcile_findings SET detected_at = now() - interval '2 days' WHERE id = ANY($1)`,
		[]int64{w.ids["1"], w.ids["3"]}); err != nil {
		t.Fatal(err)
	}
	sweep := section(t, w.get(t, "/", "alice"), "sweep")
	want := `<a href="./findings?age=24h&amp;job=sweep">stale_findings: 2 findings open longer than 24h0m0s`
	if !strings.Contains(sweep, want) || !strings.Contains(sweep, `<a href="./findings?age=24h&amp;job=sweep" class="stale">2</a>`) {
		t.Fatalf("the overview's stale findings are not linked to their list:\n%s", sweep)
	}
	if got := findingIDs(w.get(t, "/findings?age=24h&job=sweep", "alice")); !slices.Equal(got, w.idsOf("1", "3")) {
		t.Errorf("the stale findings' link lists %v, want %v", got, w.idsOf("1", "3"))
	}
}

// The store says which findings are stale (Status.StaleAfter): the overview's link lists those
// it counted, whatever the store's threshold. (The console had a StaleAfter of its own, 24
// hours unless told again, so a store set to 90 minutes counted two and linked to none.)
func TestTheStaleLinkListsWhatTheStoreCountsAsStale(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	store, err := pgstore.New(w.pool, pgstore.Config{Table: "payments", AggregateType: "payment", StaleAfter: 90 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	c, err := console.New(console.Config{Store: store, Monitor: monitorOf(t, store, "sweep"), Authenticate: headerAuth, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	w.srv = httptest.NewServer(c)
	t.Cleanup(w.srv.Close)
	if _, err := w.pool.Exec(context.Background(), `UPDATE reconcile_findings SET detected_at = now() - interval '2 hours' WHERE id = ANY($1)`,
		[]int64{w.ids["1"], w.ids["3"]}); err != nil {
		t.Fatal(err)
	}
	sweep := section(t, w.get(t, "/", "alice"), "sweep")
	if want := `<a href="./findings?age=90m&amp;job=sweep" class="stale">2</a>`; !strings.Contains(sweep, want) {
		t.Fatalf("the overview lacks %q:\n%s", want, sweep)
	}
	if !strings.Contains(sweep, "stale_findings: 2 findings open longer than 1h30m0s") {
		t.Errorf("the stale_findings reason does not say the store's threshold:\n%s", sweep)
	}
	if got := findingIDs(w.get(t, "/findings?age=90m&job=sweep", "alice")); !slices.Equal(got, w.idsOf("1", "3")) {
		t.Errorf("the stale findings' link lists %v, want %v", got, w.idsOf("1", "3"))
	}
}

func TestTimesAreShownInTheZoneTheReviewerChose(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, func(c *console.Config) { c.TimeZones = []string{"UTC", "Asia/Tokyo"} })
	id := w.ids["1"]
	detected := w.finding(t, id).DetectedAt
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	page := fmt.Sprintf("/findings/%d", id)
	if body := w.get(t, page, "alice"); !strings.Contains(body, detected.UTC().Format("2006-01-02 15:04:05")+" UTC") ||
		!strings.Contains(body, `Times in <strong id="zone-name">UTC</strong>`) {
		t.Error("times are not in UTC by default")
	}
	tok := w.token(t, id, "alice")
	for _, tt := range []struct {
		name   string
		form   url.Values
		status int
	}{
		{"no token", url.Values{"tz": {"Asia/Tokyo"}}, http.StatusForbidden},
		{"a zone not offered", url.Values{"tz": {"Europe/Berlin"}, "csrf_token": {tok}}, http.StatusBadRequest},
	} {
		if r := w.do(t, http.MethodPost, "/timezone", "alice", tt.form); r.status != tt.status || r.header.Get("Set-Cookie") != "" {
			t.Errorf("%s: POST /timezone = %d (cookie %q), want %d and no cookie", tt.name, r.status, r.header.Get("Set-Cookie"), tt.status)
		}
	}
	r := w.do(t, http.MethodPost, "/timezone", "alice", url.Values{"tz": {"Asia/Tokyo"}, "csrf_token": {tok}, "back": {page[1:] + "?x=1"}})
	cookie := r.header.Get("Set-Cookie")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "./"+page[1:]+"?x=1" ||
		!strings.HasPrefix(cookie, "reconcile_console_tz=Asia/Tokyo") || !strings.Contains(cookie, "HttpOnly") {
		t.Fatalf("choosing Tokyo = %d to %q with cookie %q", r.status, r.header.Get("Location"), cookie)
	}
	// Back only to a page of the console.
	for _, back := range []string{"//evil.example/x", "https://evil.example/", "/findings", `\\evil.example`} {
		r := w.do(t, http.MethodPost, "/timezone", "alice", url.Values{"tz": {"UTC"}, "csrf_token": {tok}, "back": {back}})
		if r.header.Get("Location") != "./" {
			t.Errorf("back %q led to %q, want the overview", back, r.header.Get("Location"))
		}
	}
	jar := "reconcile_console_tz=Asia/Tokyo"
	body := w.do(t, http.MethodGet, page, "alice", nil, "Cookie", jar).body
	if want := detected.In(tokyo).Format("2006-01-02 15:04:05") + " JST"; !strings.Contains(body, want) {
		t.Errorf("the finding's page does not show %q", want)
	}
	if !strings.Contains(body, `Times in <strong id="zone-name">Asia/Tokyo</strong>`) || !strings.Contains(body, `<option value="Asia/Tokyo" selected>`) {
		t.Error("the page does not name the chosen zone")
	}
	// A cookie naming a zone not offered is ignored.
	if body := w.do(t, http.MethodGet, page, "alice", nil, "Cookie", "reconcile_console_tz=Europe/Berlin").body; !strings.Contains(body, `id="zone-name">UTC<`) {
		t.Error("a zone not offered was taken from the cookie")
	}
}

func TestTheExportIsTheFilteredFindingsAsSafeCSV(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, withKinds)
	ctx := context.Background()
	// A finding made of cells a spreadsheet would run as formulas.
	if _, err := w.pool.Exec(ctx, `INSERT INTO payments (id, external_id, status) VALUES ('=1+1', 'pi_1TestFormula001', 'paid')`); err != nil {
		t.Fatal(err)
	}
	b, err := w.store.Read(ctx, reconcile.ReadRequest{Job: "hostile", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.store.Commit(ctx, reconcile.Commit{Job: "hostile", Cursor: b.Cursor, Next: `["9"]`, Outcomes: []reconcile.Outcome{{
		RecordID: "=1+1", ExternalID: "pi_1TestFormula001", Local: `+cmd|' /C calc'!A0`, External: "@SUM(A1)", Verified: true,
		Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "paid_locally_not_externally", Detail: "-2+3, \"quoted\"\nand a line"},
	}}}); err != nil {
		t.Fatal(err)
	}
	r := w.do(t, http.MethodGet, "/findings.csv?kind=paid_locally_not_externally", "alice", nil)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		!strings.HasPrefix(r.header.Get("Content-Disposition"), `attachment; filename="findings-`) {
		t.Fatalf("export = %d %v", r.status, r.header)
	}
	rows, err := csv.NewReader(strings.NewReader(r.body)).ReadAll()
	if err != nil {
		t.Fatalf("the export is not CSV: %v\n%s", err, r.body)
	}
	if len(rows) != 4 || rows[0][0] != "id" || rows[0][4] != "kind" {
		t.Fatalf("export rows %q; want a header and the 3 findings of the kind", rows)
	}
	if rows[1][0] != strconv.FormatInt(w.ids["3"], 10) || rows[1][3] != "pi_1TestCanceled03" || rows[1][5] != testKinds[0].Meaning {
		t.Errorf("first row %q; want finding 3's, with its external id and its kind's meaning", rows[1])
	}
	hostile := rows[3]
	for col, want := range map[int]string{2: "'=1+1", 6: `'+cmd|' /C calc'!A0`, 7: "'@SUM(A1)", 9: "'-2+3, \"quoted\"\nand a line"} {
		if hostile[col] != want {
			t.Errorf("column %s = %q, want %q", rows[0][col], hostile[col], want)
		}
	}
	// The list links to the export of its own filter.
	if href := hrefOf(w.get(t, "/findings?kind=missed_success&state=all", "alice"), `id="export"`); href != "./findings.csv?kind=missed_success&amp;state=all" {
		t.Errorf("the list's export link is %q", href)
	}
	// Of another job than the console's, nothing.
	w2 := newWorld(t, false, func(c *console.Config) { c.Jobs = []string{"sweep"} })
	if r := w2.do(t, http.MethodGet, "/findings.csv?job=formula", "alice", nil); r.status != http.StatusBadRequest {
		t.Errorf("an export of another job = %d, want 400", r.status)
	}
	// A reviewer must be signed in.
	if r := w.do(t, http.MethodGet, "/findings.csv", "", nil); r.status != http.StatusForbidden || strings.Contains(r.body, "pi_1Test") {
		t.Errorf("an export without signing in = %d", r.status)
	}
}

func TestABulkResolutionWithAnotherJobsFindingChangesNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t, true, func(c *console.Config) { c.Jobs = []string{"sweep"} })
	mine, theirs := w.ids["1"], w.ids[hostileID]
	r := w.do(t, http.MethodPost, "/resolve", "alice", url.Values{"csrf_token": {w.token(t, mine, "alice")}, "resolution": {"fixed"},
		"id": {strconv.FormatInt(mine, 10), strconv.FormatInt(theirs, 10)}})
	if r.status != http.StatusNotFound {
		t.Errorf("a bulk resolution with another job's finding = %d, want 404", r.status)
	}
	if !w.finding(t, mine).Open() || !w.finding(t, theirs).Open() {
		t.Error("a refused bulk resolution changed a finding")
	}
}
