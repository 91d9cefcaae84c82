package reconcile

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFormatAmount(t *testing.T) {
	for _, tc := range []struct {
		minor    int64
		currency string
		want     string
	}{
		{1000, "usd", "USD 10.00"},
		{123450, "USD", "USD 1,234.50"},
		{5, "eur", "EUR 0.05"},
		{0, "usd", "USD 0.00"},
		{1000, "jpy", "JPY 1,000"},
		{1234567, "JPY", "JPY 1,234,567"},
		{0, "krw", "KRW 0"},
		{1000, "kwd", "KWD 1.000"},
		{1, "bhd", "BHD 0.001"},
		{-250, "usd", "USD -2.50"},
		{-1000, "jpy", "JPY -1,000"},
		{999, "xyz", "XYZ 9.99"},
		{1000, "", "1000"},
		{math.MinInt64, "usd", "USD -92,233,720,368,547,758.08"},
		{math.MaxInt64, "jpy", "JPY 9,223,372,036,854,775,807"},
	} {
		if got := FormatAmount(tc.minor, tc.currency); got != tc.want {
			t.Errorf("FormatAmount(%d, %q) = %q, want %q", tc.minor, tc.currency, got, tc.want)
		}
	}
}

func TestCurrencyExponent(t *testing.T) {
	for c, want := range map[string]int{"usd": 2, "JPY": 0, "jpy": 0, "KWD": 3, "tnd": 3, "": 2, "eur": 2, "vnd": 0} {
		if got := CurrencyExponent(c); got != want {
			t.Errorf("CurrencyExponent(%q) = %d, want %d", c, got, want)
		}
	}
}

func TestStorableDiffs(t *testing.T) {
	long := strings.Repeat("x", 500)
	diffs := []Diff{{Field: "amount", Local: long, External: "é" + long}, {Field: "ok", Local: "1", External: "2"}}
	got := storableDiffs(diffs)
	if len(got[0].Local) > MaxDiffValue || len(got[0].External) > MaxDiffValue || !utf8.ValidString(got[0].External) {
		t.Errorf("not cut on a rune boundary within %d bytes: %d, %d bytes", MaxDiffValue, len(got[0].Local), len(got[0].External))
	}
	if got[1] != diffs[1] {
		t.Errorf("a short diff changed: %+v", got[1])
	}
	if len(diffs[0].Local) != 500 {
		t.Error("storableDiffs changed its argument")
	}
	same := []Diff{{Field: "a", Local: "1", External: "2"}}
	if got := storableDiffs(same); &got[0] != &same[0] {
		t.Error("storableDiffs copied diffs it did not change")
	}
	if got := storableDiffs(make([]Diff, MaxDiffs+3)); len(got) != MaxDiffs {
		t.Errorf("%d diffs kept, want %d", len(got), MaxDiffs)
	}
	if err := (Decision{Verdict: NeedsReview, Kind: "k", Diffs: []Diff{{Local: "1"}}}).Validate(); err == nil {
		t.Error("a diff without a field passed Validate")
	}
}
