// Package hostile holds the statuses a hostile or broken server may send in place of Stripe's,
// and the check that a finding kind made of one is as findings keep kinds: the Stripe packages'
// tests of hostile answers share them.
package hostile

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reconcilekit/reconcile"
)

// Statuses are statuses a server (a proxy in between, a broken or hostile one) may send in
// place of Stripe's: JSON carries NUL and control characters, and any length.
var Statuses = []string{
	"succeeded\x00",
	"succeeded\nlevel=ERROR msg=forged",
	"\u202esucceeded",
	"sk_live_0123456789abcdefSECRET succeeded",
	strings.Repeat("x", 10_000),
}

// PrintableKind reports whether kind is as findings keep kinds: printable UTF-8 of at most
// reconcile.MaxKind bytes.
func PrintableKind(kind string) bool {
	return utf8.ValidString(kind) && len(kind) <= reconcile.MaxKind &&
		!strings.ContainsFunc(kind, func(r rune) bool { return !unicode.IsPrint(r) })
}
