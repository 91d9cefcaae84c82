package console_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/console"
)

// Attacks on the payouts pages from an outside review: records written straight through the
// store's GroupSink with a hostile value in every text field (as StorableGroupRecord keeps
// them), and hostile query strings.

// hostileGroups are records whose every stored text is an attack: markup, an attribute
// breakout, a javascript: URL, CSV formulas after a newline, keys of each kind, and a currency
// of MaxGroupCurrency bytes that is itself a formula holding a key.
func hostileGroups() []reconcile.GroupRecord {
	return []reconcile.GroupRecord{
		{ID: `po_"javascript:alert(1)//` + "\n=1+1", Account: "=cmd|' /C calc'!A0\r\nrk_live_abcdefgh12345678",
			Status: "<script>alert(1)</script>\n@SUM(1)\tsk_live_0123456789abcdef", Amount: 100, Currency: "@sk_live_abcdefg",
			TiedOut: true, Itemized: true, Expected: 90, ExpectedKnown: true, Members: 1, Findings: 1,
			Records: []string{`txn_"><svg onload=alert(1)>`}},
		{ID: "+po_neg\x00\xff", Account: "-acct\ninjected,row", Status: "paid\r\n=2+2", Amount: -250, Currency: "",
			TiedOut: true, Itemized: true, Expected: -250, ExpectedKnown: true, Held: true, Members: 2},
		{ID: "po_long", Account: strings.Repeat("a\"<", 3_400), Status: strings.Repeat("=", 300), Amount: 1,
			Currency: "<b>uSd</b>", Members: 1},
	}
}

// commitHostile records hostileGroups, made storable, in lane "hostile" of job "payouts", and
// returns their numbers by stored id.
func (w *payoutWorld) commitHostile(t *testing.T) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	sink := w.store.(reconcile.GroupSink)
	cur, err := w.store.ReadLane(ctx, "payouts", "hostile")
	if err != nil {
		t.Fatal(err)
	}
	var gs []reconcile.GroupRecord
	for _, g := range hostileGroups() {
		gs = append(gs, reconcile.StorableGroupRecord(g))
	}
	if _, err := sink.CommitGroups(ctx, reconcile.LaneCommit{Job: "payouts", Lane: "hostile", Cursor: cur, Next: "x"}, gs); err != nil {
		t.Fatalf("CommitGroups of storable hostile records: %v", err)
	}
	recs, err := w.store.ListGroups(ctx, reconcile.GroupQuery{Job: "payouts"})
	if err != nil {
		t.Fatal(err)
	}
	seq := map[string]int64{}
	for _, r := range recs {
		seq[r.ID] = r.Seq
	}
	return seq
}

// secretsIn are the keys hostileGroups hold; none may reach a page or an export.
var secretsIn = []string{"sk_live_", "rk_live_", "0123456789abcdef", "abcdefgh12345678"}

func TestStoredHostileTextInEveryPayoutFieldStaysTextInPagesAndCSV(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		w := newPayoutWorld(t, kind, nil)
		seq := w.commitHostile(t)
		if len(seq) != 8 {
			t.Fatalf("records = %v; want the 5 of the world and 3 hostile", seq)
		}
		// No markup, attribute, URL or key gets through any page.
		hrefJS := regexp.MustCompile(`(?i)(href|src|action)="\s*javascript:`)
		pages := []string{"/", "/payouts", "/payouts?state=not_held", "/payouts?status=" + url.QueryEscape("paid\r\n=2+2")}
		for _, s := range seq {
			pages = append(pages, fmt.Sprintf("/payouts/%d", s))
		}
		for _, path := range pages {
			status, _, body := w.get(t, path, "alice")
			if path == pages[3] {
				// A CR or LF in a filter is a control character: refused, not echoed.
				if status != http.StatusBadRequest || strings.Contains(body, "=2+2") {
					t.Errorf("GET %s = %d; want 400 without the value", path, status)
				}
				continue
			}
			if status != http.StatusOK {
				t.Fatalf("GET %s = %d:\n%s", path, status, body)
			}
			for _, bad := range append([]string{"<script>alert(1)", "<svg", `"javascript:`, `a"<a`, "<b>uSd", "\x00"}, secretsIn...) {
				if strings.Contains(body, bad) {
					t.Errorf("GET %s holds %q", path, bad)
				}
			}
			if hrefJS.MatchString(body) {
				t.Errorf("GET %s links to javascript:", path)
			}
		}
		detail := w.page(t, fmt.Sprintf("/payouts/%d", seq[`po_"javascript:alert(1)//`+"\n=1+1"]))
		for _, want := range []string{`po_&#34;javascript:alert(1)//`, "&lt;script&gt;alert(1)&lt;/script&gt;", "[redacted key]",
			`<dd id="paid">@[REDACTED KEY] 1.00</dd>`} {
			if !strings.Contains(detail, want) {
				t.Errorf("the hostile payout's page lacks %q:\n%s", want, detail)
			}
		}

		// The export: one row per record whatever newlines its cells hold, every text cell
		// inert, the minor-unit columns plain numbers, no key.
		_, _, body := w.get(t, "/payouts.csv", "alice")
		for _, bad := range secretsIn {
			if strings.Contains(body, bad) {
				t.Errorf("the export holds %q", bad)
			}
		}
		rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
		if err != nil {
			t.Fatalf("the export is not CSV: %v\n%s", err, body)
		}
		if len(rows) != 1+8 {
			t.Fatalf("export rows = %d; want a header and 8:\n%q", len(rows), rows)
		}
		by := map[string][]string{}
		var neg []string
		for _, r := range rows[1:] {
			by[r[2]] = r
			if strings.HasPrefix(r[2], "'+po_neg") {
				neg = r
			}
			for i, c := range r {
				if i == 9 || i == 10 { // paid_minor, expected_minor: numbers
					continue
				}
				if c != "" && strings.ContainsRune("=+-@\t\r", rune(c[0])) {
					t.Errorf("column %s cell %q could run as a formula", rows[0][i], c)
				}
			}
		}
		first := by[`po_"javascript:alert(1)//`+"\n=1+1"]
		if first == nil || first[5] != "'@[redacted key]" || first[6] != "'@[REDACTED KEY] 1.00" || first[8] != "'@[REDACTED KEY] -0.10" ||
			!strings.HasPrefix(first[1], "'=cmd") || !strings.Contains(first[3], "\n@SUM(1)\t[redacted key]") {
			t.Errorf("the first hostile row = %q", first)
		}
		if neg == nil || neg[6] != "'-250" || neg[9] != "-250" || neg[10] != "-250" || neg[1] != "'-acct\ninjected,row" {
			t.Errorf("the negative hostile row = %q", neg)
		}
	})
}

func TestHostilePayoutsQueryStringsAreRefusedOrHarmless(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		w := newPayoutWorld(t, kind, nil)
		all := payoutRows(w.page(t, "/payouts"))
		for path, want := range map[string]int{
			"/payouts?before=9223372036854775807":               http.StatusOK,
			"/payouts?before=9223372036854775808":               http.StatusBadRequest,
			"/payouts?before=-9223372036854775808":              http.StatusBadRequest,
			"/payouts?before=0":                                 http.StatusBadRequest,
			"/payouts?before=1e3":                               http.StatusBadRequest,
			"/payouts?before=0x10":                              http.StatusBadRequest,
			"/payouts?before=%205":                              http.StatusBadRequest,
			"/payouts?before=5%00":                              http.StatusBadRequest,
			"/payouts.csv?before=-1":                            http.StatusBadRequest,
			"/payouts?status=%FF":                               http.StatusBadRequest,
			"/payouts?job=payouts%00":                           http.StatusBadRequest,
			"/payouts?status=" + strings.Repeat("x", 10_000):    http.StatusBadRequest,
			"/payouts.csv?account=" + strings.Repeat("é", 5000): http.StatusBadRequest,
			"/payouts?account=rk_live_abcdefgh12345678":         http.StatusBadRequest,
			"/payouts.csv?status=xsk_test_1":                    http.StatusBadRequest,
			"/payouts/9223372036854775807":                      http.StatusNotFound,
			"/payouts/9223372036854775808":                      http.StatusBadRequest,
			"/payouts/-1":                                       http.StatusBadRequest,
			"/payouts/1%00":                                     http.StatusBadRequest,
			"/payouts/%FF":                                      http.StatusBadRequest,
		} {
			status, _, body := w.get(t, path, "alice")
			if status != want {
				t.Errorf("GET %s = %d; want %d", path, status, want)
			}
			for _, bad := range []string{"abcdefgh12345678", "sk_test_1", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "éééééééé"} {
				if strings.Contains(body, bad) {
					t.Errorf("GET %s echoes %q", path, bad)
				}
			}
		}
		// The largest before is the first page; a repeated parameter counts its first value
		// only, and the page's links carry that one.
		if got := payoutRows(w.page(t, "/payouts?before=9223372036854775807")); !equalRows(got, all) {
			t.Errorf("before=max64 lists %v; want %v", got, all)
		}
		body := w.page(t, "/payouts?account=acct_1&account=%3Cscript%3E&state=held&state=bogus")
		if got := payoutRows(body); !equalRows(got, w.seqs("po_acct")) || strings.Contains(body, "<script>") {
			t.Errorf("repeated parameters list %v; want po_acct only:\n%s", got, body)
		}
		if !strings.Contains(body, `href="./payouts.csv?account=acct_1&amp;state=held"`) {
			t.Errorf("the export link does not carry the filter as read:\n%s", body)
		}
	})
}

func equalRows(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

func TestAJobTheConsoleDoesNotListHasNoPayoutInAnyPageOrExport(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		w := newPayoutWorld(t, kind, func(c *console.Config) { c.Jobs = []string{"sweep"} })
		for _, path := range []string{"/", "/payouts", "/payouts.csv", "/payouts?state=pending", "/payouts?before=9223372036854775807"} {
			if body := w.page(t, path); strings.Contains(body, "po_") {
				t.Errorf("GET %s shows a payout of a job the console does not list:\n%s", path, body)
			}
		}
		if rows, err := csv.NewReader(strings.NewReader(w.page(t, "/payouts.csv"))).ReadAll(); err != nil || len(rows) != 1 {
			t.Errorf("the export = %q, %v; want its header only", rows, err)
		}
		for _, path := range []string{"/payouts?job=payouts", "/payouts.csv?job=payouts", "/payouts.csv?job=payouts&job=sweep"} {
			if status, _, body := w.get(t, path, "alice"); status != http.StatusBadRequest || strings.Contains(body, "po_") {
				t.Errorf("GET %s = %d; want 400", path, status)
			}
		}
		for _, id := range []string{"po_held", "po_wait", hostilePayoutID} {
			if status, _, _ := w.get(t, fmt.Sprintf("/payouts/%d", w.seq[id]), "alice"); status != http.StatusNotFound {
				t.Errorf("the payout %s of an unlisted job = %d; want 404", id, status)
			}
		}
	})
}
