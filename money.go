package reconcile

import (
	"strconv"
	"strings"
)

// Amounts are compared as integers in the currency's minor unit, as Stripe and most payment
// APIs give them: 1000 is ten dollars (USD, two decimals), a thousand yen (JPY, no decimals)
// and one dinar (KWD, three decimals). Nothing here converts between currencies; an amount is
// only ever compared with one in the same currency.

// zeroDecimal and threeDecimal are the ISO 4217 currencies Stripe documents as having no minor
// unit, and three decimals. Every other currency has two.
var (
	zeroDecimal  = set("BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "MGA", "PYG", "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF")
	threeDecimal = set("BHD", "JOD", "KWD", "OMR", "TND")
)

func set(codes ...string) map[string]bool {
	m := make(map[string]bool, len(codes))
	for _, c := range codes {
		m[c] = true
	}
	return m
}

// CurrencyExponent returns the number of decimals of an ISO 4217 currency code (in any case)
// as minor units count them: 0 for JPY, 3 for KWD, 2 for USD and for codes it does not know.
func CurrencyExponent(currency string) int {
	c := strings.ToUpper(currency)
	switch {
	case zeroDecimal[c]:
		return 0
	case threeDecimal[c]:
		return 3
	}
	return 2
}

// FormatAmount writes an amount in minor units for a person: the currency code in capitals,
// then the amount with its decimals and thousands separated, such as "USD 1,234.50",
// "JPY 1,000" or "KWD 1.000". An empty currency gives the bare number of minor units.
func FormatAmount(minor int64, currency string) string {
	if currency == "" {
		return strconv.FormatInt(minor, 10)
	}
	neg := minor < 0
	digits := strconv.FormatUint(absUint(minor), 10)
	exp := CurrencyExponent(currency)
	for len(digits) <= exp {
		digits = "0" + digits
	}
	whole, frac := digits[:len(digits)-exp], digits[len(digits)-exp:]
	var b strings.Builder
	b.WriteString(strings.ToUpper(currency))
	b.WriteByte(' ')
	if neg {
		b.WriteByte('-')
	}
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if exp > 0 {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}

// absUint is |n|, also for the smallest int64.
func absUint(n int64) uint64 {
	if n < 0 {
		return uint64(-(n + 1)) + 1
	}
	return uint64(n)
}
