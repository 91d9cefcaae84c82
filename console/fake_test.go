package console_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/console"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// fakeStore is a Reviewer and StatusReader whose every call fails with err.
type fakeStore struct{ err error }

func (s *fakeStore) ListFindings(context.Context, reconcile.FindingQuery) ([]reconcile.Finding, error) {
	return nil, s.err
}
func (s *fakeStore) Finding(context.Context, int64) (reconcile.FindingDetail, error) {
	return reconcile.FindingDetail{}, s.err
}
func (s *fakeStore) ResolveFinding(context.Context, int64, reconcile.Resolution) error { return s.err }
func (s *fakeStore) ReopenFinding(context.Context, int64, string, string) error        { return s.err }
func (s *fakeStore) Status(context.Context, string) (reconcile.Status, error) {
	return reconcile.Status{}, s.err
}

// serve sends one request straight to h, as actor (none if empty).
func serve(h http.Handler, method, path, actor string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	if actor != "" {
		req.Header.Set("X-Test-User", actor)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	t.Parallel()
	store := &fakeStore{}
	tests := []struct {
		name string
		cfg  console.Config
		want string
	}{
		{"no Authenticate", console.Config{Store: store}, "Authenticate is nil"},
		{"no Store", console.Config{Authenticate: headerAuth}, "Store is nil"},
		{"a short CSRF key", console.Config{Store: store, Authenticate: headerAuth, CSRFKey: []byte("short")}, "at least 32"},
		{"a relative base path", console.Config{Store: store, Authenticate: headerAuth, BasePath: "review"}, "BasePath"},
		{"a base path with a query", console.Config{Store: store, Authenticate: headerAuth, BasePath: "/review?x=1"}, "BasePath"},
		{"a huge page", console.Config{Store: store, Authenticate: headerAuth, PageSize: 100000}, "PageSize"},
		{"a bad trusted origin", console.Config{Store: store, Authenticate: headerAuth, TrustedOrigins: []string{"not a url"}}, "TrustedOrigins"},
		{"an empty job", console.Config{Store: store, Authenticate: headerAuth, Jobs: []string{""}}, "empty job"},
		{"an empty resolution", console.Config{Store: store, Authenticate: headerAuth, Resolutions: []string{""}}, "Resolutions"},
		{"a challenge with a line break", console.Config{Store: store, Authenticate: headerAuth, Challenge: "Basic\r\nX: y"}, "line break"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := console.New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, %v; want an error mentioning %q", c, err, tt.want)
			}
		})
	}
}

func TestEveryPageCarriesASecurityPolicyThatAllowsOnlyItsOwnStyle(t *testing.T) {
	t.Parallel()
	c, err := console.New(console.Config{Store: &fakeStore{}, Authenticate: headerAuth, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*httptest.ResponseRecorder{serve(c, "GET", "/", "alice"), serve(c, "GET", "/", ""), serve(c, "GET", "/nope", "alice")} {
		h := r.Header()
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "style-src 'sha256-", "form-action 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
			}
		}
		if strings.Contains(csp, "script-src") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("Content-Security-Policy %q allows scripts or any inline code", csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("headers %v", h)
		}
		body := r.Body.String()
		start, end := strings.Index(body, "<style>"), strings.Index(body, "</style>")
		if start < 0 || end < start {
			t.Fatalf("no style element:\n%s", body)
		}
		if want := "'" + styleHash(body[start+len("<style>"):end]) + "'"; !strings.Contains(csp, want) {
			t.Errorf("the style element's hash %s is not the one the policy allows (%s): the browser would drop the style", want, csp)
		}
	}
}

func styleHash(css string) string {
	sum := sha256.Sum256([]byte(css))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// memReviewer is a Reviewer and StatusReader over findings in memory that answers
// FindingQuery as the real stores do, Search included: a finding matches when the term is its
// external id or record id, or one of its row's search column values (columns, by record id,
// such as the order id pgstore's Config.SearchColumns would name). It keeps the last query.
type memReviewer struct {
	fakeStore
	findings []reconcile.Finding
	columns  map[string][]string

	mu   sync.Mutex
	last reconcile.FindingQuery
}

func (m *memReviewer) ListFindings(_ context.Context, q reconcile.FindingQuery) ([]reconcile.Finding, error) {
	q, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.last = q
	m.mu.Unlock()
	var out []reconcile.Finding
	for _, f := range m.findings {
		if m.matches(f, q) {
			out = append(out, f)
		}
		if len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

func (m *memReviewer) matches(f reconcile.Finding, q reconcile.FindingQuery) bool {
	switch {
	case f.ID <= q.AfterID,
		q.Job != "" && f.Job != q.Job,
		len(q.Jobs) > 0 && !slices.Contains(q.Jobs, f.Job),
		q.Kind != "" && f.Kind != q.Kind,
		q.RecordID != "" && f.RecordID != q.RecordID,
		q.State == reconcile.FindingsOpen && !f.Open(),
		q.State == reconcile.FindingsResolved && f.Open(),
		!q.DetectedBefore.IsZero() && !f.DetectedAt.Before(q.DetectedBefore):
		return false
	}
	return q.Search == "" || q.Search == f.ExternalID || q.Search == f.RecordID || slices.Contains(m.columns[f.RecordID], q.Search)
}

func (m *memReviewer) Finding(_ context.Context, id int64) (reconcile.FindingDetail, error) {
	for _, f := range m.findings {
		if f.ID == id {
			return reconcile.FindingDetail{Finding: f, History: []reconcile.FindingEvent{{At: f.DetectedAt, Action: reconcile.ActionDetected, Actor: f.Job}}}, nil
		}
	}
	return reconcile.FindingDetail{}, reconcile.ErrFindingNotFound
}

// lastQuery is the query of the last ListFindings.
func (m *memReviewer) lastQuery() reconcile.FindingQuery {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

// monitorOf is a Monitor of jobs, each read through sr, that keeps nothing.
func monitorOf(t *testing.T, sr reconcile.StatusReader, jobs ...string) *reconcile.Monitor {
	t.Helper()
	var mj []reconcile.MonitorJob
	for _, job := range jobs {
		mj = append(mj, reconcile.MonitorJob{Name: job, Status: sr})
	}
	m, err := reconcile.NewMonitor(reconcile.MonitorConfig{Jobs: mj, TTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
