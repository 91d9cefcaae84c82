package main

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The page is drawn the way Grafana lays a dashboard out: 24 columns, rows of 30 px with 8 px
// between, in its dark theme.
const (
	pageWidth  = 1400
	margin     = 16
	gap        = 8
	cellHeight = 30
	headHeight = 76 // the title and the variables
	footHeight = 34
)

const (
	pageBG    = "#111217"
	panelBG   = "#181b1f"
	border    = "#2c3235"
	textColor = "#ccccdc"
	weakText  = "#8e8e9a"
	gridLine  = "#2a2d33"
	fontStack = "Inter, 'Helvetica Neue', Helvetica, Arial, sans-serif"
)

// Grafana's named colors and its classic palette, in its dark theme.
var (
	named = map[string]string{
		"green": "#73bf69", "red": "#f2495c", "orange": "#ff9830", "blue": "#5794f2", "purple": "#b877d9",
		"yellow": "#fade2a", "dark-red": "#c4162a", "text": "#ccccdc", "transparent": "transparent",
	}
	palette = []string{"#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2", "#b877d9", "#705da0",
		"#37872d", "#fade2a", "#447ebc", "#c15c17"}
)

func colorOf(name string) string {
	if c, ok := named[name]; ok {
		return c
	}
	return name
}

// svg collects a drawing's elements.
type svg struct{ b strings.Builder }

func (s *svg) add(format string, args ...any) {
	fmt.Fprintf(&s.b, format, args...)
	s.b.WriteByte('\n')
}

func (s *svg) text(x, y float64, size int, fill, anchor, weight, content string) {
	s.add(`<text x="%.1f" y="%.1f" font-size="%d" fill="%s" text-anchor="%s" font-weight="%s">%s</text>`,
		x, y, size, fill, anchor, weight, html.EscapeString(content))
}

// render draws the dashboard's panels with the captured results, and returns the page and its
// height in pixels.
func render(d dashboard, c capture, o options) (string, int) {
	colWidth := float64(pageWidth-2*margin+gap) / 24
	bottom := 0
	for _, p := range d.Panels {
		bottom = max(bottom, p.GridPos.Y+p.GridPos.H)
	}
	height := headHeight + bottom*(cellHeight+gap) + footHeight
	var s svg
	s.add(`<rect width="%d" height="%d" fill="%s"/>`, pageWidth, height, pageBG)
	header(&s, d, c)
	for _, p := range d.Panels {
		x := margin + float64(p.GridPos.X)*colWidth
		y := float64(headHeight + p.GridPos.Y*(cellHeight+gap))
		w := float64(p.GridPos.W)*colWidth - gap
		h := float64(p.GridPos.H*(cellHeight+gap) - gap)
		box := rect{x, y, w, h}
		switch p.Type {
		case "row":
			s.text(x, y+20, 15, textColor, "start", "600", p.Title)
		case "stat":
			frame(&s, box, p.Title)
			drawStat(&s, box.inset(30, 8, 8, 8), p, c.Results[p.ID])
		default:
			frame(&s, box, p.Title)
			drawTimeseries(&s, box.inset(34, 10, 8, 8), p, c)
		}
	}
	s.text(margin, float64(height-13), 12, weakText, "start", "400",
		"Not Grafana: the queries of adapters/prommetrics/mixin/dashboard.json, asked of a real Prometheus (honor_labels: true) "+
			"scraping a reconciler run, drawn by tools/dashshot.")
	page := fmt.Sprintf(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>%s</title></head>`+
		`<body style="margin:0;background:%s"><svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="%s">%s</svg></body></html>`,
		html.EscapeString(d.Title), pageBG, pageWidth, height, fontStack, s.b.String())
	return page, height
}

type rect struct{ x, y, w, h float64 }

func (r rect) inset(top, right, bottom, left float64) rect {
	return rect{r.x + left, r.y + top, r.w - left - right, r.h - top - bottom}
}

func header(s *svg, d dashboard, c capture) {
	s.text(margin, 30, 20, textColor, "start", "500", "Dashboards / "+d.Title)
	x := float64(margin)
	for _, v := range [][2]string{{"Data source", "Prometheus"}, {"Job", "All"}} {
		lw, vw := 8*float64(len(v[0]))+16, 8*float64(len(v[1]))+24
		s.add(`<rect x="%.1f" y="44" width="%.1f" height="24" rx="2" fill="%s" stroke="%s"/>`, x, lw, "#22252b", border)
		s.text(x+8, 60, 12, textColor, "start", "500", v[0])
		s.add(`<rect x="%.1f" y="44" width="%.1f" height="24" rx="2" fill="%s" stroke="%s"/>`, x+lw, vw, pageBG, border)
		s.text(x+lw+8, 60, 12, textColor, "start", "400", v[1]+" ▾")
		x += lw + vw + 10
	}
	span := int(c.End.Sub(c.Start).Round(time.Minute).Minutes())
	label := fmt.Sprintf("%s to %s UTC (%d min)", c.Start.UTC().Format("2006-01-02 15:04"), c.End.UTC().Format("15:04"), span)
	s.text(pageWidth-margin, 60, 12, textColor, "end", "400", label)
}

func frame(s *svg, r rect, title string) {
	s.add(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="2" fill="%s" stroke="%s"/>`, r.x, r.y, r.w, r.h, panelBG, border)
	s.text(r.x+8, r.y+19, 13, textColor, "start", "500", title)
	s.add(`<circle cx="%.1f" cy="%.1f" r="6" fill="none" stroke="%s"/>`, r.x+r.w-14, r.y+15, weakText)
	s.text(r.x+r.w-14, r.y+19, 10, weakText, "middle", "600", "i")
}

// line is one drawn series: its name, config and points.
type line struct {
	name   string
	cfg    fieldConfig
	ref    string
	points [][2]float64
	color  string
}

// lines names and configures every series of a panel, overrides applied, in Grafana's order.
func lines(p panel, results map[string][]series) []line {
	var out []line
	for _, t := range p.Targets {
		res := slices.Clone(results[t.RefID])
		slices.SortFunc(res, func(a, b series) int {
			return strings.Compare(legend(t.LegendFormat, a.Metric), legend(t.LegendFormat, b.Metric))
		})
		for _, r := range res {
			l := line{name: legend(t.LegendFormat, r.Metric), cfg: p.FieldConfig.Defaults, ref: t.RefID, points: r.Points}
			for _, o := range p.FieldConfig.Overrides {
				if (o.Matcher.ID == "byName" && o.Matcher.Options == l.name) || (o.Matcher.ID == "byFrameRefID" && o.Matcher.Options == t.RefID) {
					for _, prop := range o.Properties {
						apply(&l.cfg, prop.ID, prop.Value)
					}
				}
			}
			l.color = palette[len(out)%len(palette)]
			if l.cfg.Color.Mode == "fixed" {
				l.color = colorOf(l.cfg.Color.FixedColor)
			}
			out = append(out, l)
		}
	}
	return out
}

// apply sets one override property: the path is the field's JSON path, as Grafana names it.
func apply(c *fieldConfig, id string, v json.RawMessage) {
	var target any
	switch id {
	case "color":
		target = &c.Color
	case "unit":
		target = &c.Unit
	case "custom.axisPlacement":
		target = &c.Custom.AxisPlacement
	case "custom.axisLabel":
		target = &c.Custom.AxisLabel
	case "custom.fillOpacity":
		target = &c.Custom.FillOpacity
	case "custom.lineStyle":
		target = &c.Custom.LineStyle
	case "custom.stacking":
		target = &c.Custom.Stacking
	default:
		return
	}
	_ = json.Unmarshal(v, target)
}

var legendLabel = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)

func legend(format string, labels map[string]string) string {
	if format == "" {
		return fmt.Sprint(labels)
	}
	return legendLabel.ReplaceAllStringFunc(format, func(m string) string {
		return labels[legendLabel.FindStringSubmatch(m)[1]]
	})
}

// axis is a y scale.
type axis struct {
	lo, hi, step float64
	unit         string
	label        string
}

func (a axis) y(r rect, v float64) float64 { return r.y + r.h - (v-a.lo)/(a.hi-a.lo)*r.h }

func drawTimeseries(s *svg, r rect, p panel, c capture) {
	ls := lines(p, c.Results[p.ID])
	legendRows := legendLayout(ls, r.w)
	plot := r.inset(4, 0, 24+18*float64(len(legendRows)), 0)
	if len(ls) == 0 {
		s.text(r.x+r.w/2, r.y+r.h/2, 14, weakText, "middle", "400", "No data")
		return
	}
	// Stacked series are drawn on their sums; a series on the right has an axis of its own.
	var left, right []int
	for i, l := range ls {
		if l.cfg.Custom.AxisPlacement == "right" {
			right = append(right, i)
		} else {
			left = append(left, i)
		}
	}
	stacked := map[int][][2]float64{}
	var base map[float64]float64
	for _, i := range left {
		if ls[i].cfg.Custom.Stacking.Mode != "normal" {
			continue
		}
		if base == nil {
			base = map[float64]float64{}
		}
		var pts [][2]float64
		for _, pt := range ls[i].points {
			base[pt[0]] += pt[1]
			pts = append(pts, [2]float64{pt[0], base[pt[0]]})
		}
		stacked[i] = pts
	}
	drawn := func(i int) [][2]float64 {
		if pts, ok := stacked[i]; ok {
			return pts
		}
		return ls[i].points
	}
	scale := func(idx []int, cfg fieldConfig) axis {
		a := axis{lo: 0, hi: 0, unit: cfg.Unit, label: cfg.Custom.AxisLabel}
		for _, i := range idx {
			for _, pt := range drawn(i) {
				a.hi = max(a.hi, pt[1])
				a.lo = min(a.lo, pt[1])
			}
		}
		for _, t := range cfg.Thresholds.Steps {
			if t.Value != nil && cfg.Custom.ThresholdsStyle.Mode != "off" && cfg.Custom.ThresholdsStyle.Mode != "" {
				a.hi = max(a.hi, *t.Value)
			}
		}
		if cfg.Min != nil {
			a.lo = *cfg.Min
		}
		if a.hi <= a.lo {
			a.hi = a.lo + 1
		}
		if cfg.Max != nil {
			a.hi = *cfg.Max
		}
		a.step = niceStep(a.hi-a.lo, cfg.Unit)
		if cfg.Max == nil {
			a.hi = a.lo + math.Ceil((a.hi-a.lo)/a.step-1e-9)*a.step
		}
		return a
	}
	la := scale(left, p.FieldConfig.Defaults)
	var ra axis
	leftPad, rightPad := 52.0, 8.0
	if la.label != "" {
		leftPad += 14
	}
	if len(right) > 0 {
		ra = scale(right, ls[right[0]].cfg)
		rightPad = 56
		if ra.label != "" {
			rightPad += 14
		}
	}
	plot = plot.inset(0, rightPad, 0, leftPad)

	// Grid and axes.
	for _, v := range ticks(la) {
		y := la.y(plot, v)
		s.add(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, plot.x, y, plot.x+plot.w, y, gridLine)
		s.text(plot.x-6, y+4, 11, weakText, "end", "400", format(v, la.unit))
	}
	if la.label != "" {
		cx, cy := r.x+8, plot.y+plot.h/2
		s.add(`<text transform="translate(%.1f %.1f) rotate(-90)" font-size="11" fill="%s" text-anchor="middle">%s</text>`, cx, cy, weakText, html.EscapeString(la.label))
	}
	if len(right) > 0 {
		for _, v := range ticks(ra) {
			s.text(plot.x+plot.w+6, ra.y(plot, v)+4, 11, weakText, "start", "400", format(v, ra.unit))
		}
		if ra.label != "" {
			cx, cy := r.x+r.w-4, plot.y+plot.h/2
			s.add(`<text transform="translate(%.1f %.1f) rotate(90)" font-size="11" fill="%s" text-anchor="middle">%s</text>`, cx, cy, weakText, html.EscapeString(ra.label))
		}
	}
	t0, t1 := float64(c.Start.Unix()), float64(c.End.Unix())
	xOf := func(t float64) float64 { return plot.x + (t-t0)/(t1-t0)*plot.w }
	// A time label every so many minutes that labels stay 70 px apart.
	every := 60.0
	for (every/(t1-t0))*plot.w < 70 {
		every *= 2
	}
	for t := math.Ceil(t0/every) * every; t <= t1; t += every {
		x := xOf(t)
		s.add(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`, x, plot.y, x, plot.y+plot.h, gridLine)
		s.text(x, plot.y+plot.h+15, 11, weakText, "middle", "400", time.Unix(int64(t), 0).UTC().Format("15:04"))
	}

	// Thresholds drawn as lines, dashed, in their color.
	for _, t := range p.FieldConfig.Defaults.Thresholds.Steps {
		if t.Value == nil || colorOf(t.Color) == "transparent" || p.FieldConfig.Defaults.Custom.ThresholdsStyle.Mode != "line" {
			continue
		}
		y := la.y(plot, *t.Value)
		s.add(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="6 4" stroke-width="1.5"/>`, plot.x, y, plot.x+plot.w, y, colorOf(t.Color))
	}

	// Areas first (stacked ones from the series below them), then lines on top.
	step := c.Step
	var prev [][2]float64
	for _, i := range left {
		l := ls[i]
		pts := drawn(i)
		a := la
		if l.cfg.Custom.FillOpacity > 0 {
			var lower [][2]float64
			if _, ok := stacked[i]; ok {
				lower = prev
				prev = pts
			}
			for _, seg := range segments(pts, step) {
				var path strings.Builder
				for j, pt := range seg {
					fmt.Fprintf(&path, "%s%.1f,%.1f ", map[bool]string{true: "M", false: "L"}[j == 0], xOf(pt[0]), a.y(plot, pt[1]))
				}
				for j := len(seg) - 1; j >= 0; j-- {
					fmt.Fprintf(&path, "L%.1f,%.1f ", xOf(seg[j][0]), a.y(plot, valueAt(lower, seg[j][0], a.lo)))
				}
				s.add(`<path d="%sZ" fill="%s" fill-opacity="%.2f" stroke="none"/>`, path.String(), l.color, l.cfg.Custom.FillOpacity/100)
			}
		}
	}
	for _, idx := range [][]int{left, right} {
		for _, i := range idx {
			l := ls[i]
			a := la
			if l.cfg.Custom.AxisPlacement == "right" {
				a = ra
			}
			dash := ""
			if l.cfg.Custom.LineStyle.Fill == "dash" {
				dash = ` stroke-dasharray="8 6"`
			}
			for _, seg := range segments(drawn(i), step) {
				var pts strings.Builder
				for _, pt := range seg {
					fmt.Fprintf(&pts, "%.1f,%.1f ", xOf(pt[0]), a.y(plot, pt[1]))
				}
				s.add(`<polyline points="%s" fill="none" stroke="%s" stroke-width="%g" stroke-linejoin="round"%s/>`, pts.String(), l.color, max(l.cfg.Custom.LineWidth, 1), dash)
			}
		}
	}

	// The legend, under the plot.
	y := plot.y + plot.h + 36
	for _, row := range legendRows {
		x := r.x + 4
		for _, i := range row {
			l := ls[i]
			dash := ""
			if l.cfg.Custom.LineStyle.Fill == "dash" {
				dash = ` stroke-dasharray="4 3"`
			}
			s.add(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"%s/>`, x, y-4, x+14, y-4, l.color, dash)
			s.text(x+19, y, 12, textColor, "start", "400", l.name)
			x += legendWidth(l.name)
		}
		y += 18
	}
}

// legendLayout wraps the legend's entries into rows that fit width.
func legendLayout(ls []line, width float64) [][]int {
	var rows [][]int
	var used float64
	for i, l := range ls {
		w := legendWidth(l.name)
		if len(rows) == 0 || used+w > width {
			rows = append(rows, nil)
			used = 0
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], i)
		used += w
	}
	return rows
}

func legendWidth(name string) float64 { return 19 + 6.8*float64(len(name)) + 16 }

// segments splits points where the series has a gap (a missing scrape or an absent series).
func segments(pts [][2]float64, step float64) [][][2]float64 {
	var out [][][2]float64
	for i, pt := range pts {
		if i == 0 || pt[0]-pts[i-1][0] > 1.5*step {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], pt)
	}
	return out
}

func valueAt(pts [][2]float64, t, otherwise float64) float64 {
	for _, pt := range pts {
		if pt[0] == t {
			return pt[1]
		}
	}
	return otherwise
}

func drawStat(s *svg, r rect, p panel, results map[string][]series) {
	ls := lines(p, results)
	if len(ls) == 0 {
		msg := p.FieldConfig.Defaults.NoValue
		if msg == "" {
			msg = "No data"
		}
		s.text(r.x+r.w/2, r.y+r.h/2+10, 26, named["green"], "middle", "500", msg)
		return
	}
	// Many values wrap into rows, as Grafana's do in a wide, low panel.
	rows := 1
	if len(ls) > 4 {
		rows = 2
	}
	cols := (len(ls) + rows - 1) / rows
	w := (r.w - gap*float64(cols-1)) / float64(cols)
	h := (r.h - gap*float64(rows-1)) / float64(rows)
	for i, l := range ls {
		box := rect{r.x + float64(i%cols)*(w+gap), r.y + float64(i/cols)*(h+gap), w, h}
		last := l.points[len(l.points)-1][1]
		text, color := format(last, l.cfg.Unit), l.color
		if l.cfg.Color.Mode == "thresholds" {
			for _, t := range l.cfg.Thresholds.Steps {
				if t.Value == nil || last >= *t.Value {
					color = colorOf(t.Color)
				}
			}
		}
		for _, m := range l.cfg.Mappings {
			if o, ok := m.Options[fmt.Sprint(last)]; ok {
				text = o.Text
				if o.Color != "" {
					color = colorOf(o.Color)
				}
			}
		}
		valueColor := color
		if p.Options.ColorMode == "background" {
			s.add(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="2" fill="%s"/>`, box.x, box.y, box.w, box.h, color)
			valueColor = "#ffffff"
		}
		if p.Options.GraphMode == "area" {
			sparkline(s, box.inset(box.h*0.55, 0, 0, 0), l.points, color)
		}
		switch p.Options.TextMode {
		case "name":
			size := int(min(22, box.h*0.45, 1.8*box.w/float64(len(l.name))))
			s.text(box.x+box.w/2, box.y+box.h/2+float64(size)*0.35, size, valueColor, "middle", "500", l.name)
		case "value_and_name":
			s.text(box.x+box.w/2, box.y+box.h/2-10, 14, valueColor, "middle", "400", l.name)
			s.text(box.x+box.w/2, box.y+box.h/2+22, 30, valueColor, "middle", "500", text)
		default:
			s.text(box.x+box.w/2, box.y+box.h*0.42, 44, valueColor, "middle", "500", text)
		}
	}
}

func sparkline(s *svg, r rect, pts [][2]float64, color string) {
	if len(pts) < 2 {
		return
	}
	t0, t1 := pts[0][0], pts[len(pts)-1][0]
	hi := 1.0
	for _, pt := range pts {
		hi = max(hi, pt[1])
	}
	var path strings.Builder
	for i, pt := range pts {
		fmt.Fprintf(&path, "%s%.1f,%.1f ", map[bool]string{true: "M", false: "L"}[i == 0], r.x+(pt[0]-t0)/(t1-t0)*r.w, r.y+r.h-pt[1]/hi*r.h)
	}
	fmt.Fprintf(&path, "L%.1f,%.1f L%.1f,%.1f Z", r.x+r.w, r.y+r.h, r.x, r.y+r.h)
	s.add(`<path d="%s" fill="%s" fill-opacity="0.18" stroke="%s" stroke-width="1.5"/>`, path.String(), color, color)
}

// niceStep is a round step that splits span into about four: whole minutes or hours for
// durations.
func niceStep(span float64, unit string) float64 {
	raw := span / 4
	if unit == "s" && raw >= 10 {
		for _, d := range []float64{15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400} {
			if raw <= d {
				return d
			}
		}
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

// ticks are the values of a's grid lines.
func ticks(a axis) []float64 {
	var out []float64
	for v := a.lo; v <= a.hi+a.step/1e6; v += a.step {
		out = append(out, v)
	}
	return out
}

// format writes v in unit, as Grafana's value formats do.
func format(v float64, unit string) string {
	switch unit {
	case "percentunit":
		return trim(v*100) + "%"
	case "s":
		switch a := math.Abs(v); {
		case a == 0:
			return "0 s"
		case a < 60:
			return trim(v) + " s"
		case a < 3600:
			return trim(v/60) + " min"
		case a < 86400:
			return trim(v/3600) + " hour"
		default:
			return trim(v/86400) + " day"
		}
	}
	switch a := math.Abs(v); {
	case a >= 1e6:
		return trim(v/1e6) + " Mil"
	case a >= 1e3:
		return trim(v/1e3) + " K"
	}
	return trim(v)
}

func trim(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}
