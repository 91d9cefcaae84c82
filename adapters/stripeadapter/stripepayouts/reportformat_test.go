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

// A report written otherwise than the fake writes it, but saying the same (a BOM, CRLF line
// ends, every cell quoted, the columns in another order, a column not asked for, a header in
// capitals), is served as it is: no payout is listed, and the findings are listing's.
func TestAReportWrittenOtherwiseIsServed(t *testing.T) {
	tests := []struct {
		name     string
		contents func(t testing.TB) func([]byte) []byte
	}{
		{"a byte order mark", func(testing.TB) func([]byte) []byte {
			return func(b []byte) []byte { return append([]byte("\ufeff"), b...) }
		}},
		{"CRLF line ends", func(testing.TB) func([]byte) []byte {
			return func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }
		}},
		{"every cell quoted", func(t testing.TB) func([]byte) []byte {
			return func(b []byte) []byte {
				recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
				if err != nil {
					t.Error(err)
				}
				var out bytes.Buffer
				for _, r := range recs {
					for i, c := range r {
						if i > 0 {
							out.WriteByte(',')
						}
						out.WriteString(`"` + strings.ReplaceAll(c, `"`, `""`) + `"`)
					}
					out.WriteByte('\n')
				}
				return out.Bytes()
			}
		}},
		{"the columns reversed", func(t testing.TB) func([]byte) []byte {
			return editReport(t, func(header []string, rows [][]string) ([]string, [][]string) {
				slices.Reverse(header)
				for _, r := range rows {
					slices.Reverse(r)
				}
				return header, rows
			})
		}},
		{"a column not asked for", func(t testing.TB) func([]byte) []byte {
			return editReport(t, func(header []string, rows [][]string) ([]string, [][]string) {
				header = append(header, "payout_expected_arrival_date")
				for i := range rows {
					rows[i] = append(rows[i], "2024-01-10")
				}
				return header, rows
			})
		}},
		{"a header in capitals", func(t testing.TB) func([]byte) []byte {
			return editReport(t, func(header []string, rows [][]string) ([]string, [][]string) {
				for i := range header {
					header[i] = strings.ToUpper(header[i])
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
			w.srv.ResetLog()
			viaReport := sweepTwice(t, w, reportLister(t, w.srv, stripepayouts.ReportOptions{}, log), "report")
			if n := w.srv.Requests(stripetest.ListBalanceTransactions); n != 0 || strings.Contains(log.String(), "listed one by one") {
				t.Errorf("the report was not served (%d listings): %s", n, log.String())
			}
			viaList := sweepTwice(t, w, newLister(t, w.srv, stripepayouts.Config{PerPage: 2}), "list")
			if !maps.Equal(viaReport, viaList) {
				t.Errorf("through the report %v\nthrough listing %v", viaReport, viaList)
			}
		})
	}
}
