package stripepayouts

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/internal/keyecho"
	"github.com/reconcilekit/reconcile/internal/shared/safetext"
)

// percentEncoded writes every byte of s as %XX, as a URL-encoding server or proxy might.
func percentEncoded(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

// keyForms are keyecho.Key as a cell (or a header, a failure message, a url) may carry it:
// plainly, in the forms redaction cannot see, and among hostile bytes.
func keyForms() map[string]string {
	k := keyecho.Key
	return map[string]string{
		"plain":                      k,
		"JSON-escaped":               strings.ReplaceAll(k, "_", `\u005f`),
		"percent-encoded":            percentEncoded(k),
		"its underscores encoded":    strings.ReplaceAll(k, "_", "%5F"),
		"split by CSV quoting":       `sk_"` + strings.TrimPrefix(k, "sk_"), // written "sk_""test_..."
		"after a NUL":                "\x00" + k,
		"after invalid UTF-8":        "\xff" + k,
		"after an ANSI escape":       "\x1b[2J\x1b]0;" + k + "\a",
		"a newline inside the quote": "sk_test\n" + strings.TrimPrefix(k, "sk_test"),
		"behind a bidi override":     "\u202e" + strings.ReplaceAll(k, "_", "%5F"),
		"10 KB":                      strings.ReplaceAll(k, "_", "%5F") + strings.Repeat("x", 10_000),
	}
}

// checkShown fails t if text, an error or a log's value made of what Stripe sent, shows the
// key in any of keyForms, is longer than max or is not printable on one line.
func checkShown(t testing.TB, what, text string, max int) {
	t.Helper()
	keyecho.AssertNone(t, what, text)
	if enc := percentEncoded("EchoSECRET"); strings.Contains(strings.ToUpper(text), enc) {
		t.Errorf("%s shows the key percent-encoded: %.300q", what, text)
	}
	if len(text) > max {
		t.Errorf("%s is %d bytes long, more than %d: %.300q", what, len(text), max, text)
	}
	if safetext.Line(text) != text {
		t.Errorf("%s is not printable: %.300q", what, text)
	}
}

// A report whose cell or header holds the key, in any form, or hostile bytes, does not read,
// and its error quotes none of it: it says where (the row, the column), in a line of
// printable text of bounded length, whatever the cell held.
func TestAReportErrorQuotesNoCell(t *testing.T) {
	row := []string{"po_1A", "txn_1A", "charge", "usd", "12.34", "0.66", "11.68", "ch_1", "ch_1", "pi_1", "10.00", "eur", "2024-01-03 00:00:00"}
	write := func(recs ...[]string) []byte {
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		if err := w.WriteAll(recs); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	forms := keyForms()
	forms["10 MB"] = strings.ReplaceAll(keyecho.Key, "_", "%5F") + strings.Repeat("x", 10<<20)
	for name, form := range forms {
		files := map[string][]byte{}
		for i, c := range reportColumns {
			if name == "10 MB" && i > 1 {
				break // two are enough, and fast
			}
			r := slices.Clone(row)
			r[i] = form
			files["in "+c] = write(reportColumns, r)
			h := slices.Clone(reportColumns)
			h[i] = form
			files["as header "+c] = write(h, row)
		}
		files["as a header named twice"] = write(append(slices.Clone(reportColumns), form, form), append(slices.Clone(row), "", ""))
		for where, b := range files {
			lines, err := parseReport(b, map[string]bool{"po_1A": true})
			if err == nil {
				t.Errorf("%s %s: read as %+v", name, where, lines)
				continue
			}
			checkShown(t, name+" "+where, err.Error(), 200)
		}
	}
}
