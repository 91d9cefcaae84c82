package reconcile_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

// What a health endpoint, which usually has no sign-in, must not show: a failure's text.
const (
	sqlFailure     = `reconcile: job sweep: read: pgstore: read batch: ERROR: column h.status does not exist (SQLSTATE 42703) in "billing_internal"."payments"`
	gatewayFailure = `stripeadapter: list: reconcile: external system unavailable: proxy: dial postgres://ledger:hunter2@ledger-db.internal:5432/ledger`
	storeError     = `pgstore: read catalog for "billing_internal"."payments": failed to connect to user=postgres database=ledger 127.0.0.1:5999: dial error`
)

// shown lists what of the failures above an answer shows.
func shown(body string) []string {
	var out []string
	for _, s := range []string{"SQLSTATE", "billing_internal", "hunter2", "ledger-db", "postgres://", "127.0.0.1", "dial error", "h.status"} {
		if strings.Contains(body, s) {
			out = append(out, s)
		}
	}
	return out
}

func TestTheHealthAnswerShowsAFailureOnlyByItsReason(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	failed := reconcile.Status{Job: job, Now: now, Rows: 1, CycleStartedAt: now, LastBatchAt: now.Add(-time.Minute), LastBatchScanned: 1,
		LastFailureAt: now, LastFailure: sqlFailure,
		Lanes: []reconcile.LaneStatus{{Lane: "events", CreatedAt: now, LastRunAt: now.Add(-time.Minute), LastFailureAt: now, LastFailure: gatewayFailure}}}
	// A fan-out whose account a's status holds the same failures, and b's cannot be read.
	acctA := failed
	acctA.Job = "payments@acct_a"
	fan, err := reconcile.NewFanOut(reconcile.FanOutConfig{Name: "connect",
		Accounts: func(context.Context) ([]string, error) { return []string{"acct_a", "acct_b"}, nil },
		Build: func(acct string) ([]reconcile.FanOutJob, error) {
			status := statusFunc(func(context.Context, string) (reconcile.Status, error) {
				if acct == "acct_b" {
					return reconcile.Status{}, errors.New(storeError)
				}
				return acctA, nil
			})
			return []reconcile.FanOutJob{{Job: "payments@" + acct, Batches: &scripted{}, Status: status}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHealthHandler(t,
		reconcile.MonitorJob{Name: job, Status: statusReader(failed)},
		reconcile.MonitorJob{Name: "connect", Judge: fan.Health})
	for _, target := range []string{"/healthz", "/healthz?format=text"} {
		body := get(h, http.MethodGet, target).Body.String()
		if s := shown(body); len(s) > 0 {
			t.Errorf("%s shows %q of the failures:\n%s", target, s, body)
		}
		for _, want := range []string{
			"the last batch failed at 2026-03-01T12:00:00Z: database error",
			"lane:events: the last step failed at 2026-03-01T12:00:00Z: external system unavailable",
			"account acct_a (job payments@acct_a): last_attempt: the last batch failed at 2026-03-01T12:00:00Z: database error",
			"account acct_b (job payments@acct_b): status unavailable",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q:\n%s", target, want, body)
			}
		}
	}
	if st := decode(t, get(h, http.MethodGet, "/healthz")).Jobs[0].Status; st.LastFailure != "database error" || st.Lanes[0].LastFailure != "external system unavailable" {
		t.Errorf("the JSON status's failures: %q and %q; want their reasons", st.LastFailure, st.Lanes[0].LastFailure)
	}
}

func TestTheHealthTextAnswerCannotBeForged(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const forged = "looks fine\nOK: 1 of 1 jobs healthy\n\x1b]0;pwned\a\x1b[2J"
	st := reconcile.Status{Job: job, Now: now, Rows: 1, CycleStartedAt: now, LastBatchAt: now.Add(-time.Minute), LastBatchScanned: 1,
		LastFailureAt: now, LastFailure: forged, OpenFindings: map[string]int{"unexpected:" + forged: 1},
		Lanes: []reconcile.LaneStatus{{Lane: "events" + forged, CreatedAt: now, GapAt: now, GapOpen: true, GapReason: forged}}}
	judge := func(context.Context, reconcile.HealthPolicy) reconcile.Health {
		return reconcile.Health{Job: "fan", Checks: []reconcile.Check{{Name: "account:" + forged, Value: forged, Limit: forged, Reason: forged}}}
	}
	h := newHealthHandler(t, reconcile.MonitorJob{Name: job, Status: statusReader(st)}, reconcile.MonitorJob{Name: "fan", Judge: judge})
	body := get(h, http.MethodGet, "/healthz?format=text").Body.String()
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "OK:") || strings.ContainsAny(line, "\x1b\a\r") {
			t.Errorf("a stored value made a line of its own, or holds a control character: %q in\n%s", line, body)
		}
	}
	if !strings.Contains(body, `looks fine\nOK: 1 of 1 jobs healthy\n\x1b]0;pwned\x07\x1b[2J`) {
		t.Errorf("the stored values are not shown escaped:\n%s", body)
	}
}

// countingReader counts its reads and blocks each until release is closed, whatever its
// context says.
type countingReader struct {
	release         chan struct{}
	reads, inFlight atomic.Int64
	maxInFlight     atomic.Int64
}

func (r *countingReader) Status(context.Context, string) (reconcile.Status, error) {
	r.reads.Add(1)
	n := r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	for m := r.maxInFlight.Load(); n > m && !r.maxInFlight.CompareAndSwap(m, n); m = r.maxInFlight.Load() {
	}
	<-r.release
	return reconcile.Status{}, nil
}

// Concurrent probes share the read in flight: a reader that hangs holds one goroutine however
// many probes come, and each probe still answers by its own deadline.
func TestConcurrentHealthProbesShareOneRead(t *testing.T) {
	t.Parallel()
	r := &countingReader{release: make(chan struct{})}
	h := healthHandlerOf(t, reconcile.MonitorConfig{Timeout: 20 * time.Millisecond,
		Jobs: []reconcile.MonitorJob{{Name: job, Status: r}, {Name: "fan", Judge: func(ctx context.Context, _ reconcile.HealthPolicy) reconcile.Health {
			st, _ := r.Status(ctx, "fan")
			return reconcile.Health{Job: "fan", OK: true, Status: st}
		}}}})
	const probes = 300
	var wg sync.WaitGroup
	codes := make([]int, probes)
	for i := range probes {
		wg.Go(func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
			codes[i] = w.Code
		})
	}
	wg.Wait() // every probe answered, though the reads still hang
	for i, c := range codes {
		if c != http.StatusServiceUnavailable {
			t.Fatalf("probe %d answered %d, want 503", i, c)
		}
	}
	if n, max := r.reads.Load(), r.maxInFlight.Load(); n != 2 || max != 2 {
		t.Errorf("%d probes made %d reads, at most %d at once; want one per job (2)", probes, n, max)
	}
	close(r.release)
}
