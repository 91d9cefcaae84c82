package main

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"
)

func TestValuesAreWrittenAsGrafanaWritesThem(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{
		{0, "s", "0 s"},
		{45, "s", "45 s"},
		{240, "s", "4 min"},
		{5400, "s", "1.5 hour"},
		{0.25, "percentunit", "25%"},
		{1.5, "percentunit", "150%"},
		{2500, "short", "2.5 K"},
		{7.5, "short", "7.5"},
		{-0.001, "short", "0"},
	} {
		if got := format(c.v, c.unit); got != c.want {
			t.Errorf("format(%v, %q) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}

func TestAxisStepsAreRound(t *testing.T) {
	for _, c := range []struct {
		span float64
		unit string
		want float64
	}{
		{300, "s", 120}, // 5 minutes: every 2 minutes
		{3600, "s", 900},
		{20, "s", 5},
		{30, "short", 10},
		{1, "percentunit", 0.25},
		{7, "short", 2},
	} {
		if got := niceStep(c.span, c.unit); got != c.want {
			t.Errorf("niceStep(%v, %q) = %v, want %v", c.span, c.unit, got, c.want)
		}
	}
}

func TestLegendsFillInLabels(t *testing.T) {
	labels := map[string]string{"job": "payments", "lane": "events"}
	for format, want := range map[string]string{"{{job}} / {{lane}}": "payments / events", "{{ job }} SLO": "payments SLO", "queued": "queued"} {
		if got := legend(format, labels); got != want {
			t.Errorf("legend(%q) = %q, want %q", format, got, want)
		}
	}
}

func TestAGapInASeriesBreaksItsLine(t *testing.T) {
	got := segments([][2]float64{{0, 1}, {5, 1}, {10, 1}, {30, 1}, {35, 1}}, 5)
	if len(got) != 2 || len(got[0]) != 3 || len(got[1]) != 2 {
		t.Errorf("segments = %v, want two runs of 3 and 2 points", got)
	}
}

// The repository's dashboard, drawn with a series for every query, is well-formed SVG with
// every panel's title in it.
func TestTheDashboardDrawsAsWellFormedSVG(t *testing.T) {
	d, err := readDashboard("../../adapters/prommetrics/mixin/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := capture{Start: start, End: start.Add(10 * time.Minute), Step: 5, Results: map[int]map[string][]series{}}
	for _, p := range d.Panels {
		c.Results[p.ID] = map[string][]series{}
		for _, q := range p.Targets {
			s := series{Metric: map[string]string{"job": "payments", "verdict": "in_sync", "kind": "missed_success", "check": "lag"}}
			for i := range 120 {
				s.Points = append(s.Points, [2]float64{float64(start.Unix()) + 5*float64(i), float64(i % 7)})
			}
			c.Results[p.ID][q.RefID] = []series{s}
		}
	}
	page, height := render(d, c, options{})
	if height < 1000 {
		t.Errorf("height %d: the grid is not laid out", height)
	}
	dec := xml.NewDecoder(strings.NewReader(page[strings.Index(page, "<svg"):strings.Index(page, "</body>")]))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
	}
	for _, p := range d.Panels {
		if !strings.Contains(page, ">"+p.Title+"<") {
			t.Errorf("panel %q is not drawn", p.Title)
		}
	}
}
