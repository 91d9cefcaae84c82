package stripepayouts

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/internal/shared/redact"
)

// reportColumns are the columns a report run asks for (parameters[columns][]), and those its
// file's header must have: each once, in any order and any case; a column not asked for (Stripe
// adds some over time) is left unread.
var reportColumns = []string{"automatic_payout_id", "balance_transaction_id", "reporting_category", "currency", "gross", "fee", "net",
	"source_id", "charge_id", "payment_intent_id", "customer_facing_amount", "customer_facing_currency", "available_on_utc"}

// maxCell bounds a report cell: ids, codes, decimals and times, none longer at Stripe.
const maxCell = 255

// reportTimeLayout is how the report writes its _utc times.
const reportTimeLayout = "2006-01-02 15:04:05"

// parseReport reads an itemized payout reconciliation report: its lines by payout, in the
// file's order. Every row must be a line of a payout in asked (those the page holds): a row
// of another payout, a duplicate balance transaction, a header without one of reportColumns, a
// cell that is not printable UTF-8, is longer than maxCell or holds what looks like an API key,
// or a value that does not read is an error naming the row, never a line dropped. The file is
// Stripe's answer, read as hostile: an error names a row and a column, never quotes a cell or
// the header (a cell may hold a key in a form redaction cannot see, "sk%5Flive_...").
func parseReport(b []byte, asked map[string]bool) (map[string][]stripepolicy.ReportLine, error) {
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	if !utf8.Valid(b) {
		return nil, errors.New("the file is not UTF-8")
	}
	r := csv.NewReader(bytes.NewReader(b))
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("the header does not read: %v", err)
	}
	col := make(map[string]int, len(reportColumns))
	for i, h := range header {
		if len(h) > maxCell || !printable(h) {
			return nil, fmt.Errorf("header cell %d is not a column name", i+1)
		}
		h = strings.ToLower(h)
		if j, dup := col[h]; dup {
			return nil, fmt.Errorf("header cells %d and %d name the same column", j+1, i+1)
		}
		col[h] = i
	}
	for _, c := range reportColumns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("the header lacks the column %s", c)
		}
	}
	r.FieldsPerRecord = len(header)
	lines := make(map[string][]stripepolicy.ReportLine)
	seen := make(map[string]bool)
	for row := 2; ; row++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("row %d does not read: %v", row, err)
		}
		line, err := reportLine(rec, col)
		if err != nil {
			return nil, fmt.Errorf("row %d: %v", row, err)
		}
		switch {
		case seen[line.BalanceTransaction]:
			return nil, fmt.Errorf("row %d: balance transaction %s is listed twice", row, line.BalanceTransaction)
		case !asked[line.Payout]:
			return nil, fmt.Errorf("row %d: balance transaction %s is of payout %s, which the page does not hold", row,
				line.BalanceTransaction, line.Payout)
		}
		seen[line.BalanceTransaction] = true
		lines[line.Payout] = append(lines[line.Payout], line)
	}
	return lines, nil
}

// reportLine reads one row: its cells of reportColumns, the others left unread.
func reportLine(rec []string, col map[string]int) (stripepolicy.ReportLine, error) {
	for _, name := range reportColumns {
		i := col[name]
		if c := rec[i]; len(c) > maxCell {
			return stripepolicy.ReportLine{}, fmt.Errorf("%s is %d bytes long, more than a report's cell holds", name, len(c))
		} else if !printable(c) {
			return stripepolicy.ReportLine{}, fmt.Errorf("%s holds a control character", name)
		} else if redact.Keys(c) != c {
			// An id's shape admits a key (sk_live_ and letters and digits): a server or proxy
			// echoing it would have it stored in a finding.
			return stripepolicy.ReportLine{}, fmt.Errorf("%s holds what looks like an API key", name)
		}
	}
	get := func(c string) string { return rec[col[c]] }
	l := stripepolicy.ReportLine{Payout: get("automatic_payout_id"), BalanceTransaction: get("balance_transaction_id"),
		ReportingCategory: get("reporting_category"), SourceID: get("source_id"), ChargeID: get("charge_id"),
		PaymentIntentID: get("payment_intent_id")}
	switch {
	case !stripeadapter.ValidPayoutID(l.Payout):
		return l, errors.New("automatic_payout_id is not a payout id")
	case !validTxnID(l.BalanceTransaction):
		return l, errors.New("balance_transaction_id is not a balance transaction id")
	case !validCategory(l.ReportingCategory):
		return l, errors.New("reporting_category is not a category name")
	}
	for _, c := range []string{"source_id", "charge_id", "payment_intent_id"} {
		if v := get(c); v != "" && !validObjectID(v) {
			return l, fmt.Errorf("%s is not an object id", c)
		}
	}
	var err error
	if l.Currency, err = currencyCode(get("currency")); err != nil {
		return l, fmt.Errorf("currency: %v", err)
	}
	for _, f := range []struct {
		col string
		to  *int64
	}{{"gross", &l.Gross}, {"fee", &l.Fee}, {"net", &l.Net}} {
		if *f.to, err = parseMinor(get(f.col), l.Currency); err != nil {
			return l, fmt.Errorf("%s: %v", f.col, err)
		}
	}
	switch cfa, cfc := get("customer_facing_amount"), get("customer_facing_currency"); {
	case cfa == "" && cfc == "":
	case cfa == "" || cfc == "":
		return l, errors.New("customer_facing_amount and customer_facing_currency are not both given")
	default:
		if l.CustomerFacingCurrency, err = currencyCode(cfc); err != nil {
			return l, fmt.Errorf("customer_facing_currency: %v", err)
		}
		if l.CustomerFacingAmount, err = parseMinor(cfa, l.CustomerFacingCurrency); err != nil {
			return l, fmt.Errorf("customer_facing_amount: %v", err)
		}
	}
	if v := get("available_on_utc"); v != "" {
		t, err := time.Parse(reportTimeLayout, v)
		if err != nil {
			return l, fmt.Errorf("available_on_utc is not a time (%s)", reportTimeLayout)
		}
		l.AvailableOn = t
	}
	return l, nil
}

// parseMinor reads a decimal amount in major units of currency, as the report writes gross,
// fee and net ("-12.34", "1000" for JPY), into minor units, exactly: no float, no more
// decimals than the currency has, within int64 (its smallest value aside, so that any amount
// can be negated). Its errors do not quote s, a report's cell.
func parseMinor(s, currency string) (int64, error) {
	exp := reconcile.CurrencyExponent(currency)
	digits, neg := strings.CutPrefix(s, "-")
	whole, frac, dot := strings.Cut(digits, ".")
	switch {
	case whole == "" || dot && frac == "" || !allDigits(whole) || !allDigits(frac):
		return 0, errors.New("not a decimal amount")
	case len(frac) > exp:
		return 0, fmt.Errorf("more decimals than %s's %d", strings.ToUpper(currency), exp)
	}
	n, err := strconv.ParseInt(whole+frac+strings.Repeat("0", exp-len(frac)), 10, 64)
	if err != nil {
		return 0, errors.New("out of range")
	}
	if neg {
		n = -n
	}
	return n, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// currencyCode reads an ISO 4217 code, three letters, lowercase as Stripe writes them. Its
// error does not quote s, a report's cell.
func currencyCode(s string) (string, error) {
	if len(s) != 3 || strings.ContainsFunc(s, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') }) {
		return "", errors.New("not a currency code")
	}
	return strings.ToLower(s), nil
}

// validCategory reports whether s is shaped as a reporting category: lowercase letters and
// underscores. Which categories the policy knows is stripepolicy's to say.
func validCategory(s string) bool {
	return s != "" && len(s) <= 64 && !strings.ContainsFunc(s, func(r rune) bool { return !('a' <= r && r <= 'z' || r == '_') })
}

// validObjectID reports whether s is shaped as a Stripe object id: letters, digits and
// underscores.
func validObjectID(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_')
	})
}

// printable reports whether s holds no control character (NUL, a newline, DEL, ...).
func printable(s string) bool {
	return !strings.ContainsFunc(s, unicode.IsControl)
}
