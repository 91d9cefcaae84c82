package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/shared/safetext"
)

// FuzzAuditReport feeds the report findings whose every text is arbitrary (a row's values, an
// external state, a detail quoting the server): the text output holds no control character
// but its own newlines, the JSON output is JSON holding the values as they are (redacted), and
// the CSV output parses, one row per finding, with no cell a spreadsheet would run.
func FuzzAuditReport(f *testing.F) {
	f.Add("1", "pi_1", "missed_success", "pending", "succeeded", "", "amount", "USD 1.00")
	f.Add("2\n3", "pi_\x1b[2J", "=cmd|' /C calc'!A0", "paid"+hostile, "\xff\xfe", "sk_live_51HleakedKeyABCDEFGHIJ", "+field", "@SUM(A1)")
	f.Add("-1", "\t=1", "\r=2", "\u202e", "\x00", strings.Repeat("x", 10<<10), "\u2028", "\u009b2J")
	f.Fuzz(func(t *testing.T, id, ext, kind, local, external, detail, field, value string) {
		tl := newTally(time.Now(), 10)
		if kind == "" {
			kind = "k"
		}
		o := reconcile.Outcome{RecordID: id, ExternalID: ext, Local: local, External: external, Verified: true,
			Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: kind, Detail: detail,
				Diffs: []reconcile.Diff{{Field: field, Local: value, External: value}}}}
		tl.add(o, time.Time{})
		// The server's words reach the report as the first failure and as the one that
		// stopped the run, too.
		tl.unverifiable, tl.firstFailure, tl.failure = 1, detail, errors.New(detail)
		a := &auditFlags{host: hostFlags{table: "payments"}, object: "payment_intent"}
		for _, format := range []string{"text", "json", "csv"} {
			var out, errb bytes.Buffer
			e := &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
			a.json, a.csv = format == "json", format == "csv"
			if code := e.report(a, tl, "payment_intent"); code != exitNegative {
				t.Fatalf("%s: exit %d", format, code)
			}
			for name, s := range map[string]string{"stdout": out.String(), "stderr": errb.String()} {
				for _, r := range s {
					if r != '\n' && safetext.Line(string(r)) != string(r) {
						t.Fatalf("%s %s holds the raw control %U: %q", format, name, r, s)
					}
				}
				if strings.Contains(s, "sk_live_51HleakedKey") {
					t.Fatalf("%s %s printed a key: %q", format, name, s)
				}
			}
			switch format {
			case "json":
				var got auditSummaryJSON
				if err := json.Unmarshal(out.Bytes(), &got); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, out.String())
				}
				if len(got.Findings) != 1 {
					t.Fatalf("findings %+v", got.Findings)
				}
			case "csv":
				recs, err := csv.NewReader(&out).ReadAll()
				if err != nil || len(recs) != 2 {
					t.Fatalf("csv: %v, %d records", err, len(recs))
				}
				for _, c := range recs[1] {
					if c != "" && strings.ContainsRune("=+-@\t\r", rune(c[0])) {
						t.Fatalf("a cell a spreadsheet would run: %q", c)
					}
				}
			}
		}
	})
}

// TestTallyKindsAreBounded: a state column whose every value differs (the wrong column named,
// ids in it, a hostile table) makes every row a kind of its own, unexpected:<yours>-><Stripe's>.
// The kinds counted apart are bounded, as the findings listed are: memory does not grow with
// the table, and every finding is still counted.
func TestTallyKindsAreBounded(t *testing.T) {
	tl := newTally(time.Now(), 10)
	const rows = 3 * maxKinds
	tl.add(reconcile.Outcome{RecordID: "0", Verified: true,
		Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "c"}}, time.Time{})
	for i := 1; i < rows; i++ {
		tl.add(reconcile.Outcome{RecordID: strconv.Itoa(i), Verified: true,
			Decision: reconcile.Unexpected("pi_"+strconv.Itoa(i), "succeeded")}, time.Time{})
	}
	tl.add(reconcile.Outcome{RecordID: "last", Verified: true,
		Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "c"}}, time.Time{})
	if len(tl.byKind) > maxKinds+1 {
		t.Errorf("%d kinds counted apart for %d rows, want at most %d", len(tl.byKind), rows, maxKinds+1)
	}
	sum := 0
	for _, n := range tl.byKind {
		sum += n
	}
	if sum != tl.found || tl.found != rows+1 {
		t.Errorf("the kinds count %d findings, found %d, want %d", sum, tl.found, rows+1)
	}
	if tl.byKind["missed_success"] != 2 {
		t.Errorf("a kind counted apart before the bound was reached is counted %d times, want 2", tl.byKind["missed_success"])
	}
	if n := tl.byKind[otherKinds]; n != rows+1-2-(maxKinds-1) {
		t.Errorf("%s counts %d, want %d", otherKinds, n, rows+1-2-(maxKinds-1))
	}
	if m := meaning(kindMeanings(), otherKinds); !strings.Contains(m, "--max-findings") {
		t.Errorf("%s has no meaning that says where its findings are: %q", otherKinds, m)
	}
}
