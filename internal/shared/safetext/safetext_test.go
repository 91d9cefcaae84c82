package safetext_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/reconcilekit/reconcile/internal/shared/safetext"
)

func TestLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", ""},
		{"plain text", "missed_success: pi_123 (JPY 1,000)", "missed_success: pi_123 (JPY 1,000)"},
		{"letters of any script", "überweisung 払い戻し", "überweisung 払い戻し"},
		{"a backslash stays", `C:\path\n`, `C:\path\n`},
		{"a forged line", "looks fine\nFORGED   approved by the CFO", `looks fine\nFORGED   approved by the CFO`},
		{"carriage return and tab", "a\rb\tc", `a\rb\tc`},
		{"a terminal title", "\x1b]0;pwned\a", `\x1b]0;pwned\x07`},
		{"a clipboard write", "\x1b]52;c;ZWNobyBoaQ==\x1b\\", `\x1b]52;c;ZWNobyBoaQ==\x1b\`},
		{"a screen clear", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"NUL and DEL", "a\x00b\x7f", `a\x00b\x7f`},
		{"C1 controls", "a\u009b31mb\u0085", `a\u009b31mb\u0085`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
		{"a replacement character is text", "a\uFFFDb", "a\uFFFDb"},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"bidirectional overrides", "paid\u202edeliaf\u202c", `paid\u202edeliaf\u202c`},
	} {
		if got := safetext.Line(tc.in); got != tc.want {
			t.Errorf("%s: Line(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestLinesKeepsNewlinesOnly(t *testing.T) {
	t.Parallel()
	if got, want := safetext.Lines("one\ntwo\x1b[2J\r\n"), `one`+"\n"+`two\x1b[2J\r`+"\n"; got != want {
		t.Errorf("Lines = %q, want %q", got, want)
	}
}

// Whatever the input, Line's output is one line of printable text, and escaping it again
// changes nothing.
func FuzzLine(f *testing.F) {
	for _, s := range []string{"", "plain", "a\nb", "\x1b]0;t\a", "\xff\xfe", "\u202e", "a\\x1b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := safetext.Line(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Line(%q) = %q: not UTF-8", s, got)
		}
		for _, r := range got {
			if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\u202e' {
				t.Fatalf("Line(%q) = %q: holds %U", s, got, r)
			}
		}
		if again := safetext.Line(got); again != got {
			t.Fatalf("Line(Line(%q)) = %q, not %q", s, again, got)
		}
		if lines := safetext.Lines(s); strings.Count(lines, "\n") != strings.Count(s, "\n") {
			t.Fatalf("Lines(%q) = %q: another number of lines", s, lines)
		}
	})
}

func TestCSVCell(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain text stays", "pi_123", "pi_123"},
		{"empty stays", "", ""},
		{"a formula becomes text", "=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"},
		{"a plus becomes text", "+1", "'+1"},
		{"a minus becomes text", "-2+3", "'-2+3"},
		{"an at becomes text", "@SUM(A1)", "'@SUM(A1)"},
		{"a leading tab becomes text", "\t=1", "'\t=1"},
		{"a leading carriage return becomes text", "\r=1", "'\r=1"},
		{"a formula sign later stays", "a=1", "a=1"},
		{"a leading newline becomes text", "\n=1", "'\n=1"},
		{"a formula after spaces becomes text", "  =1+1", "'  =1+1"},
		{"a formula after a no-break space becomes text", "\u00a0=1", "'\u00a0=1"},
		{"a full-width equals becomes text", "\uff1dSUM(A1)", "'\uff1dSUM(A1)"},
		{"a full-width plus becomes text", "\uff0b1", "'\uff0b1"},
		{"a full-width minus becomes text", "\uff0d1", "'\uff0d1"},
		{"a full-width at becomes text", "\uff20SUM(A1)", "'\uff20SUM(A1)"},
		{"spaces before text stay", "  pi_1", "  pi_1"},
		{"invalid UTF-8 first stays", "\xff=1", "\xff=1"},
	} {
		if got := safetext.CSVCell(tc.in); got != tc.want {
			t.Errorf("%s: CSVCell(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestStorable(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 10, "plain"},
		{"a\x00b", 10, "a\uFFFDb"},
		{"a\xffb", 10, "a\uFFFDb"},
		{"abcdef", 3, "abc..."},
		{"ab€", 4, "ab..."}, // € is three bytes: not cut in two
		{"ab€", 5, "ab€"},
		{"\x00\x00", 3, "\uFFFD..."},
	} {
		if got := safetext.Storable(tc.in, tc.max); got != tc.want {
			t.Errorf("Storable(%q, %d) = %q; want %q", tc.in, tc.max, got, tc.want)
		}
	}
}
