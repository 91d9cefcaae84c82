package prommetrics_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// grafanaDashboard is the part of a Grafana dashboard the tests read.
type grafanaDashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	ID         *int   `json:"id"`
	Templating struct {
		List []struct {
			Name       string             `json:"name"`
			Type       string             `json:"type"`
			Query      json.RawMessage    `json:"query"`
			Multi      bool               `json:"multi"`
			IncludeAll bool               `json:"includeAll"`
			Datasource *grafanaDatasource `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaPanel struct {
	ID          int                      `json:"id"`
	Type        string                   `json:"type"`
	Title       string                   `json:"title"`
	Description string                   `json:"description"`
	Datasource  *grafanaDatasource       `json:"datasource"`
	GridPos     struct{ X, Y, W, H int } `json:"gridPos"`
	Targets     []struct {
		Datasource *grafanaDatasource `json:"datasource"`
		Expr       string             `json:"expr"`
	} `json:"targets"`
	Panels []json.RawMessage `json:"panels"` // a collapsed row's, which the checks would not see
}

type grafanaDatasource struct{ Type, UID string }

// templateDatasource is what every query names, so that the dashboard imports into any Grafana.
var templateDatasource = grafanaDatasource{Type: "prometheus", UID: "${datasource}"}

func readDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	src, err := os.ReadFile("mixin/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(src, &d); err != nil {
		t.Fatalf("mixin/dashboard.json: %v", err)
	}
	return d
}

// The dashboard imports anywhere: no instance's id or datasource in it, the $datasource and
// $job variables, a query and a description in every panel but rows, and a grid where no
// panel hides another.
func TestTheDashboardImportsIntoAnyGrafana(t *testing.T) {
	d := readDashboard(t)
	panels := d.Panels
	if d.ID != nil || d.UID != "reconcile" || d.Title != "reconcile" {
		t.Errorf("id %v, uid %q, title %q; want no id, uid and title reconcile", d.ID, d.UID, d.Title)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		// A query variable's query is an object since Grafana 10, a string before.
		var query struct{ Query string }
		if err := json.Unmarshal(v.Query, &query.Query); err != nil {
			if err := json.Unmarshal(v.Query, &query); err != nil {
				t.Errorf("variable %s: query %s: %v", v.Name, v.Query, err)
			}
		}
		vars[v.Name] = fmt.Sprintf("%s %q multi=%v all=%v", v.Type, query.Query, v.Multi, v.IncludeAll)
		if v.Type == "query" && (v.Datasource == nil || *v.Datasource != templateDatasource) {
			t.Errorf("variable %s: datasource %+v, want %+v", v.Name, v.Datasource, templateDatasource)
		}
	}
	want := map[string]string{
		"datasource": `datasource "prometheus" multi=false all=false`,
		"job":        `query "label_values(reconcile_lag_seconds, job)" multi=true all=true`,
	}
	for name, w := range want {
		if vars[name] != w {
			t.Errorf("variable %s is %q, want %q", name, vars[name], w)
		}
	}

	ids := map[int]string{}
	for i, p := range panels {
		if other, ok := ids[p.ID]; ok {
			t.Errorf("panel %q has the id %d of panel %q", p.Title, p.ID, other)
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v is outside the 24 columns", p.Title, g)
		}
		for _, q := range panels[:i] {
			o := q.GridPos
			if g.X < o.X+o.W && o.X < g.X+g.W && g.Y < o.Y+o.H && o.Y < g.Y+g.H {
				t.Errorf("panel %q (%+v) overlaps panel %q (%+v)", p.Title, g, q.Title, o)
			}
		}
		if p.Type == "row" {
			if len(p.Targets) > 0 || len(p.Panels) > 0 {
				t.Errorf("row %q has queries or is collapsed", p.Title)
			}
			continue
		}
		if p.Datasource == nil || *p.Datasource != templateDatasource {
			t.Errorf("panel %q: datasource %+v, want %+v", p.Title, p.Datasource, templateDatasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		if p.Description == "" {
			t.Errorf("panel %q has no description to say how to read it", p.Title)
		}
		for _, q := range p.Targets {
			if q.Datasource != nil && *q.Datasource != templateDatasource {
				t.Errorf("panel %q: a query's datasource is %+v, want %+v", p.Title, q.Datasource, templateDatasource)
			}
			if strings.Contains(q.Expr, "{job=") && !strings.Contains(q.Expr, `{job=~"$job"}`) {
				t.Errorf("panel %q: %s filters job other than by the $job variable", p.Title, q.Expr)
			}
		}
	}
}

// The gauges read from the database at scrape time: every process that sets Options.Status or
// Outbox exports the same values, so a query that sums them across instances counts each once
// per process (the package doc: "or deduplicate with max by (job)").
var databaseGauges = []string{
	"reconcile_lag_seconds", "reconcile_lag_slo_seconds", "reconcile_covered_rows", "reconcile_cycle_age_seconds",
	"reconcile_since_last_cycle_seconds", "reconcile_cycles_completed_total", "reconcile_last_batch_unverifiable_ratio",
	"reconcile_open_findings", "reconcile_stale_findings", "reconcile_healthy", "reconcile_health_check_ok",
	"reconcile_lane_lag_seconds", "reconcile_outbox_queued", "reconcile_outbox_oldest_queued_age_seconds",
	"reconcile_dead_commands",
}

// Every panel reads the database gauges through max or min, so that two processes exporting
// them do not double what a panel shows.
func TestTheDashboardCountsTheDatabaseGaugesOnce(t *testing.T) {
	d := readDashboard(t)
	checked := 0
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			for _, name := range databaseGauges {
				uses := regexp.MustCompile(`\b`+name+`\b`).FindAllStringIndex(q.Expr, -1)
				deduped := regexp.MustCompile(`\b(?:max|min)\s*(?:by\s*\([^)]*\)\s*)?\(\s*`+name+`\b`).FindAllStringIndex(q.Expr, -1)
				if len(deduped) < len(uses) {
					t.Errorf("panel %q: %s: %s is not read through max or min by, so each process exporting it counts again",
						p.Title, q.Expr, name)
				}
				checked += len(uses)
			}
		}
	}
	if checked == 0 {
		t.Error("no panel reads a database gauge; the check would pass without checking")
	}
}

// A metric name in a query, or a recording rule's name (level:metric:operations).
var metricName = regexp.MustCompile(`\b(?:[a-zA-Z_][a-zA-Z0-9_]*:)?reconcile_[a-zA-Z0-9_:]+`)

var (
	// exprLine is a rule's expr (or a promtool test's input series): inline, or "|" or ">"
	// opening a block of deeper lines.
	exprLine = regexp.MustCompile(`^(\s*)(?:-\s+)?(?:expr|series):\s*(.*)$`)
	// ruleLine names the rule whose expr: follows it, as rules are written.
	ruleLine = regexp.MustCompile(`^\s*(?:-\s+)?(alert|record):\s*['"]?([^'"\s#]+)`)
)

// ruleExprs returns the exprs of a rules file, or the exprs and input series of a promtool test
// file, each keyed by where it is ("mixin/alerts.yaml:12 (alert ReconcileUnhealthy)"), and the
// names its record: rules define.
func ruleExprs(file, text string) (exprs map[string]string, records []string) {
	exprs = map[string]string{}
	lines := strings.Split(text, "\n")
	var rule string
	for i := 0; i < len(lines); i++ {
		if m := ruleLine.FindStringSubmatch(lines[i]); m != nil {
			rule = " (" + m[1] + " " + m[2] + ")"
			if m[1] == "record" {
				records = append(records, m[2])
			}
		}
		m := exprLine.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		where := fmt.Sprintf("%s:%d%s", file, i+1, rule)
		expr := m[2]
		if strings.HasPrefix(expr, "|") || strings.HasPrefix(expr, ">") {
			expr = ""
			for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || indent(lines[i+1]) > len(m[1])) {
				i++
				expr += lines[i] + "\n"
			}
		}
		exprs[where] = expr
	}
	return exprs, records
}

func indent(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }

// Every metric the dashboard and the alert rules query, or name in a description or an
// annotation, is one a real run emits: a renamed metric, or a misspelled one, would leave a
// panel empty, an alert silent, or the on-call engineer looking for nothing, and none says so.
func TestTheDashboardAndAlertsQueryOnlyMetricsARealRunEmits(t *testing.T) {
	mfs, err := aRealRun(t).Gather()
	if err != nil {
		t.Fatal(err)
	}
	emitted := map[string]bool{}
	for _, mf := range mfs {
		emitted[mf.GetName()] = true
	}

	// Where each expr is → the expr, from the dashboard's panels and every YAML file of mixin/.
	files := map[string]map[string]string{"mixin/dashboard.json": {}}
	d := readDashboard(t)
	for _, v := range d.Templating.List {
		files["mixin/dashboard.json"]["mixin/dashboard.json (variable "+v.Name+")"] = string(v.Query)
	}
	for _, p := range d.Panels {
		for i, q := range p.Targets {
			files["mixin/dashboard.json"][fmt.Sprintf("mixin/dashboard.json (panel %q, query %d)", p.Title, i+1)] = q.Expr
		}
		// What a description tells the reader to look at must exist too.
		files["mixin/dashboard.json"][fmt.Sprintf("mixin/dashboard.json (panel %q, description)", p.Title)] = p.Description
	}
	yamls, err := filepath.Glob("mixin/*.y*ml")
	if err != nil {
		t.Fatal(err)
	}
	var records []string
	for _, file := range yamls {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		exprs, recs := ruleExprs(file, string(src))
		// The annotations name metrics for the on-call engineer to look at: the whole file.
		exprs[file] = string(src)
		files[file] = exprs
		records = append(records, recs...)
	}

	for _, file := range slices.Sorted(maps.Keys(files)) {
		names := 0
		for _, where := range slices.Sorted(maps.Keys(files[file])) {
			for _, name := range metricName.FindAllString(files[file][where], -1) {
				names++
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(name, suffix); ok && emitted[b] {
						base = b
					}
				}
				if !emitted[base] && !slices.Contains(records, name) {
					t.Errorf("%s: %s is not a metric a real run emits", where, name)
				}
			}
		}
		if names == 0 {
			t.Errorf("%s: no reconcile_ metric found in its queries; the check would pass without checking", file)
		}
	}
}
