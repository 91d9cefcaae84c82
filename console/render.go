package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/reconcilekit/reconcile"
)

//go:embed templates/*.html
var templateFiles embed.FS

// pages are the parsed templates, one per page, each with the layout and the parts pages
// share (diffs.html: a finding's fields that differ; chart.html: a job's coverage chart).
var pages = func() map[string]*template.Template {
	m := map[string]*template.Template{}
	for _, name := range []string{"overview", "list", "detail", "error", "bulk", "payouts", "payout"} {
		m[name] = template.Must(template.ParseFS(templateFiles, "templates/layout.html", "templates/diffs.html", "templates/chart.html", "templates/"+name+".html"))
	}
	return m
}()

// style is the console's only styling, inline; the Content-Security-Policy allows exactly it
// by its hash, and nothing else: no script, no other source.
const style = `body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{display:flex;justify-content:space-between;align-items:center;padding:.6em 1.2em;background:#24292f;color:#fff}
header a{color:#fff;margin-right:1.2em;text-decoration:none;font-weight:600}
main{padding:1em 1.2em;max-width:1200px}
h1{font-size:1.4em}h2{font-size:1.15em}h3{font-size:1em}
table{border-collapse:collapse;width:100%;background:#fff;margin:.5em 0}
th,td{border:1px solid #d0d7de;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f0f2f4}
table.diffs{width:auto;margin:0;font-size:.92em}table.diffs th,table.diffs td{padding:.1em .4em}
#findings table.diffs td{white-space:nowrap}
td.text{white-space:pre-wrap;word-break:break-word}
.ok{color:#116329;font-weight:700}.bad{color:#b3261e;font-weight:700}
.muted{color:#57606a}
section.job{background:#fff;border:1px solid #d0d7de;padding:.2em 1em .8em;margin-bottom:1em}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{font-weight:600}dd{margin:0;word-break:break-word}
form.filters{display:flex;flex-wrap:wrap;gap:.6em;align-items:end}
form.filters label,form.action label{display:flex;flex-direction:column;font-size:.9em}
form.action{background:#fff;border:1px solid #d0d7de;padding:.8em;margin:1em 0;max-width:40em}
textarea{width:100%;min-height:4em}
button{padding:.35em 1em}
.pager{margin:1em 0}
footer{padding:.6em 1.2em;border-top:1px solid #d0d7de}
form.zone{display:flex;gap:.4em;align-items:center;font-size:.9em}
.totals{margin:.6em 0}
#findings th a{color:inherit}
.money{font-size:.8em;border:1px solid #b3261e;color:#b3261e;padding:0 .3em;border-radius:3px}
fieldset.action{background:#fff;border:1px solid #d0d7de;padding:.8em;margin:1em 0;max-width:40em}
fieldset.action label{display:flex;flex-direction:column;font-size:.9em}
.figs{display:flex;flex-wrap:wrap;gap:1em}
figure.chart{margin:0;max-width:460px}
svg.chart{display:block;max-width:100%;height:auto;background:#fff;border:1px solid #d0d7de}
figure.chart figcaption{font-size:.9em;color:#57606a;margin-top:.3em}
details.chart-table{margin:.5em 0}details.chart-table table{width:auto}`

var styleHash = func() string {
	sum := sha256.Sum256([]byte(style))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}()

// securityHeaders go on every response: the pages hold financial data and form tokens.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; style-src '"+styleHash+"'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// The external links (the Stripe dashboard) should not learn the console's URLs.
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// page is what every template gets; Data is the page's own.
type page struct {
	Title string
	Root  string
	Actor string
	CSS   template.CSS
	Token string
	// Zone is the reviewer's time zone, Zones the choices, ZoneURL where the choice is posted
	// and Back the page to come back to (relative to the root; empty when it is not a page to
	// come back to).
	Zone    string
	Zones   []string
	ZoneURL string
	Back    string
	// Payouts links the payouts pages: the store records payouts (reconcile.GroupReader).
	Payouts bool
	Data    any
}

// render executes a page into a buffer first, so that a template failure becomes a clean 500
// rather than half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	p := page{Title: title, Root: rootOf(r.URL.EscapedPath()), Actor: actor(r), CSS: template.CSS(style), Data: data}
	_, p.Payouts = c.store.(reconcile.GroupReader)
	p.Zone, _ = c.zones.of(r)
	p.Zones, p.ZoneURL = c.zones.names, p.Root+"timezone"
	if back := strings.TrimPrefix(r.URL.Path, "/"); r.Method == http.MethodGet && status == http.StatusOK {
		if r.URL.RawQuery != "" {
			back += "?" + r.URL.RawQuery
		}
		if backPath.MatchString(back) {
			p.Back = back
		}
	}
	if p.Actor != "" {
		p.Token = c.csrf.issue(p.Actor, time.Now())
	}
	var buf bytes.Buffer
	if err := pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		c.log.ErrorContext(r.Context(), "console: render page", slog.String("page", name), slog.String("error", err.Error()))
		if name != "error" {
			c.fail(w, r, http.StatusInternalServerError, "Internal error", "The page could not be shown. The error was logged.")
			return
		}
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes()) //nolint:errcheck // the client went away
}

// errorPage is the data of the error page.
type errorPage struct {
	Status   int
	Message  string
	LinkURL  string
	LinkText string
}

// fail answers with a clean error page: a status, a title and a message for people, never an
// internal error's text.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, title, msg string) {
	c.failWithLink(w, r, status, title, msg, "", "")
}

func (c *Console) failWithLink(w http.ResponseWriter, r *http.Request, status int, title, msg, link, linkText string) {
	c.render(w, r, status, "error", title, errorPage{Status: status, Message: msg, LinkURL: link, LinkText: linkText})
}

// storeFailed logs a store error and answers 500 without its text, which may name tables,
// hosts or values.
func (c *Console) storeFailed(w http.ResponseWriter, r *http.Request, op string, err error) {
	c.log.ErrorContext(r.Context(), "console: store failed", slog.String("op", op), slog.String("error", err.Error()))
	c.fail(w, r, http.StatusInternalServerError, "The findings store failed",
		fmt.Sprintf("The console could not %s. The error was logged; try again in a moment.", op))
}

// formatTime shows a time in loc to the second, with the zone's abbreviation (or offset);
// the zero time as a dash.
func formatTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "—"
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}

// formatDuration is a duration for people: 3d4h, 5h12m, 4m10s.
func formatDuration(d time.Duration) string {
	switch d = d.Round(time.Second); {
	case d < 0:
		return "-" + formatDuration(-d)
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd%dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", d/time.Hour, d%time.Hour/time.Minute)
	}
	return d.String()
}
