package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

// healthStores returns a memstore in which job "sweep" has completed a cycle over 5 rows, one
// of them drifted (a finding for review), and job "refunds" has never run.
func healthStores(t *testing.T) (*store, *clock) {
	t.Helper()
	c := newClock()
	s := newStore(c, 5, func(i int64) string { return map[bool]string{true: "paid", false: "pending"}[i != 3] })
	gw := newFakeGateway(0, func(context.Context, int, string) (string, error) { return "succeeded", nil })
	if rep, err := reconcile.RunBatch(context.Background(), config(s, gw)); err != nil || !rep.Wrapped {
		t.Fatalf("RunBatch = %+v, %v; want a whole cycle", rep, err)
	}
	c.Advance(10 * time.Minute)
	return s, c
}

func newHealthHandler(t *testing.T, jobs ...reconcile.MonitorJob) *reconcile.HealthHandler {
	t.Helper()
	return healthHandlerOf(t, reconcile.MonitorConfig{Jobs: jobs})
}

// healthHandlerOf returns the health handler of a Monitor made of cfg.
func healthHandlerOf(t *testing.T, cfg reconcile.MonitorConfig) *reconcile.HealthHandler {
	t.Helper()
	m, err := reconcile.NewMonitor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h, err := reconcile.NewHealthHandler(m)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// get serves one request and returns the answer.
func get(h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// answer is the JSON body as a client reads it.
type answer struct {
	OK   bool `json:"ok"`
	Jobs []struct {
		reconcile.Health
		Error string `json:"error"`
	} `json:"jobs"`
}

func decode(t *testing.T, w *httptest.ResponseRecorder) answer {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Fatalf("Content-Type %q; want JSON", ct)
	}
	var a answer
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
		t.Fatalf("%v in %s", err, w.Body)
	}
	return a
}

func TestTheHealthHandlerAnswers200ForAHealthyJob(t *testing.T) {
	s, _ := healthStores(t)
	h := newHealthHandler(t, reconcile.MonitorJob{Name: job, Status: s})
	w := get(h, http.MethodGet, "/healthz")
	a := decode(t, w)
	if w.Code != http.StatusOK || !a.OK || len(a.Jobs) != 1 || a.Jobs[0].Job != job || !a.Jobs[0].OK || a.Jobs[0].Error != "" {
		t.Fatalf("%d %s; want 200 and the job healthy", w.Code, w.Body)
	}
	st := a.Jobs[0].Status
	if st.Rows != 5 || st.CyclesCompleted != 1 || st.Lag != 10*time.Minute || st.OpenFindings["paid_locally_not_externally"] != 0 ||
		st.OpenFindings["missed_success"] != 1 || len(a.Jobs[0].Checks) == 0 {
		t.Fatalf("status %+v; want memstore's figures: 5 rows, one cycle, lag 10m, one missed_success", st)
	}
	if w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q; a health answer must not be cached", w.Header().Get("Cache-Control"))
	}
}

func TestTheHealthHandlerAnswers503WithTheReasons(t *testing.T) {
	s, c := healthStores(t)
	h := newHealthHandler(t,
		reconcile.MonitorJob{Name: job, Status: s, Policy: reconcile.HealthPolicy{LagSLO: time.Hour}},
		reconcile.MonitorJob{Name: "refunds", Status: s})
	c.Advance(2 * time.Hour) // past sweep's SLO of an hour
	w := get(h, http.MethodGet, "/healthz", "Accept", "application/json")
	a := decode(t, w)
	if w.Code != http.StatusServiceUnavailable || a.OK || len(a.Jobs) != 2 || a.Jobs[0].OK || a.Jobs[1].OK {
		t.Fatalf("%d %s; want 503 with both jobs failing", w.Code, w.Body)
	}
	if r := a.Jobs[0].Reasons(); len(r) == 0 || !strings.HasPrefix(r[0], "lag: ") {
		t.Errorf("sweep's reasons %q; want the lag first", r)
	}
	if r := a.Jobs[1].Reasons(); len(r) != 1 || !strings.Contains(r[0], "never run") {
		t.Errorf("refunds' reasons %q; want that it never ran", r)
	}
}

func TestTheHealthHandlerForAPerson(t *testing.T) {
	s, c := healthStores(t)
	h := newHealthHandler(t,
		reconcile.MonitorJob{Name: job, Status: s},
		reconcile.MonitorJob{Name: "refunds", Status: s},
		reconcile.MonitorJob{Name: "payouts", Status: failingReader{errors.New("pgstore: status of job payouts: connection refused")}})
	c.Advance(time.Hour)
	for _, req := range []struct{ target, accept string }{{"/healthz?format=text", ""}, {"/healthz", "text/plain"}} {
		w := get(h, http.MethodGet, req.target, "Accept", req.accept)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("%s (Accept %q): %d %q; want 503 in text", req.target, req.accept, w.Code, w.Header().Get("Content-Type"))
		}
		golden(t, "health.txt", w.Body.Bytes())
	}
}

func TestTheJSONAnswerOfTheHealthHandler(t *testing.T) {
	s, _ := healthStores(t)
	h := newHealthHandler(t,
		reconcile.MonitorJob{Name: job, Status: s},
		reconcile.MonitorJob{Name: "payouts", Status: failingReader{errors.New("boom")}})
	golden(t, "health_answer.json", get(h, http.MethodGet, "/healthz").Body.Bytes())
}

// failingReader fails every read with err.
type failingReader struct{ err error }

func (r failingReader) Status(context.Context, string) (reconcile.Status, error) {
	return reconcile.Status{}, r.err
}

func TestAStoreErrorIs503WithAGenericMessageAndTheDetailsLogged(t *testing.T) {
	var logged bytes.Buffer
	h := healthHandlerOf(t, reconcile.MonitorConfig{
		Logger: slog.New(slog.NewTextHandler(&logged, nil)),
		Jobs:   []reconcile.MonitorJob{{Name: job, Status: failingReader{errors.New("connect to host=db password=hunter2: refused")}}},
	})
	// The store's error names a secret, as a careless driver's might: the answer must not.
	for _, target := range []string{"/healthz", "/healthz?format=text"} {
		w := get(h, http.MethodGet, target)
		if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "status unavailable") {
			t.Fatalf("%s: %d %s; want 503 saying the status is unavailable", target, w.Code, w.Body)
		}
		if strings.Contains(w.Body.String(), "hunter2") || strings.Contains(w.Body.String(), "refused") {
			t.Fatalf("%s: the answer carries the store's error: %s", target, w.Body)
		}
	}
	if !strings.Contains(logged.String(), "refused") || !strings.Contains(logged.String(), "job="+job) {
		t.Fatalf("log %q; want the store's error logged with the job", logged.String())
	}
}

// stuckReader blocks until release is closed, whatever its context says.
type stuckReader struct{ release chan struct{} }

func (r stuckReader) Status(context.Context, string) (reconcile.Status, error) {
	<-r.release
	return reconcile.Status{}, nil
}

// panickyReader panics.
type panickyReader struct{}

func (panickyReader) Status(context.Context, string) (reconcile.Status, error) {
	panic("bug in a reader")
}

func TestTheHealthHandlerAnswersWithinItsTimeout(t *testing.T) {
	s, _ := healthStores(t)
	stuck := stuckReader{release: make(chan struct{})}
	defer close(stuck.release)
	h := healthHandlerOf(t, reconcile.MonitorConfig{Timeout: 20 * time.Millisecond, Jobs: []reconcile.MonitorJob{
		{Name: job, Status: s},
		{Name: "stuck", Status: stuck},
		{Name: "panicky", Status: panickyReader{}},
	}})
	a := decode(t, get(h, http.MethodGet, "/healthz"))
	if a.OK || !a.Jobs[0].OK || a.Jobs[1].Error != "status unavailable" || a.Jobs[2].Error != "status unavailable" {
		t.Fatalf("answer %+v; want sweep healthy, and the stuck and the panicking readers unknown", a)
	}
}

func TestTheHealthHandlerIsReadOnly(t *testing.T) {
	s, _ := healthStores(t)
	h := newHealthHandler(t, reconcile.MonitorJob{Name: job, Status: s})
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		w := get(h, m, "/healthz")
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: %d, Allow %q; want 405 allowing GET, HEAD", m, w.Code, w.Header().Get("Allow"))
		}
	}
	if w := get(h, http.MethodHead, "/healthz"); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Errorf("HEAD: %d with %d bytes; want 200 and no body", w.Code, w.Body.Len())
	}
}

func TestTheHealthHandlerChoosesJSONOrText(t *testing.T) {
	s, _ := healthStores(t)
	h := newHealthHandler(t, reconcile.MonitorJob{Name: job, Status: s})
	tests := []struct {
		name, target, accept string
		want                 string // the Content-Type's media type, or "400"
	}{
		{"no Accept header is JSON", "/healthz", "", "application/json"},
		{"anything (curl) is JSON", "/healthz", "*/*", "application/json"},
		{"a browser's Accept is JSON", "/healthz", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "application/json"},
		{"JSON asked for is JSON", "/healthz", "application/json", "application/json"},
		{"text asked for is text", "/healthz", "text/plain", "text/plain"},
		{"text preferred is text", "/healthz", "application/json;q=0.5, text/plain", "text/plain"},
		{"JSON preferred is JSON", "/healthz", "text/plain;q=0.5, application/json", "application/json"},
		{"any text is text", "/healthz", "text/*", "text/plain"},
		{"?format=text wins over Accept", "/healthz?format=text", "application/json", "text/plain"},
		{"?format=json wins over Accept", "/healthz?format=json", "text/plain", "application/json"},
		{"an unknown format is refused", "/healthz?format=xml", "", "400"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var header []string
			if tt.accept != "" {
				header = []string{"Accept", tt.accept}
			}
			w := get(h, http.MethodGet, tt.target, header...)
			got, _, _ := strings.Cut(w.Header().Get("Content-Type"), ";")
			if w.Code == http.StatusBadRequest {
				got = "400"
			}
			if got != tt.want {
				t.Fatalf("answered %d %q; want %s", w.Code, w.Header().Get("Content-Type"), tt.want)
			}
		})
	}
}

func TestNewMonitorRejectsBadConfigs(t *testing.T) {
	s := newStore(newClock(), 1, always("paid"))
	var nilStore *store
	judge := func(context.Context, reconcile.HealthPolicy) reconcile.Health { return reconcile.Health{} }
	for name, cfg := range map[string]reconcile.MonitorConfig{
		"no jobs":                  {},
		"a job without name":       {Jobs: []reconcile.MonitorJob{{Status: s}}},
		"a job twice":              {Jobs: []reconcile.MonitorJob{{Name: "a", Status: s}, {Name: "a", Status: s}}},
		"no reader":                {Jobs: []reconcile.MonitorJob{{Name: "a"}}},
		"a nil reader":             {Jobs: []reconcile.MonitorJob{{Name: "a", Status: nilStore}}},
		"a reader and a judge":     {Jobs: []reconcile.MonitorJob{{Name: "a", Status: s, Judge: judge}}},
		"a nil coverage reader":    {Jobs: []reconcile.MonitorJob{{Name: "a", Status: s, Coverage: nilStore}}},
		"a name with a line break": {Jobs: []reconcile.MonitorJob{{Name: "a\nb", Status: s}}},
		"a name of invalid UTF-8":  {Jobs: []reconcile.MonitorJob{{Name: "a\xff", Status: s}}},
		"a negative lag SLO":       {Jobs: []reconcile.MonitorJob{{Name: "a", Status: s, Policy: reconcile.HealthPolicy{LagSLO: -time.Hour}}}},
		"a negative timeout":       {Jobs: []reconcile.MonitorJob{{Name: "a", Status: s}}, Timeout: -time.Second},
	} {
		if _, err := reconcile.NewMonitor(cfg); err == nil {
			t.Errorf("%s: NewMonitor succeeded", name)
		}
	}
	if _, err := reconcile.NewHealthHandler(nil); err == nil {
		t.Error("NewHealthHandler(nil) succeeded")
	}
}

// statusReader answers with a fixed status.
type statusReader reconcile.Status

func (r statusReader) Status(context.Context, string) (reconcile.Status, error) {
	return reconcile.Status(r), nil
}

func TestTheHealthHandlerShowsNoKeyAStoreHolds(t *testing.T) {
	// A host's classifier may make a kind of an external state, and a failure text may quote a
	// server: whatever looks like a key is redacted from the status and from the reasons.
	const key = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	st := reconcile.Status{Job: job, Now: now, Rows: 1, CycleStartedAt: now, LastBatchAt: now.Add(-time.Minute), LastBatchScanned: 1,
		OpenFindings:  map[string]int{"unexpected:" + key: 1, "missed_success": 2},
		LastFailureAt: now, LastFailure: "stripe answered 401 for " + key,
		Lanes: []reconcile.LaneStatus{{Lane: "events", CreatedAt: now, GapAt: now, GapOpen: true, GapReason: "restarted with " + key,
			LastFailureAt: now, LastFailure: "whsec_abcdef0123 rejected"}},
	}
	h := newHealthHandler(t, reconcile.MonitorJob{Name: job, Status: statusReader(st)})
	for _, target := range []string{"/healthz", "/healthz?format=text"} {
		body := get(h, http.MethodGet, target).Body.String()
		if strings.Contains(body, "sk_test_") || strings.Contains(body, "whsec_") {
			t.Errorf("%s shows a key:\n%s", target, body)
		}
		if !strings.Contains(body, "[redacted key]") || !strings.Contains(body, "missed_success") || !strings.Contains(body, "failed at 2026-03-01T12:00:00Z: other error") {
			t.Errorf("%s lost more than the keys:\n%s", target, body)
		}
	}
	if st.OpenFindings["unexpected:"+key] != 1 || st.Lanes[0].GapReason != "restarted with "+key {
		t.Error("the handler changed the status its reader returned")
	}
}

// A Judge's health is shown as redacted as a store's status: its checks' names and reasons too.
func TestTheHealthHandlerShowsNoKeyAJudgeReports(t *testing.T) {
	const key = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
	judge := func(context.Context, reconcile.HealthPolicy) reconcile.Health {
		return reconcile.Health{Job: "fan", Status: reconcile.Status{Job: "fan", OpenFindings: map[string]int{"unexpected:" + key: 1}},
			Checks: []reconcile.Check{{Name: "account:" + key, Value: "1h", Limit: "72h", Reason: "account " + key + " lags"}}}
	}
	h := newHealthHandler(t, reconcile.MonitorJob{Name: "fan", Judge: judge})
	for _, target := range []string{"/healthz", "/healthz?format=text"} {
		body := get(h, http.MethodGet, target).Body.String()
		if strings.Contains(body, "sk_live_") || !strings.Contains(body, "account:[redacted key]") {
			t.Errorf("%s:\n%s", target, body)
		}
	}
}

// A HealthHandler not made by NewHealthHandler has no jobs to judge: it must not answer that
// all is well.
func TestAZeroHealthHandlerAnswers500(t *testing.T) {
	t.Parallel()
	for _, h := range []*reconcile.HealthHandler{nil, {}} {
		if w := get(h, http.MethodGet, "/healthz"); w.Code != http.StatusInternalServerError {
			t.Errorf("%#v answered %d: %s", h, w.Code, w.Body)
		}
	}
}

// A Monitor not made by NewMonitor has no jobs: a health handler over it would answer "OK: 0
// of 0 jobs healthy" for ever, so NewHealthHandler refuses it; and a write told to it (the
// console's resolutions, the metrics' batches) does not panic.
func TestAHealthHandlerRefusesAMonitorNotMadeByNewMonitor(t *testing.T) {
	t.Parallel()
	m := &reconcile.Monitor{}
	if h, err := reconcile.NewHealthHandler(m); err == nil {
		t.Errorf("NewHealthHandler accepted a zero Monitor; it answers %d: %s", get(h, http.MethodGet, "/healthz?format=text").Code,
			get(h, http.MethodGet, "/healthz?format=text").Body)
	}
	for _, m := range []*reconcile.Monitor{m, nil} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("Forget on %#v panicked: %v", m, p)
				}
			}()
			m.Forget()
		}()
	}
}
