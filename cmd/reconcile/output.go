package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/reconcilekit/reconcile/internal/shared/redact"
)

// redactSecrets replaces anything in s that looks like a Stripe key. Everything this tool prints
// from the database goes through it: adapters are meant to keep keys out of what they store
// (errors, details, notes), and this is the tool's own guard should one not. The pattern's
// characters never include a quote or a backslash, so it is safe on JSON text too.
func redactSecrets(s string) string {
	return redact.Keys(s)
}

// print writes text to standard output, redacted.
func (e *env) print(text string) {
	fmt.Fprint(e.stdout, redactSecrets(text))
}

// printJSON writes v as indented JSON to standard output, redacted.
func (e *env) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	e.print(string(b) + "\n")
	return nil
}

// table renders rows as columns separated by at least two spaces; the first row is the header.
func table(rows [][]string) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		for i, c := range r {
			// A tab or newline in a stored value would break the columns.
			r[i] = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(c)
		}
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	w.Flush()
	return b.String()
}

// timeText is t in UTC to the second, or "-" for the zero time.
func timeText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// orDash is s, or "-" when it is empty, so that a column is never blank.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
