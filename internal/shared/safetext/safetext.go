// Package safetext makes stored text fit to print in text output: a terminal, a text/plain
// page, a log a person reads. Text the reconciler stores comes partly from outside (an external
// system's states and error messages, a reviewer's notes): printed as it is, an escape sequence
// in it retitles a terminal, writes its clipboard or clears its screen, and a newline forges a
// line of output of its own. The health endpoint's text answer and the command line print every
// stored value through Line. (JSON output needs none of this: encoding/json escapes control
// characters.)
package safetext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line returns s fit to print as part of one line: every character that is not shown as
// itself is escaped, Go-style: newline, carriage return and tab as \n, \r and \t, other control
// characters (C0, DEL, C1) and bytes that are not UTF-8 as \x1b, \u009b, \xff, and the Unicode
// line and paragraph separators and bidirectional controls (which reorder what a reader sees)
// as \u2028, \u202e. Printable text, backslashes included, is left as it is, so Line(Line(s))
// is Line(s).
func Line(s string) string { return escape(s, false) }

// Lines is Line but for newlines, which it keeps: for text whose lines are its own, such as a
// whole report, as a last guard after its values went through Line.
func Lines(s string) string { return escape(s, true) }

func escape(s string, keepNewlines bool) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !shown(r, size) && !(keepNewlines && r == '\n') {
			break
		}
		i += size
	}
	if i == len(s) {
		return s // the common case: nothing to escape
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case shown(r, size), keepNewlines && r == '\n':
			b.WriteString(s[i : i+size])
		case r == utf8.RuneError: // a byte that is not UTF-8
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < utf8.RuneSelf:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// shown reports whether rune r, of size bytes in the text, is printed as itself.
func shown(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return false // not UTF-8
	case r >= 0x20 && r < 0x7f:
		return true // the common case
	case unicode.IsControl(r):
		return false // C0, DEL, C1
	case r == '\u2028' || r == '\u2029':
		return false // line and paragraph separators
	case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069', r == '\u200e', r == '\u200f', r == '\u061c':
		return false // bidirectional controls
	}
	return true
}

// CSVCell returns s fit to be a cell of a CSV file that a spreadsheet opens: one that begins
// like a formula is prefixed with ' so that it stays text (OWASP's CSV injection advice). Like
// a formula means its first character other than white space is = + - or @, or their
// full-width forms (＝ ＋ － ＠, which some spreadsheets take as the ASCII ones), or it begins
// with a tab, a carriage return or a newline, which some programs skip before one. Quoting is
// encoding/csv's. The console's export and the command line's audit --csv write every cell
// through it.
func CSVCell(s string) string {
	if s == "" {
		return s
	}
	if strings.ContainsRune("\t\r\n", rune(s[0])) {
		return "'" + s
	}
	first := strings.TrimLeftFunc(s, unicode.IsSpace)
	if r, _ := utf8.DecodeRuneInString(first); strings.ContainsRune("=+-@＝＋－＠", r) {
		return "'" + s
	}
	return s
}

// Storable returns s as a PostgreSQL text column can hold it: bytes that are not UTF-8 and NUL
// characters (either fails the write) become U+FFFD, and text longer than max bytes is cut to
// at most max, on a character boundary, and marked with "...".
func Storable(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
