package stripepayouts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
)

// records is a slog.Handler keeping what each record shows: its message and the values of
// its attributes, as they are before any handler quotes them.
type records struct {
	mu    sync.Mutex
	shown []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r } // the lister adds none
func (r *records) WithGroup(string) slog.Handler            { return r }

func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shown = append(r.shown, rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		r.shown = append(r.shown, a.Key+"="+a.Value.Resolve().String())
		return true
	})
	return nil
}

func (r *records) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.shown...)
}

// rewriting is a proxy in front of srv that answers as srv does but for what edit makes of the
// body of a request's answer (the method and path given), with srv's url rewritten to the
// proxy's, so that the result url names the proxy's files host.
func rewriting(t testing.TB, srv *stripetest.Server, edit func(method, path string, body []byte) []byte) string {
	return rewritingAs(t, srv, "", edit)
}

// rewritingAs is rewriting, the proxy sending srv's key in place of key, the one its client
// has.
func rewritingAs(t testing.TB, srv *stripetest.Server, key string, edit func(method, path string, body []byte) []byte) string {
	t.Helper()
	target, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	var self string
	p := httputil.NewSingleHostReverseProxy(target)
	director := p.Director
	p.Director = func(r *http.Request) {
		director(r)
		r.Header.Del("Accept-Encoding")
		if key != "" && r.Header.Get("Authorization") == "Bearer "+key {
			r.Header.Set("Authorization", "Bearer "+srv.Key())
		}
	}
	p.ModifyResponse = func(res *http.Response) error {
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return err
		}
		b = bytes.ReplaceAll(b, []byte(srv.URL()), []byte(self))
		if edit != nil {
			b = edit(res.Request.Method, res.Request.URL.Path, b)
		}
		res.Body = io.NopCloser(bytes.NewReader(b))
		res.ContentLength = int64(len(b))
		res.Header.Set("Content-Length", fmt.Sprint(len(b)))
		return nil
	}
	proxy := httptest.NewServer(p)
	t.Cleanup(proxy.Close)
	self = proxy.URL
	return self
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Whatever the report run, its result url or its file holds (the key plainly, JSON-escaped,
// percent-encoded, split by CSV quoting; NUL, invalid UTF-8, escape sequences, a newline, 10
// KB), what the report path logs and stores shows none of the key, in a printable line of
// bounded length: the payouts are listed one by one, and the log says why without quoting it.
func TestTheReportPathLogsNoKey(t *testing.T) {
	type attack struct {
		reporting func(form string) stripetest.Reporting
		edit      func(form string) func(method, path string, body []byte) []byte
		why       string
	}
	firstRunID := regexp.MustCompile(`"id":"frr_[A-Za-z0-9]+"`)
	attacks := map[string]attack{
		"the run's failure message": {reporting: func(f string) stripetest.Reporting { return stripetest.Reporting{Fail: f} }, why: "failed"},
		"the result url": {reporting: func(f string) stripetest.Reporting {
			return stripetest.Reporting{ResultURL: func(string) string { return f }}
		}, why: "not fetched"},
		"the result url's query": {reporting: func(f string) stripetest.Reporting {
			return stripetest.Reporting{ResultURL: func(u string) string { return u + "?k=" + f }}
		}, why: "not fetched"},
		"a cell": {reporting: func(f string) stripetest.Reporting {
			return stripetest.Reporting{Contents: func(b []byte) []byte { return bytes.Replace(b, []byte(",usd,"), []byte(",usd,"+csvCell(f)+","), 1) }}
		}, why: "cannot be used"},
		"a header": {reporting: func(f string) stripetest.Reporting {
			return stripetest.Reporting{Contents: func(b []byte) []byte { return bytes.Replace(b, []byte("gross"), []byte(csvCell(f)), 1) }}
		}, why: "cannot be used"},
		"the run's status": {edit: func(f string) func(string, string, []byte) []byte {
			return func(method, path string, b []byte) []byte {
				if method == http.MethodGet && strings.HasPrefix(path, "/v1/reporting/report_runs/") {
					b = bytes.Replace(b, []byte(`"status":"succeeded"`), []byte(`"status":`+jsonString(f)), 1)
				}
				return b
			}
		}, why: "status"},
		"the created run's id": {edit: func(f string) func(string, string, []byte) []byte {
			return func(method, path string, b []byte) []byte {
				if method == http.MethodPost && path == "/v1/reporting/report_runs" {
					b = firstRunID.ReplaceAll(b, []byte(`"id":`+strings.ReplaceAll(jsonString(f), "$", "$$")))
				}
				return b
			}
		}, why: "not a report run id"},
		"the report type's id": {edit: func(f string) func(string, string, []byte) []byte {
			return func(method, path string, b []byte) []byte {
				if strings.HasPrefix(path, "/v1/reporting/report_types/") {
					b = bytes.Replace(b, []byte(`"id":"`+stripepayouts.ReportType+`"`), []byte(`"id":`+jsonString(f)), 1)
				}
				return b
			}
		}, why: "another report type"},
	}
	for what, a := range attacks {
		for name, form := range stripepayouts.KeyForms() {
			t.Run(what+"/"+name, func(t *testing.T) {
				t.Parallel()
				w := newWorld(t)
				r := stripetest.Reporting{}
				if a.reporting != nil {
					r = a.reporting(form)
				}
				r.DataAvailableEnd = t0.Add(365 * 24 * time.Hour)
				w.srv.SetReporting(r)
				base := w.srv.URL()
				if a.edit != nil {
					base = rewriting(t, w.srv, a.edit(form))
				}
				fs, log := reportPass(t, w, w.srv.Key(), base)
				shown := log.all()
				if !strings.Contains(strings.Join(shown, "\n"), a.why) {
					t.Errorf("the log does not say why (%q): %q", a.why, shown)
				}
				for _, v := range shown {
					stripepayouts.CheckShown(t, "the log", v, 512)
				}
				for _, f := range fs {
					stripepayouts.CheckShown(t, "a finding", fmt.Sprintf("%+v", f), 1<<20)
				}
			})
		}
	}
}

// csvCell is s as a CSV cell, quoted.
func csvCell(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// A key of the client's that redact.Keys does not see within an id (no mode, after letters:
// "ch_xsk_..."), echoed into a cell the tie-out stores, is redacted as listing redacts it: the
// client's own key is redacted wherever it is.
func TestAReportEchoingTheClientsKeyStoresItNowhere(t *testing.T) {
	const key = "sk_ModelessSECRET0123"
	w := newWorld(t)
	w.srv.SetReporting(stripetest.Reporting{DataAvailableEnd: t0.Add(365 * 24 * time.Hour),
		Contents: editRows(t, category("charge"), "source_id", func(string) string { return "ch_x" + key })})
	w.srv.ResetLog()
	fs, log := reportPass(t, w, key, rewritingAs(t, w.srv, key, nil))
	if n := w.srv.Requests(stripetest.ListBalanceTransactions); n != 0 {
		t.Errorf("the report was not served: %d listings, log %q", n, log.all())
	}
	for _, f := range fs {
		if text := fmt.Sprintf("%+v", f); strings.Contains(text, "SECRET") {
			t.Errorf("a finding holds the key: %s", text)
		}
	}
}

// reportPass runs a pass of a report lister of key, through base, into a store of its own, and
// returns the findings it stored (at least one) and what it logged.
func reportPass(t *testing.T, w *world, key, base string) ([]reconcile.Finding, *records) {
	t.Helper()
	gw, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: key, BaseURL: base}, stripeadapter.Payouts())
	if err != nil {
		t.Fatal(err)
	}
	l, err := stripepayouts.New(gw, stripepayouts.Config{PerPage: 2})
	if err != nil {
		t.Fatal(err)
	}
	log := &records{}
	rl, err := l.WithReports(stripepayouts.ReportOptions{PollInterval: time.Millisecond, Logger: slog.New(log)})
	if err != nil {
		t.Fatal(err)
	}
	s := memstore.New[string, string](memstore.Options{Now: w.clk.now})
	pass(t, step(t, "report", rl, w.memLedger(), s), 10)
	fs, err := s.ListFindings(context.Background(), reconcile.FindingQuery{Job: job, Limit: 1000})
	if err != nil || len(fs) == 0 {
		t.Fatalf("findings %d, %v", len(fs), err)
	}
	return fs, log
}
