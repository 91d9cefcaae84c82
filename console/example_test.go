package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/console"
)

// memStore is a read-only reconcile.Reviewer and StatusReader in memory: a host's tests can
// fake the store this way. A real host gives the console its *pgstore.Store[L].
type memStore struct{ findings []reconcile.Finding }

func (m *memStore) ListFindings(_ context.Context, q reconcile.FindingQuery) ([]reconcile.Finding, error) {
	var out []reconcile.Finding
	for _, f := range m.findings {
		if f.ID > q.AfterID && (q.Job == "" || f.Job == q.Job) && f.Open() == (q.State != reconcile.FindingsResolved) {
			out = append(out, f)
		}
	}
	return out[:min(len(out), q.Limit)], nil
}

func (m *memStore) Finding(_ context.Context, id int64) (reconcile.FindingDetail, error) {
	for _, f := range m.findings {
		if f.ID == id {
			return reconcile.FindingDetail{Finding: f, History: []reconcile.FindingEvent{{At: f.DetectedAt, Action: reconcile.ActionDetected, Actor: f.Job}}}, nil
		}
	}
	return reconcile.FindingDetail{}, reconcile.ErrFindingNotFound
}

func (m *memStore) ResolveFinding(context.Context, int64, reconcile.Resolution) error {
	return errors.New("read-only")
}

func (m *memStore) ReopenFinding(context.Context, int64, string, string) error {
	return errors.New("read-only")
}

func (m *memStore) Status(_ context.Context, job string) (reconcile.Status, error) {
	return reconcile.Status{Job: job, Now: time.Now(), OpenFindings: map[string]int{"paid_locally_not_externally": 1}}, nil
}

func Example() {
	store := &memStore{findings: []reconcile.Finding{{
		ID: 7, Job: "payments", RecordID: "42", ExternalID: "pi_3PExample000042", Kind: "paid_locally_not_externally",
		Local: "paid", External: "canceled", DetectedAt: time.Now().Add(-time.Hour),
		// What the classifier saw differ, its amounts formatted in their own decimals.
		Diffs: []reconcile.Diff{{Field: "amount", Local: reconcile.FormatAmount(1000, "jpy"), External: reconcile.FormatAmount(1200, "jpy")}},
	}}}
	// The jobs the overview shows, read and judged as the health endpoint and the metrics do.
	monitor, err := reconcile.NewMonitor(reconcile.MonitorConfig{Jobs: []reconcile.MonitorJob{{Name: "payments", Status: store}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := console.New(console.Config{
		Store:   store,
		Monitor: monitor,
		// The host's own authentication: here, a reviewer's name set by a trusted proxy.
		// Trusting a client header such as X-Reviewer is only safe behind a proxy that
		// authenticates every request and sets the header itself, stripping any the client
		// sent, and when nothing can reach the console except through that proxy. Anywhere
		// else anyone can send X-Reviewer: admin.
		Authenticate: func(r *http.Request) (string, error) {
			if u := r.Header.Get("X-Reviewer"); u != "" {
				return u, nil
			}
			return "", errors.New("not signed in")
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/review/", http.StripPrefix("/review", c))

	get := func(path, reviewer string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if reviewer != "" {
			req.Header.Set("X-Reviewer", reviewer)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec
	}
	fmt.Println("anonymous:", get("/review/findings", "").Code)
	list := get("/review/findings", "alice")
	fmt.Println("alice:", list.Code)
	fmt.Println("links to Stripe:", strings.Contains(list.Body.String(), "https://dashboard.stripe.com/payments/pi_3PExample000042"))
	page := get("/review/findings/7", "alice")
	fmt.Println("finding page:", page.Code)
	fmt.Println("shows what differs:", strings.Contains(page.Body.String(), "<td class=\"text\">JPY 1,000</td><td class=\"text\">JPY 1,200</td>"))
	fmt.Println("unknown finding:", get("/review/findings/8", "alice").Code)
	// Output:
	// anonymous: 403
	// alice: 200
	// links to Stripe: true
	// finding page: 200
	// shows what differs: true
	// unknown finding: 404
}
