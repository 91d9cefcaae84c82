package console

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

const (
	hour = time.Hour
	day  = 24 * time.Hour
)

func TestAgeBoundsPutTheSLOAmongRoundSpans(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		slo  time.Duration
		want []time.Duration
	}{
		{"a day's SLO", day, []time.Duration{hour, 6 * hour, day, 3 * day, 7 * day}},
		{"the default SLO of 3 days", reconcile.DefaultLagSLO, []time.Duration{6 * hour, day, 3 * day, 7 * day, 14 * day}},
		{"an SLO between rungs skips the rungs close to it", 30 * hour, []time.Duration{hour, 6 * hour, 30 * hour, 3 * day, 7 * day}},
		{"an SLO of 15 minutes", 15 * time.Minute, []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, hour, 6 * hour}},
		{"an SLO below every rung", 30 * time.Second, []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute}},
		{"an SLO above every rung", 730 * day, []time.Duration{90 * day, 365 * day, 730 * day}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ageBounds(tt.slo)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("ageBounds(%v) = %v, want %v", tt.slo, got, tt.want)
			}
			if err := coverageQuery(tt.slo).Validate(); err != nil {
				t.Fatalf("the overview's query is invalid: %v", err)
			}
		})
	}
}

func TestTheAgeChartLaysOutOneBarABucketAndMarksTheSLO(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		rows    []int64
		labels  []string
		counts  []string
		exact   []string
		summary string
		check   func(t *testing.T, a *ageChart)
	}{
		{
			name:    "rows in every bucket",
			rows:    []int64{500, 300, 120, 50, 20, 10},
			labels:  []string{"≤1h", "1h–6h", "6h–24h", "24h–3d", "3d–7d", ">7d"},
			counts:  []string{"500", "300", "120", "50", "20", "10"},
			exact:   []string{"500", "300", "120", "50", "20", "10"},
			summary: "1,000 rows: 920 (92%) last verified within the SLO of 24h, 80 (8.0%) longer ago.",
			check: func(t *testing.T, a *ageChart) {
				if h := a.Bars[0].H; h != a.Base-a.Top {
					t.Errorf("the largest bucket is %d high, want the plot's %d", h, a.Base-a.Top)
				}
				if a.Bars[1].H >= a.Bars[0].H || a.Bars[5].H >= a.Bars[4].H {
					t.Errorf("bar heights do not follow the counts: %+v", a.Bars)
				}
			},
		},
		{
			name:    "no rows",
			rows:    make([]int64, 6),
			labels:  []string{"≤1h", "1h–6h", "6h–24h", "24h–3d", "3d–7d", ">7d"},
			counts:  []string{"0", "0", "0", "0", "0", "0"},
			exact:   []string{"0", "0", "0", "0", "0", "0"},
			summary: "No rows.",
			check: func(t *testing.T, a *ageChart) {
				for _, b := range a.Bars {
					if b.H != 0 || b.Share != "0%" {
						t.Errorf("an empty bucket is drawn: %+v", b)
					}
				}
			},
		},
		{
			name:    "one bucket dominating",
			rows:    []int64{1_000_000_000, 1, 0, 0, 0, 3},
			labels:  []string{"≤1h", "1h–6h", "6h–24h", "24h–3d", "3d–7d", ">7d"},
			counts:  []string{"1.0B", "1", "0", "0", "0", "3"},
			exact:   []string{"1,000,000,000", "1", "0", "0", "0", "3"},
			summary: "1,000,000,004 rows: 1,000,000,001 (100%) last verified within the SLO of 24h, 3 (<0.1%) longer ago.",
			check: func(t *testing.T, a *ageChart) {
				if a.Bars[1].H != 2 || a.Bars[5].H != 2 {
					t.Errorf("a bucket of a few rows next to a billion is %d and %d high, want 2 (visible)", a.Bars[1].H, a.Bars[5].H)
				}
				if a.Bars[2].H != 0 {
					t.Errorf("an empty bucket is %d high", a.Bars[2].H)
				}
			},
		},
		{
			name:    "huge counts",
			rows:    []int64{math.MaxInt64 - 12_345_688, 0, 0, 0, 12_345_678, 10},
			labels:  []string{"≤1h", "1h–6h", "6h–24h", "24h–3d", "3d–7d", ">7d"},
			counts:  []string{"9.2E", "0", "0", "0", "12M", "10"},
			exact:   []string{"9,223,372,036,842,430,119", "0", "0", "0", "12,345,678", "10"},
			summary: "9,223,372,036,854,775,807 rows: 9,223,372,036,842,430,119 (100%) last verified within the SLO of 24h, 12,345,688 (<0.1%) longer ago.",
		},
		{
			name:    "counts whose total overflows",
			rows:    []int64{math.MaxInt64, 0, 0, 0, 0, math.MaxInt64},
			labels:  []string{"≤1h", "1h–6h", "6h–24h", "24h–3d", "3d–7d", ">7d"},
			counts:  []string{"9.2E", "0", "0", "0", "0", "9.2E"},
			exact:   []string{"9,223,372,036,854,775,807", "0", "0", "0", "0", "9,223,372,036,854,775,807"},
			summary: "More than 9,223,372,036,854,775,807 rows: 9,223,372,036,854,775,807 (50%) last verified within the SLO of 24h, 9,223,372,036,854,775,807 (50%) longer ago.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := newCoverageChart(reconcile.Coverage{Job: "sweep", Rows: tt.rows}, day, 0, time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			a := ch.Ages
			if a == nil {
				t.Fatal("no age chart")
			}
			var labels, counts, exact []string
			for _, b := range a.Bars {
				labels, counts, exact = append(labels, b.Label), append(counts, b.Count), append(exact, b.Exact)
				if b.Y+b.H != a.Base || b.X < a.Left || b.X+b.W > a.Right || b.CountY >= b.Y {
					t.Errorf("bar %s is out of the plot or under its count: %+v (plot %d–%d, base %d)", b.Label, b, a.Left, a.Right, a.Base)
				}
			}
			if !slices.Equal(labels, tt.labels) || !slices.Equal(counts, tt.counts) || !slices.Equal(exact, tt.exact) {
				t.Errorf("labels %q, counts %q, exact %q; want %q, %q, %q", labels, counts, exact, tt.labels, tt.counts, tt.exact)
			}
			if a.Summary != tt.summary {
				t.Errorf("summary %q, want %q", a.Summary, tt.summary)
			}
			// The SLO (24h) ends bucket 2: its line is between bars 2 and 3, which is the
			// first past it.
			if a.SLOLabel != "SLO 24h" || a.SLOX <= a.Bars[2].X+a.Bars[2].W || a.SLOX >= a.Bars[3].X {
				t.Errorf("the SLO %q is drawn at %d, not between bar 2 (%d+%d) and bar 3 (%d)", a.SLOLabel, a.SLOX, a.Bars[2].X, a.Bars[2].W, a.Bars[3].X)
			}
			for i, b := range a.Bars {
				if b.PastSLO != (i > 2) {
					t.Errorf("bar %s past the SLO: %v", b.Label, b.PastSLO)
				}
			}
			if !a.HasPast {
				t.Error("no bucket is marked past the SLO")
			}
			if tt.check != nil {
				tt.check(t, a)
			}
		})
	}
}

func TestTheSLOMayBeTheLastBound(t *testing.T) {
	t.Parallel()
	// An SLO above every rung of the ladder: only the last bucket is past it.
	slo := 730 * day
	ch, err := newCoverageChart(reconcile.Coverage{Rows: []int64{1, 2, 3, 4}}, slo, 0, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	a := ch.Ages
	if a.SLOLabel != "SLO 730d" || !a.Bars[3].PastSLO || a.Bars[2].PastSLO || a.Bars[3].Label != ">730d" {
		t.Fatalf("%q, bars %+v", a.SLOLabel, a.Bars)
	}
}

func TestACoverageThatCannotBeDrawnIsShownAsWhatItIs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		cov         reconcile.Coverage
		err         string // a coverage that does not answer the query
		unknown     string
		estimatedTo bool
	}{
		{name: "unknown, with the store's reason", cov: reconcile.Coverage{Unknown: "Available once the job completes a cycle with lag marks.", Estimated: true},
			unknown: "Available once the job completes a cycle with lag marks."},
		{name: "unknown, without a reason", cov: reconcile.Coverage{}, unknown: "The store did not say how long the rows have gone unverified."},
		{name: "estimated", cov: reconcile.Coverage{Rows: make([]int64, 6), Estimated: true}, estimatedTo: true},
		{name: "too few buckets", cov: reconcile.Coverage{Job: "sweep", Rows: make([]int64, 5)}, err: `coverage of job "sweep" has 5 buckets, want 6`},
		{name: "a negative count", cov: reconcile.Coverage{Job: "sweep", Rows: []int64{1, 2, -3, 0, 0, 0}}, err: "-3 rows in bucket 2"},
		{name: "a negative sample", cov: reconcile.Coverage{Job: "sweep", Open: []reconcile.OpenSample{{Open: -1}}}, err: "-1 open findings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := newCoverageChart(tt.cov, day, 0, time.UTC)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ch.Unknown != tt.unknown || (ch.Ages == nil) != (tt.unknown != "") || ch.Estimated != tt.estimatedTo {
				t.Fatalf("chart %+v; want unknown %q, estimated %v", ch, tt.unknown, tt.estimatedTo)
			}
		})
	}
}

func TestTheOpenChartShowsEachDaysValue(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	var samples []reconcile.OpenSample
	values := []int{0, 2, 3, 3, 7, 12, 12, 9, 8, 8, 5, 4, 4, 6}
	for i, v := range values {
		samples = append(samples, reconcile.OpenSample{At: now.Add(-time.Duration(len(values)-1-i) * day), Open: v})
	}
	ch, err := newCoverageChart(reconcile.Coverage{Unknown: "x", Open: samples}, day, 0, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	o := ch.Open
	if len(o.Points) != len(values) || o.Max != "20" {
		t.Fatalf("%d points, axis top %q; want %d, 20", len(o.Points), o.Max, len(values))
	}
	var months []string
	for i, p := range o.Points {
		if p.Value != groupDigits(int64(values[i])) || p.N != values[i] || p.Day == "" || p.ValueY >= p.Y {
			t.Errorf("point %d: %+v, want its value %d labelled above it", i, p, values[i])
		}
		if p.Y < o.Top || p.Y > o.Base || p.X < o.Left || p.X > o.Right {
			t.Errorf("point %d is out of the plot: %+v", i, p)
		}
		if i > 0 && p.X <= o.Points[i-1].X {
			t.Errorf("point %d is not right of the one before", i)
		}
		if p.Month != "" {
			months = append(months, p.Month+" "+p.Day)
		}
	}
	if o.Points[0].Y != o.Base || o.Points[0].Date != "2026-11-18" || o.Points[13].Date != "2026-12-01" {
		t.Errorf("first point %+v, last %+v", o.Points[0], o.Points[13])
	}
	if want := []string{"Nov 18", "Dec 1"}; !slices.Equal(months, want) {
		t.Errorf("months labelled at %q, want %q", months, want)
	}
	if want := "0 open on Nov 18, 6 now; at most 12 over 14 days."; o.Summary != want {
		t.Errorf("summary %q, want %q", o.Summary, want)
	}
	// In the reviewer's zone, the days are Tokyo's.
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	if ch, err = newCoverageChart(reconcile.Coverage{Unknown: "x", Open: samples}, day, 0, tokyo); err != nil {
		t.Fatal(err)
	}
	if got := ch.Open.Points[13].Date; got != "2026-12-02" {
		t.Errorf("the last sample in Tokyo is on %s, want 2026-12-02", got)
	}
}

func TestNumbersForPeople(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n              int64
		grouped, short string
	}{
		{0, "0", "0"},
		{999, "999", "999"},
		{1000, "1,000", "1,000"},
		{999_999, "999,999", "999,999"},
		{1_000_000, "1,000,000", "1.0M"},
		{1_999_999, "1,999,999", "1.9M"},
		{12_345_678, "12,345,678", "12M"},
		{999_999_999, "999,999,999", "999M"},
		{math.MaxInt64, "9,223,372,036,854,775,807", "9.2E"},
		{-1234, "-1,234", "-1,234"},
	}
	for _, tt := range tests {
		if g, s := groupDigits(tt.n), compactCount(tt.n); g != tt.grouped || s != tt.short {
			t.Errorf("%d: %q, %q; want %q, %q", tt.n, g, s, tt.grouped, tt.short)
		}
	}
	for _, tt := range []struct {
		n    int64
		want string
	}{{9_999, "9,999"}, {10_000, "10k"}, {15_000, "15k"}, {123_456, "123k"}, {2_500_000, "2.5M"}} {
		if got := shortCount(tt.n, 10_000); got != tt.want {
			t.Errorf("shortCount(%d, 10000) = %q, want %q", tt.n, got, tt.want)
		}
	}
	for _, tt := range []struct {
		n, want int
	}{{0, 1}, {1, 1}, {2, 2}, {3, 5}, {7, 10}, {12, 20}, {51, 100}, {100, 100}, {101, 200}} {
		if got := niceCeil(tt.n); got != tt.want {
			t.Errorf("niceCeil(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
}

func TestTheChartTemplateEscapesWhatItShows(t *testing.T) {
	t.Parallel()
	const hostile = `<script>alert("job")</script>`
	ch, err := newCoverageChart(reconcile.Coverage{Job: hostile, Rows: []int64{1, 2, 3, 4, 5, 6},
		Open: []reconcile.OpenSample{{At: time.Now(), Open: 3}}}, day, 3, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := pages["overview"].ExecuteTemplate(&buf, "coverage", ch); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "<script>") || !strings.Contains(out, "Rows of job &lt;script&gt;alert(&#34;job&#34;)&lt;/script&gt; by time") {
		t.Errorf("the job's name is not escaped:\n%s", out)
	}
	for _, want := range []string{
		`<svg class="chart" role="img" aria-labelledby="cov-3-ages-title" aria-describedby="cov-3-ages-desc"`,
		`<title id="cov-3-ages-title">`,
		`fill="url(#cov-3-hatch)"`,
		`>SLO 24h</text>`,
		`>past the SLO →</text>`,
		`<td>≤1h</td><td>1</td><td>4.8%</td><td>no</td>`,
		`<td>&gt;7d</td><td>6</td><td>29%</td><td>yes</td>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the chart lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "style=") {
		t.Errorf("the chart has a style attribute, which the Content-Security-Policy refuses:\n%s", out)
	}
}
