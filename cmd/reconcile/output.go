package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf16"

	"github.com/reconcilekit/reconcile/internal/shared/redact"
	"github.com/reconcilekit/reconcile/internal/shared/safetext"
)

// redactSecrets replaces anything in s that looks like a Stripe key. Everything this tool prints
// from the database goes through it: adapters are meant to keep keys out of what they store
// (errors, details, notes), and this is the tool's own guard should one not. The pattern's
// characters never include a quote or a backslash, so it is safe on JSON text too.
func redactSecrets(s string) string {
	return redact.Keys(s)
}

// printable is a stored value as text output prints it: redacted, and with its control
// characters escaped (safetext.Line), so that it can neither send a terminal an escape
// sequence (a new title, a clipboard write, a cleared screen) nor forge a line of its own.
// Every stored value a command prints goes through it (or through table, which uses it).
func printable(s string) string {
	return safetext.Line(redactSecrets(s))
}

// print writes text to standard output, redacted and with every control character but the
// newlines escaped: the lines are the command's own, as printable made its values.
func (e *env) print(text string) {
	_ = e.write(text) // a listing cut short is seen on the terminal that cut it
}

// write is print returning the error of the write, for output whose loss is a failure (the
// audit's report).
func (e *env) write(text string) error {
	_, err := fmt.Fprint(e.stdout, safetext.Lines(redactSecrets(text)))
	return err
}

// printErr writes a line to standard error as print does.
func (e *env) printErr(format string, args ...any) {
	fmt.Fprint(e.stderr, safetext.Lines(redactSecrets(fmt.Sprintf(format, args...))))
}

// printJSON writes v as indented JSON to standard output, redacted, with every character text
// output would escape (safetext) that JSON does not (DEL, C1 controls, bidirectional controls)
// written as a JSON escape: still JSON, every value as stored, and nothing a terminal acts on.
// It returns the error of the write, if any: output that was not written is a failure.
func (e *env) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(e.stdout, jsonEscaped(redactSecrets(string(b)))+"\n")
	return err
}

// jsonEscaped is JSON text s (valid UTF-8, as encoding/json writes it) with every character
// but the newlines between its lines that safetext.Line would escape written as \uXXXX. Such
// characters are only ever inside strings, where the escape means the character itself.
func jsonEscaped(s string) string {
	if safetext.Lines(s) == s {
		return s // the common case: nothing to escape
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		if r == '\n' || safetext.Line(string(r)) == string(r) {
			b.WriteRune(r)
			continue
		}
		for _, u := range utf16.Encode([]rune{r}) {
			fmt.Fprintf(&b, `\u%04x`, u)
		}
	}
	return b.String()
}

// table renders rows as columns separated by at least two spaces; the first row is the header.
func table(rows [][]string) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		for i, c := range r {
			r[i] = printable(c) // a tab or newline in a stored value would break the columns too
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
