package stripeadapter

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reconcilekit/reconcile"
)

func TestPlanWindows(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	unix := base.Unix()
	skew := 5 * time.Minute
	// rows returns n lookups r<from>..r<from+n-1>, created every apart after at.
	rows := func(from, n int, at time.Time, apart time.Duration) []reconcile.Lookup {
		var ls []reconcile.Lookup
		for i := range n {
			ls = append(ls, reconcile.Lookup{ExternalID: fmt.Sprintf("r%d", from+i), CreatedAt: at.Add(time.Duration(i) * apart)})
		}
		return ls
	}
	ids := func(from, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("r%d", from+i))
		}
		return out
	}
	join := func(parts ...[]reconcile.Lookup) []reconcile.Lookup {
		var out []reconcile.Lookup
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name string
		rows []reconcile.Lookup
		want []listWindow
	}{
		{"no rows, no window", nil, nil},
		{"one row is left to a retrieve", rows(1, 1, base, 0), nil},
		{"rows ten seconds apart share a window, the skew either side", rows(1, 100, base, 10*time.Second),
			[]listWindow{{from: unix - 300, to: unix + 990 + 300, rows: ids(1, 100), top: unix + 990, marginPages: 1}}},
		{"the upper bound is rounded up to Stripe's whole seconds", rows(1, 2, base.Add(time.Second/2), time.Second),
			[]listWindow{{from: unix - 300, to: unix + 302, rows: ids(1, 2), top: unix + 1, marginPages: 1}}},
		{"a row a second: the skew above holds three pages", rows(1, 1000, base, time.Second),
			[]listWindow{{from: unix - 300, to: unix + 999 + 300, rows: ids(1, 1000), top: unix + 999, marginPages: 3}}},
		{"the margin is never more than a page a hundred rows", rows(1, 150, base, time.Second),
			[]listWindow{{from: unix - 300, to: unix + 149 + 300, rows: ids(1, 150), top: unix + 149, marginPages: 2}}},
		{"a gap of more than twice the skew and a hundred times the rows' spacing splits them, unlisted",
			join(rows(1, 3, base, time.Second), rows(4, 3, base.Add(time.Hour), time.Second)),
			[]listWindow{
				{from: unix - 300, to: unix + 2 + 300, rows: ids(1, 3), top: unix + 2, marginPages: 1},
				{from: unix + 3600 - 300, to: unix + 3602 + 300, rows: ids(4, 3), top: unix + 3602, marginPages: 1},
			}},
		{"a gap of fewer than a hundred times the rows' spacing does not",
			join(rows(1, 3, base, time.Minute), rows(4, 3, base.Add(22*time.Minute), time.Minute)),
			[]listWindow{{from: unix - 300, to: unix + 1440 + 300, rows: ids(1, 6), top: unix + 1440, marginPages: 1}}},
		{"nor one within twice the skew",
			join(rows(1, 3, base, time.Second), rows(4, 3, base.Add(5*time.Minute), time.Second)),
			[]listWindow{{from: unix - 300, to: unix + 302 + 300, rows: ids(1, 6), top: unix + 302, marginPages: 1}}},
		{"rows an hour apart, as far apart as they usually are, share a window",
			rows(1, 5, base, time.Hour),
			[]listWindow{{from: unix - 300, to: unix + 4*3600 + 300, rows: ids(1, 5), top: unix + 4*3600, marginPages: 1}}},
		{"a lone row between two groups goes to a retrieve",
			join(rows(1, 3, base, time.Second), rows(4, 1, base.Add(time.Hour), 0), rows(5, 3, base.Add(2*time.Hour), time.Second)),
			[]listWindow{
				{from: unix - 300, to: unix + 302, rows: ids(1, 3), top: unix + 2, marginPages: 1},
				{from: unix + 7200 - 300, to: unix + 7202 + 300, rows: ids(5, 3), top: unix + 7202, marginPages: 1},
			}},
		{"ten rows in the newest second are an import: the window is dense at its top",
			join(rows(1, 5, base, time.Minute), rows(6, 10, base.Add(5*time.Minute), time.Millisecond)),
			[]listWindow{{from: unix - 300, to: unix + 300 + 301, rows: ids(1, 15), top: unix + 300, denseTop: true, marginPages: 1}}},
		{"nine are not", join(rows(1, 5, base, time.Minute), rows(6, 9, base.Add(5*time.Minute), time.Millisecond)),
			[]listWindow{{from: unix - 300, to: unix + 300 + 301, rows: ids(1, 14), top: unix + 300, marginPages: 1}}},
		{"rows are ordered oldest first, the batch's order kept among equals",
			[]reconcile.Lookup{{ExternalID: "b", CreatedAt: base.Add(time.Second)}, {ExternalID: "c", CreatedAt: base}, {ExternalID: "a", CreatedAt: base}},
			[]listWindow{{from: unix - 300, to: unix + 301, rows: []string{"c", "a", "b"}, top: unix + 1, marginPages: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planWindows(tt.rows, skew)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(listWindow{})); diff != "" {
				t.Errorf("planWindows (-want +got):\n%s", diff)
			}
		})
	}
}
