package stripepayouts

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkParseReport64MiB parses a report file of DefaultReportMaxBytes, of realistic rows
// and of the shortest a hostile host could write, and reports the heap in use once it is
// parsed, the file included (heap-MiB), and the lines read:
//
//	go test -run '^$' -bench ParseReport64MiB -benchtime 1x ./stripepayouts
func BenchmarkParseReport64MiB(b *testing.B) {
	for _, tt := range []struct{ name, row string }{
		{"realistic", "po_1A,txn_1PzQ7aLkdIwHu7ix%08d,charge,usd,12.34,0.66,11.68,ch_3PzQ7aLkdIwHu7ix0Ab1Cd2E," +
			"ch_3PzQ7aLkdIwHu7ix0Ab1Cd2E,pi_3PzQ7aLkdIwHu7ix0Ab1Cd2E,12.34,usd,2024-01-10 00:00:00\n"},
		{"shortest", "po_1A,txn_%d,fee,usd,0,0,0,,,,,,\n"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			var f bytes.Buffer
			f.WriteString(strings.Join(reportColumns, ",") + "\n")
			for i := 0; f.Len() < DefaultReportMaxBytes; i++ {
				fmt.Fprintf(&f, tt.row, i)
			}
			data := f.Bytes()[:DefaultReportMaxBytes]
			data = data[:bytes.LastIndexByte(data, '\n')+1]
			for b.Loop() {
				lines, err := parseReport(data, map[string]bool{"po_1A": true})
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				b.ReportMetric(float64(m.HeapInuse>>20), "heap-MiB")
				b.ReportMetric(float64(len(lines["po_1A"])), "lines")
			}
		})
	}
}
