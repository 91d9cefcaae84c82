package stripepayouts

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
)

func TestParseMinorIsExact(t *testing.T) {
	tests := []struct {
		in, currency string
		want         int64
		err          string
	}{
		{"12.34", "usd", 1234, ""},
		{"-0.05", "usd", -5, ""},
		{"12.3", "usd", 1230, ""},
		{"12", "usd", 1200, ""},
		{"-0", "usd", 0, ""},
		{"1000", "jpy", 1000, ""},
		{"1.000", "kwd", 1000, ""},
		{"0.1", "USD", 10, ""},
		{"92233720368547758.07", "usd", math.MaxInt64, ""},
		{"-92233720368547758.07", "usd", -math.MaxInt64, ""},
		{"92233720368547758.08", "usd", 0, "out of range"},
		{"-92233720368547758.08", "usd", 0, "out of range"},
		{"12.345", "usd", 0, "more decimals"},
		{"12.340", "usd", 0, "more decimals"},
		{"1.5", "jpy", 0, "more decimals"},
		{"", "usd", 0, "not a decimal"},
		{"-", "usd", 0, "not a decimal"},
		{"12.", "usd", 0, "not a decimal"},
		{".5", "usd", 0, "not a decimal"},
		{"+1", "usd", 0, "not a decimal"},
		{"1e3", "usd", 0, "not a decimal"},
		{"1,000.00", "usd", 0, "not a decimal"},
		{" 1", "usd", 0, "not a decimal"},
		{"--1", "usd", 0, "not a decimal"},
		{"١٢", "usd", 0, "not a decimal"},
		{"0.1000000000000000000001", "usd", 0, "more decimals"},
	}
	for _, tt := range tests {
		got, err := parseMinor(tt.in, tt.currency)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("parseMinor(%q, %s) = %d, %v; want %d", tt.in, tt.currency, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("parseMinor(%q, %s) = %d, %v; want an error saying %q", tt.in, tt.currency, got, err, tt.err)
		}
	}
}

// reportHeader is the header of the report a ReportLister asks for, in its order.
var reportHeader = strings.Join(reportColumns, ",") + "\n"

func FuzzParseReport(f *testing.F) {
	f.Add([]byte(reportHeader + "po_1A,txn_1A,charge,usd,12.34,0.66,11.68,ch_1,ch_1,pi_1,10.00,eur,2024-01-03 00:00:00\n"))
	f.Add([]byte(reportHeader + "po_1A,txn_1A,refund,jpy,-100,0,-100,re_1,ch_1,pi_1,-100,jpy,\n"))
	f.Add([]byte(reportHeader + "po_1A,txn_1A,fee,usd,-1.00,0.00,-1.00,,,,,,\npo_1A,txn_1B,payout_reversal,usd,5,0,5,po_0,,,,,\n"))
	f.Add([]byte("\ufeff" + reportHeader + `"po_1A","txn_1A","charge","usd","1","0","1","","","","","",""` + "\n"))
	f.Add([]byte(reportHeader + "po_1A,txn_1A,charge,usd,1,0,1,\x00,,,,,\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		lines, err := parseReport(b, map[string]bool{"po_1A": true})
		if err != nil {
			if lines != nil {
				t.Fatal("lines with an error")
			}
			return
		}
		seen := map[string]bool{}
		for po, ls := range lines {
			if po != "po_1A" {
				t.Fatalf("a line of %s, not asked for", po)
			}
			for _, l := range ls {
				if l.Payout != po || seen[l.BalanceTransaction] || !validTxnID(l.BalanceTransaction) || len(l.Currency) != 3 {
					t.Fatalf("line %+v", l)
				}
				seen[l.BalanceTransaction] = true
			}
		}
	})
}

func FuzzParseMinor(f *testing.F) {
	for _, s := range []string{"12.34", "-0.05", "1000", "1.000", "92233720368547758.07", "1e3", "", "-"} {
		f.Add(s, "usd")
	}
	f.Add("100", "jpy")
	f.Add("1.234", "kwd")
	f.Fuzz(func(t *testing.T, s, currency string) {
		n, err := parseMinor(s, currency)
		if err != nil {
			return
		}
		if n == math.MinInt64 {
			t.Fatalf("%q read as the smallest int64, which cannot be negated", s)
		}
		// Written back with the currency's decimals, n is s, normalized.
		exp := reconcile.CurrencyExponent(currency)
		digits, neg := strings.CutPrefix(s, "-")
		whole, frac, _ := strings.Cut(digits, ".")
		whole = strings.TrimLeft(whole, "0")
		if whole == "" {
			whole = "0"
		}
		frac += strings.Repeat("0", exp-len(frac))
		want := whole
		if exp > 0 {
			want += "." + frac
		}
		if neg && strings.Trim(whole+frac, "0") != "" {
			want = "-" + want
		}
		m := strconv.FormatInt(n, 10)
		sign := ""
		if m[0] == '-' {
			sign, m = "-", m[1:]
		}
		m = strings.Repeat("0", max(0, exp+1-len(m))) + m
		got := sign + m[:len(m)-exp]
		if exp > 0 {
			got += "." + m[len(m)-exp:]
		}
		if got != want {
			t.Fatalf("parseMinor(%q, %q) = %d, written back %q, want %q", s, currency, n, got, want)
		}
	})
}
