package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/console"
)

// moneyFindings are findings as the money policy records them, its amounts formatted by
// reconcile.FormatAmount: yen have no decimals, dinars three.
func moneyFindings() []reconcile.Finding {
	at := time.Now().Add(-time.Hour)
	return []reconcile.Finding{
		{ID: 1, Job: "payments", RecordID: "o-1", ExternalID: "pi_1Amount", Kind: "amount_mismatch", Local: "paid", External: "succeeded", DetectedAt: at,
			Diffs: []reconcile.Diff{{Field: "amount", Local: reconcile.FormatAmount(100000, "jpy"), External: reconcile.FormatAmount(120000, "jpy")}}},
		{ID: 2, Job: "payments", RecordID: "o-2", ExternalID: "pi_1Currency", Kind: "currency_mismatch", Local: "paid", External: "succeeded", DetectedAt: at,
			Diffs: []reconcile.Diff{
				{Field: "currency", Local: "USD", External: "JPY"},
				{Field: "amount", Local: reconcile.FormatAmount(1000, "usd"), External: reconcile.FormatAmount(1000, "jpy")},
			}},
		{ID: 3, Job: "payments", RecordID: "o-3", ExternalID: "pi_1Refund", Kind: "missed_partial_refund", Local: "paid", External: "succeeded", DetectedAt: at,
			Diffs: []reconcile.Diff{{Field: "amount_refunded", Local: reconcile.FormatAmount(0, "kwd"), External: reconcile.FormatAmount(1500, "kwd")}}},
		{ID: 4, Job: "payments", RecordID: "o-4", ExternalID: "pi_1Missed", Kind: "missed_success", Local: "pending", External: "succeeded", DetectedAt: at},
	}
}

func newMoneyConsole(t *testing.T, store *memReviewer) *console.Console {
	t.Helper()
	c, err := console.New(console.Config{Store: store, Authenticate: headerAuth, Jobs: []string{"payments"}, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// diffRow is how the diffs table shows one field.
func diffRow(field, local, external string) string {
	return `<tr><th scope="row">` + field + `</th><td class="text">` + local + `</td><td class="text">` + external + `</td></tr>`
}

func TestTheListAndTheFindingShowTheFieldsThatDiffer(t *testing.T) {
	t.Parallel()
	c := newMoneyConsole(t, &memReviewer{findings: moneyFindings()})
	get := func(path string) string {
		t.Helper()
		r := serve(c, http.MethodGet, path, "alice")
		if r.Code != http.StatusOK {
			t.Fatalf("GET %s = %d:\n%s", path, r.Code, r.Body.String())
		}
		return r.Body.String()
	}

	list := get("/findings")
	if !strings.Contains(list, "<th>Fields that differ</th>") {
		t.Fatalf("the list has no column for the fields that differ:\n%s", list)
	}
	for id, want := range map[int64][]string{
		1: {diffRow("amount", "JPY 100,000", "JPY 120,000")},
		2: {diffRow("currency", "USD", "JPY"), diffRow("amount", "USD 10.00", "JPY 1,000")},
		3: {diffRow("amount_refunded", "KWD 0.000", "KWD 1.500")},
	} {
		row := rowOf(t, list, id)
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("the row of finding %d lacks %q:\n%s", id, w, row)
			}
		}
	}
	if row := rowOf(t, list, 4); strings.Contains(row, `class="diffs"`) {
		t.Errorf("finding 4 differs in no field, yet its row has a diffs table:\n%s", row)
	}
	// A page without any diff has no empty column for them.
	if only := get("/findings?kind=missed_success"); strings.Contains(only, "Fields that differ") {
		t.Errorf("a list of findings without diffs has their column:\n%s", only)
	}

	detail := get("/findings/2")
	start := strings.Index(detail, `<dd id="diffs">`)
	if start < 0 {
		t.Fatalf("finding 2's page has no diffs:\n%s", detail)
	}
	diffs := detail[start : start+strings.Index(detail[start:], "</dd>")]
	for _, want := range []string{
		"<th>Field</th><th>Local</th><th>External</th>",
		diffRow("currency", "USD", "JPY") + "\n" + diffRow("amount", "USD 10.00", "JPY 1,000"), // in the classifier's order
	} {
		if !strings.Contains(diffs, want) {
			t.Errorf("finding 2's diffs lack %q:\n%s", want, diffs)
		}
	}
	if detail := get("/findings/4"); strings.Contains(detail, `id="diffs"`) || strings.Contains(detail, "Fields that differ") {
		t.Errorf("finding 4 differs in no field, yet its page shows diffs:\n%s", detail)
	}
}

func TestHostileDiffsAreRenderedHarmlesslyAndWithoutKeys(t *testing.T) {
	t.Parallel()
	at := time.Now()
	store := &memReviewer{findings: []reconcile.Finding{{
		ID: 9, Job: "payments", RecordID: "o-9", ExternalID: "pi_1Hostile", Kind: "amount_mismatch", DetectedAt: at,
		Diffs: []reconcile.Diff{
			{Field: `<script>alert("field")</script>`, Local: `"><img src=x onerror=alert('local')>`, External: `</td><script>alert('external')</script>`},
			{Field: "description", Local: "order 9", External: "charged with " + leakedKey},
		},
	}}}
	c := newMoneyConsole(t, store)
	for _, path := range []string{"/findings", "/findings/9"} {
		r := serve(c, http.MethodGet, path, "alice")
		body := r.Body.String()
		if r.Code != http.StatusOK {
			t.Fatalf("GET %s = %d:\n%s", path, r.Code, body)
		}
		for _, raw := range []string{"<script", "<img", leakedKey, "sk_test_"} {
			if strings.Contains(strings.ToLower(body), strings.ToLower(raw)) {
				t.Errorf("GET %s holds the raw %q", path, raw)
			}
		}
		for _, escaped := range []string{
			diffRow(`&lt;script&gt;alert(&#34;field&#34;)&lt;/script&gt;`, `&#34;&gt;&lt;img src=x onerror=alert(&#39;local&#39;)&gt;`,
				`&lt;/td&gt;&lt;script&gt;alert(&#39;external&#39;)&lt;/script&gt;`),
			diffRow("description", "order 9", "charged with [redacted key]"),
		} {
			if !strings.Contains(body, escaped) {
				t.Errorf("GET %s lacks %q:\n%s", path, escaped, body)
			}
		}
	}
}
