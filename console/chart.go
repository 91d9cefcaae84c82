package console

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/reconcilekit/reconcile"
)

// The overview's coverage chart: a job's rows by time since their last verification, with its
// lag SLO marked, and its open findings over the last days. Everything here is pure: a
// reconcile.Coverage becomes a coverageChart, whose geometry templates/chart.html draws as
// inline SVG (presentation attributes and the style block's classes only: the
// Content-Security-Policy allows no style attribute).

// openDays is how many daily samples of open findings the overview reads.
const openDays = 14

// ageLadder are the bounds the age buckets are chosen from, besides the SLO itself: round
// spans people read at a glance.
var ageLadder = []time.Duration{
	time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour,
	3 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 30 * 24 * time.Hour,
	90 * 24 * time.Hour, 365 * 24 * time.Hour,
}

// ageBounds are the buckets' upper bounds for a job whose lag SLO is slo: two rungs of
// ageLadder below it, the SLO, and two above, skipping rungs within half again of the SLO
// either way (a 30h SLO gets 1h and 6h below it, not 24h). With a 24h SLO that is
// ≤1h, 1h–6h, 6h–24h, 24h–3d, 3d–7d and >7d.
func ageBounds(slo time.Duration) []time.Duration {
	var below, above []time.Duration
	for _, a := range ageLadder {
		switch {
		case a*3 <= slo*2:
			below = append(below, a)
		case a*2 >= slo*3 && len(above) < 2:
			above = append(above, a)
		}
	}
	if len(below) > 2 {
		below = below[len(below)-2:]
	}
	out := append(below, slo)
	return append(out, above...)
}

// coverageQuery is what the overview asks of a job whose lag SLO is slo.
func coverageQuery(slo time.Duration) reconcile.CoverageQuery {
	return reconcile.CoverageQuery{Ages: ageBounds(slo), Days: openDays}
}

// coverageChart is what templates/chart.html draws for one job.
type coverageChart struct {
	// ID prefixes the ids of the chart's elements (titles, patterns): unique on the page.
	ID  string
	Job string
	// Unknown, when set, is shown instead of the bars: why the store cannot tell.
	Unknown   string
	Estimated bool
	Ages      *ageChart  // nil when Unknown
	Open      *openChart // nil without samples
}

// Chart geometry, in SVG user units (pixels at 100%).
const (
	chartW      = 460
	ageChartH   = 230
	openChartH  = 230
	chartLeft   = 44 // room for the y axis's labels
	chartRight  = 12
	chartTop    = 40 // room for the values above the points
	ageTop      = 52 // room for the SLO's labels, and under them the counts above the bars
	chartBottom = 58 // room for the bucket or day labels and the axis title
)

// ageChart is the bar chart of rows by time since their last verification.
type ageChart struct {
	W, H             int
	Left, Right      int // the plot's edges
	Top, Base        int // the plot's top and its baseline
	Bars             []ageBar
	SLOX, SLOTop     int    // the SLO's dashed line, from SLOTop down to the baseline
	SLOLabel         string // "SLO 24h", over the line
	PastX            int    // where "past the SLO" is written, right of the line under its label
	HasPast          bool   // some bucket is past the SLO
	AxisY, AxisTitle int    // the x axis title's baseline and centre
	// Summary says it in words, for people without the picture (the SVG's desc, and a
	// paragraph under it).
	Summary string
}

// ageBar is one bucket.
type ageBar struct {
	Label      string // "1h–6h"
	X, Y, W, H int
	MidX       int
	CountY     int
	LabelY     int
	Count      string // on the bar: compact ("12.3M") when long
	Exact      string // in the table: "12,345,678"
	Share      string // "12.5%"
	PastSLO    bool
}

// openChart is the line of open findings, one point a day.
type openChart struct {
	W, H        int
	Left, Right int
	Top, Base   int
	Points      []openPoint
	Line        string // the polyline's points
	Max, Mid    string // the y axis's labels, at its top and half way
	MaxY, MidY  int
	AxisY       int
	AxisTitle   int
	Summary     string
}

// openPoint is one day's sample.
type openPoint struct {
	X, Y   int
	Value  string // above the point
	ValueY int
	Day    string // "18": under the axis
	Month  string // "Nov": under the day, at the first point and where the month changes
	Date   string // "2026-11-18": the table's
	N      int
}

// newCoverageChart lays out cov, the answer to coverageQuery(slo), for the job at position
// idx of the overview; times are shown in loc. A cov that does not answer the query (the wrong
// number of buckets, a negative count) is an error, shown as such rather than drawn wrong.
func newCoverageChart(cov reconcile.Coverage, slo time.Duration, idx int, loc *time.Location) (coverageChart, error) {
	c := coverageChart{ID: fmt.Sprintf("cov-%d", idx), Job: cov.Job, Estimated: cov.Estimated}
	bounds := ageBounds(slo)
	switch {
	case cov.Rows == nil:
		c.Unknown = cov.Unknown
		if c.Unknown == "" {
			c.Unknown = "The store did not say how long the rows have gone unverified."
		}
		c.Estimated = false
	case len(cov.Rows) != len(bounds)+1:
		return coverageChart{}, fmt.Errorf("console: coverage of job %q has %d buckets, want %d", cov.Job, len(cov.Rows), len(bounds)+1)
	default:
		for i, n := range cov.Rows {
			if n < 0 {
				return coverageChart{}, fmt.Errorf("console: coverage of job %q has %d rows in bucket %d", cov.Job, n, i)
			}
		}
		c.Ages = newAgeChart(cov.Rows, bounds, slo)
	}
	for i, s := range cov.Open {
		if s.Open < 0 {
			return coverageChart{}, fmt.Errorf("console: coverage of job %q has %d open findings in sample %d", cov.Job, s.Open, i)
		}
	}
	if len(cov.Open) > 0 {
		c.Open = newOpenChart(cov.Open, loc)
	}
	return c, nil
}

func newAgeChart(rows []int64, bounds []time.Duration, slo time.Duration) *ageChart {
	a := &ageChart{W: chartW, H: ageChartH, Left: chartLeft, Right: chartW - chartRight, Top: ageTop, Base: ageChartH - chartBottom}
	a.AxisY, a.AxisTitle = a.H-8, (a.Left+a.Right)/2
	sloAt := 0 // the index of the bucket that ends at the SLO
	for i, b := range bounds {
		if b == slo {
			sloAt = i
		}
	}
	// Sums saturate rather than wrap (no store has 2⁶³ rows, but a broken one may say so);
	// shares are of the float sum, which does not overflow.
	var most, within, past int64
	var sum float64
	for i, n := range rows {
		most, sum = max(most, n), sum+float64(n)
		if i > sloAt {
			past = addSat(past, n)
		} else {
			within = addSat(within, n)
		}
	}
	slot := float64(a.Right-a.Left) / float64(len(rows))
	for i, n := range rows {
		b := ageBar{Label: bucketLabel(bounds, i), Exact: groupDigits(n), Count: compactCount(n), PastSLO: i > sloAt, Share: share(float64(n), sum)}
		b.W = int(slot * 0.72)
		b.X = a.Left + int(slot*float64(i)+(slot-float64(b.W))/2)
		b.MidX = b.X + b.W/2
		b.H = barHeight(n, most, a.Base-a.Top)
		b.Y = a.Base - b.H
		b.CountY = b.Y - 5
		b.LabelY = a.Base + 17
		a.Bars = append(a.Bars, b)
	}
	a.SLOX = a.Left + int(slot*float64(sloAt+1))
	a.SLOLabel = "SLO " + spanLabel(slo)
	a.HasPast = sloAt < len(rows)-1
	a.SLOTop = 34
	// "past the SLO →" is about 90 units wide: it stays in the chart even when the SLO is
	// its last bound.
	a.PastX = min(a.SLOX+5, a.Right-90)
	a.Summary = ageSummary(within, past, sum, slo)
	return a
}

// barHeight scales n against the largest count, most, into at most full units; a bar of any
// rows is at least 2 units high, so that one bucket dominating does not hide the others' few.
func barHeight(n, most int64, full int) int {
	if n <= 0 || most <= 0 {
		return 0
	}
	h := int(math.Round(float64(full) * float64(n) / float64(most)))
	return min(full, max(h, 2))
}

// addSat is a+b for non-negative a and b, math.MaxInt64 when that overflows.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// ageSummary says in words how many rows are past the SLO; sum is their float total.
func ageSummary(within, past int64, sum float64, slo time.Duration) string {
	if sum == 0 {
		return "No rows."
	}
	total := groupDigits(addSat(within, past)) + " rows"
	if within > math.MaxInt64-past {
		total = "More than " + total
	}
	return fmt.Sprintf("%s: %s (%s) last verified within the SLO of %s, %s (%s) longer ago.",
		total, groupDigits(within), share(float64(within), sum), spanLabel(slo), groupDigits(past), share(float64(past), sum))
}

// bucketLabel names bucket i of bounds: "≤1h", "1h–6h", ">7d".
func bucketLabel(bounds []time.Duration, i int) string {
	switch {
	case i == 0:
		return "≤" + spanLabel(bounds[0])
	case i == len(bounds):
		return ">" + spanLabel(bounds[i-1])
	}
	return spanLabel(bounds[i-1]) + "–" + spanLabel(bounds[i])
}

// spanLabel is a bucket bound for people, as short as it is exact: 15m, 6h, 24h, 3d, 90m.
func spanLabel(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d >= 2*day && d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d >= time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return formatDuration(d)
}

// share is n's percentage of total, to a tenth below 10%, and "<0.1%" for a few.
func share(n, total float64) string {
	if total == 0 {
		return "0%"
	}
	switch p := 100 * n / total; {
	case p == 0:
		return "0%"
	case p < 0.1:
		return "<0.1%"
	case p < 10:
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	default:
		return strconv.FormatFloat(p, 'f', 0, 64) + "%"
	}
}

// groupDigits writes n with thousands separators: 12,345,678.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// compactCount is n in at most about seven characters, to fit over a bar: 999,999, then
// 1.2M, 34B, 9.2E (int64's largest).
func compactCount(n int64) string {
	return shortCount(n, 1_000_000)
}

// shortCount is n with its digits grouped below from, and in thousands (k), millions (M) and
// so on from there, to a tenth below 10: 9,999 then 10k with from 10,000.
func shortCount(n, from int64) string {
	if n < from {
		return groupDigits(n)
	}
	f, unit := float64(n), ""
	for _, u := range []string{"k", "M", "B", "T", "P", "E"} {
		if f < 1000 {
			break
		}
		f, unit = f/1000, u
	}
	if f < 10 {
		return strconv.FormatFloat(math.Floor(f*10)/10, 'f', 1, 64) + unit
	}
	return strconv.FormatFloat(math.Floor(f), 'f', 0, 64) + unit
}

func newOpenChart(samples []reconcile.OpenSample, loc *time.Location) *openChart {
	o := &openChart{W: chartW, H: openChartH, Left: chartLeft, Right: chartW - chartRight, Top: chartTop, Base: openChartH - chartBottom}
	o.AxisY, o.AxisTitle = o.H-8, (o.Left+o.Right)/2
	top := 0
	for _, s := range samples {
		top = max(top, s.Open)
	}
	scale := niceCeil(top)
	// The y axis's labels and the points' values have less room than the bars' counts.
	o.Max, o.MaxY = shortCount(int64(scale), 10_000), o.Top
	if scale%2 == 0 {
		o.Mid, o.MidY = shortCount(int64(scale/2), 10_000), (o.Top+o.Base)/2
	}
	// At most about 16 labelled days: more would overlap (the overview asks for 14).
	every := (len(samples) + 15) / 16
	var pts []string
	prevMonth := ""
	for i, s := range samples {
		p := openPoint{N: s.Open, Date: s.At.In(loc).Format("2006-01-02")}
		if len(samples) == 1 {
			p.X = (o.Left + o.Right) / 2
		} else {
			p.X = o.Left + 8 + (o.Right-o.Left-16)*i/(len(samples)-1)
		}
		p.Y = o.Base - int(math.Round(float64(o.Base-o.Top)*float64(s.Open)/float64(scale)))
		p.ValueY = p.Y - 7
		if i%every == 0 || i == len(samples)-1 {
			p.Value = shortCount(int64(s.Open), 10_000)
			p.Day = s.At.In(loc).Format("2")
			if m := s.At.In(loc).Format("Jan"); m != prevMonth {
				p.Month, prevMonth = m, m
			}
		}
		pts = append(pts, fmt.Sprintf("%d,%d", p.X, p.Y))
		o.Points = append(o.Points, p)
	}
	o.Line = strings.Join(pts, " ")
	first, last := samples[0], samples[len(samples)-1]
	o.Summary = fmt.Sprintf("%s open on %s, %s now; at most %s over %d days.",
		groupDigits(int64(first.Open)), first.At.In(loc).Format("Jan 2"), groupDigits(int64(last.Open)), groupDigits(int64(top)), len(samples))
	return o
}

// niceCeil is the y axis's top for a largest value of n: at least 1, and a 1, 2 or 5 times a
// power of ten at or above n, so that the axis reads round.
func niceCeil(n int) int {
	if n <= 1 {
		return 1
	}
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 5} {
			if m*p >= n {
				return m * p
			}
		}
		if p > math.MaxInt/100 {
			return n
		}
	}
}
