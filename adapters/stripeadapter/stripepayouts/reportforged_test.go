package stripepayouts_test

import (
	"bytes"
	"encoding/csv"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// editReport returns a Contents rewrite that reads the report's CSV, lets edit change its
// header and rows, and writes it back.
func editReport(t testing.TB, edit func(header []string, rows [][]string) ([]string, [][]string)) func([]byte) []byte {
	return func(b []byte) []byte {
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil || len(recs) < 3 {
			t.Errorf("the fake's report does not read, or has fewer than two rows: %v", err)
			return b
		}
		header, rows := edit(recs[0], recs[1:])
		var out bytes.Buffer
		w := csv.NewWriter(&out)
		w.Write(header)
		w.WriteAll(rows)
		return out.Bytes()
	}
}

// editRows sets, in each row that match selects, column col to what f makes of it.
func editRows(t testing.TB, match func(get func(string) string) bool, col string, f func(string) string) func([]byte) []byte {
	return editReport(t, func(header []string, rows [][]string) ([]string, [][]string) {
		at := slices.Index(header, col)
		n := 0
		for _, r := range rows {
			get := func(c string) string { return r[slices.Index(header, c)] }
			if match(get) {
				r[at] = f(r[at])
				n++
			}
		}
		if n == 0 {
			t.Errorf("no row to edit in %s", col)
		}
		return header, rows
	})
}

func category(c string) func(get func(string) string) bool {
	return func(get func(string) string) bool { return get("reporting_category") == c }
}

// A report whose lines still sum to their payouts but say what listing would not (a line in
// another currency than its payout's, a net that is not its gross minus its fee, a charge
// without its presentment amount) must not make findings of its own: the tie-out would judge
// such lines invalid, or their source unread, where listing finds them right. Each makes the
// payout listed one by one, and the findings are listing's.
func TestAReportThatContradictsListingIsNotServed(t *testing.T) {
	tests := []struct {
		name     string
		contents func(t testing.TB) func([]byte) []byte
	}{
		{"a charge in another currency than the payout's", func(t testing.TB) func([]byte) []byte {
			return editRows(t, category("charge"), "currency", func(string) string { return "eur" })
		}},
		{"a charge whose gross is not its net plus its fee", func(t testing.TB) func([]byte) []byte {
			return editRows(t, category("charge"), "gross", func(s string) string { return "1" + s })
		}},
		{"charges without their customer facing amount", func(t testing.TB) func([]byte) []byte {
			return editReport(t, func(header []string, rows [][]string) ([]string, [][]string) {
				for _, r := range rows {
					if r[slices.Index(header, "reporting_category")] == "charge" {
						r[slices.Index(header, "customer_facing_amount")] = ""
						r[slices.Index(header, "customer_facing_currency")] = ""
					}
				}
				return header, rows
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.srv.SetReporting(stripetest.Reporting{DataAvailableEnd: t0.Add(365 * 24 * time.Hour), Contents: tt.contents(t)})
			log := &logBuffer{}
			viaReport := sweepTwice(t, w, reportLister(t, w.srv, stripepayouts.ReportOptions{}, log), "report")
			viaList := sweepTwice(t, w, newLister(t, w.srv, stripepayouts.Config{PerPage: 2}), "list")
			if !maps.Equal(viaReport, viaList) {
				t.Errorf("through the report %v\nthrough listing %v", viaReport, viaList)
			}
			if !strings.Contains(log.String(), "listed one by one") {
				t.Errorf("the report was served: %s", log.String())
			}
		})
	}
}
