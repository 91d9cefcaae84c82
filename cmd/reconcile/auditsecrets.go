package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// hiding returns e with its writers replacing each secret wherever it appears, as it is or
// with its punctuation escaped (encodedPattern), whatever its shape (the redaction of
// output.go catches what looks like a Stripe key; a key of another shape, a proxy's or a test
// server's, or the password of --stripe-base-url, it would not).
// Everything the audit prints is written whole, one call per text, so a secret is never split
// across writes. A secret with an empty value is ignored.
func (e *env) hiding(secrets ...secret) *env {
	var hide []secret
	for _, s := range secrets {
		if s.value != "" {
			s.encoded, s.hint = encodedPattern(s.value)
			s.windows = keyWindows(s.value)
			hide = append(hide, s)
		}
	}
	c := *e
	c.stdout = scrubber{e.stdout, hide}
	c.stderr = scrubber{e.stderr, hide}
	return &c
}

// secret is a value never to print, and what to print instead.
type secret struct {
	value, as string
	// encoded matches value with its characters other than ASCII letters and digits written
	// as an escape (encodedPattern); nil when it has none. hint is its longest run of letters
	// and digits, which any such match holds: a text without it is not searched.
	encoded *regexp.Regexp
	hint    string
	// windows are value's stretches of windowLen bytes, for a value long enough (keyWindows).
	windows *windows
}

// windowLen is the length of the stretches of a long secret hidden wherever they appear, and
// minWindowed the shortest secret that has them: 16 characters of a key of 32 or more (a
// Stripe key has a hundred) are the key's and nothing else's, and a key quoted back cut in two
// (a line folded by a proxy, an invisible character, an ellipsis) is hidden in its two parts,
// which neither the exact key nor redact.Keys (which hides the part that begins like a key)
// finds.
const windowLen, minWindowed = 16, 32

// keyWindows returns the set of value's stretches of windowLen bytes, or nil if value is
// shorter than minWindowed.
func keyWindows(value string) *windows {
	if len(value) < minWindowed {
		return nil
	}
	w := &windows{set: make(map[string]bool, len(value)-windowLen+1)}
	for i := 0; i+windowLen <= len(value); i++ {
		w.set[value[i:i+windowLen]] = true
	}
	for i := range len(value) {
		w.in[value[i]] = true
	}
	return w
}

// windows are a secret's stretches of windowLen bytes, and the bytes it holds.
type windows struct {
	set map[string]bool
	in  [256]bool
}

// hide returns text with every stretch that the windows cover replaced by as, and whether it
// replaced any. Where the windowLen bytes at a position hold one the secret does not, no
// window holding it can match, and the search moves past it: text is mostly short words.
func (w *windows) hide(text, as string) (string, bool) {
	var b strings.Builder
	written, from, to := 0, -1, -1 // text[:written] is in b; text[from:to] is the stretch to hide
	for i := 0; i+windowLen <= len(text); {
		if j := w.lastNotIn(text[i : i+windowLen]); j >= 0 {
			i += j + 1
			continue
		}
		if w.set[text[i:i+windowLen]] {
			if from >= 0 && i <= to {
				to = i + windowLen
			} else {
				if from >= 0 {
					b.WriteString(text[written:from])
					b.WriteString(as)
					written = to
				}
				from, to = i, i+windowLen
			}
		}
		i++
	}
	if from < 0 {
		return text, false
	}
	b.WriteString(text[written:from])
	b.WriteString(as)
	b.WriteString(text[to:])
	return b.String(), true
}

// lastNotIn is the index of the last byte of s that the secret does not hold, or -1.
func (w *windows) lastNotIn(s string) int {
	for j := len(s) - 1; j >= 0; j-- {
		if !w.in[s[j]] {
			return j
		}
	}
	return -1
}

// encodedPattern returns what matches value written with any of its characters that are not
// ASCII letters or digits encoded as a server, a proxy or this tool's own output may write it:
// after backslashes (JSON's \" and \\) or doubled (CSV's ""), percent-encoded (%5F, %5f), a
// \x or \u escape (one backslash, or two once the text is JSON), an HTML character reference
// (&#95;, &#x5F;; its & possibly \u0026 in JSON). A key quoted back so encoded is still the
// key to whoever reads it, and is neither value nor what redact.Keys recognizes. Letters and
// digits are left alone: nothing escapes them.
func encodedPattern(value string) (*regexp.Regexp, string) {
	var b strings.Builder
	var hint, run string
	escaped := false
	for _, r := range value {
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			if run += string(r); len(run) > len(hint) {
				hint = run
			}
			continue
		}
		run = ""
		if r >= utf8.RuneSelf {
			b.WriteString(regexp.QuoteMeta(string(r)))
			continue
		}
		escaped = true
		fmt.Fprintf(&b, `(?:\\*%[1]s|%[1]s%[1]s|%%(?i:%02[2]x)|\\{1,2}(?:x|u00)(?i:%02[2]x)|(?:&|\\{1,2}u0026)#(?:0*%[2]d|(?i:x)0*(?i:%02[2]x));)`,
			regexp.QuoteMeta(string(r)), r)
	}
	if !escaped {
		return nil, ""
	}
	return regexp.MustCompile(b.String()), hint
}

type scrubber struct {
	w       io.Writer
	secrets []secret
}

func (s scrubber) Write(p []byte) (int, error) {
	text, found := string(p), false
	for _, sec := range s.secrets {
		if strings.Contains(text, sec.value) {
			text, found = strings.ReplaceAll(text, sec.value, sec.as), true
		}
		if sec.encoded != nil && strings.Contains(text, sec.hint) {
			if t := sec.encoded.ReplaceAllLiteralString(text, sec.as); t != text {
				text, found = t, true
			}
		}
		if sec.windows != nil {
			if t, ok := sec.windows.hide(text, sec.as); ok {
				text, found = t, true
			}
		}
	}
	if !found {
		return s.w.Write(p)
	}
	if _, err := io.WriteString(s.w, text); err != nil {
		return 0, err
	}
	return len(p), nil
}
