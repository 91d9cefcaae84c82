package tieout

import (
	"strconv"
	"testing"
)

// BenchmarkClassify ties out a payout of n lines, each a charge booked right, as a step does
// once it has listed them: the cost of the judging alone.
func BenchmarkClassify(b *testing.B) {
	for _, n := range []int{100, 50_000} {
		members := make([]Member, 0, n)
		booked := make([]Booked, 0, n)
		var sum int64
		for i := range n {
			id := strconv.Itoa(i)
			members = append(members, charge("txn_"+id, "pi_"+id, 1000, 59))
			booked = append(booked, book(KindPayment, "pi_"+id, 1000))
			sum += 941
		}
		g := payout(sum)
		b.Run(strconv.Itoa(n)+"_lines", func(b *testing.B) {
			for b.Loop() {
				if fs := (Policy{}).Classify(g, members, booked); len(fs) != 0 {
					b.Fatal(summary(fs))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/line")
		})
	}
}
