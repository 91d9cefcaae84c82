package console_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/console"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// The host table of the tests. Its id is text so that a hostile record id can be a real row.
const paymentsDDL = `CREATE TABLE payments (
	id          text PRIMARY KEY,
	external_id text NOT NULL,
	status      text NOT NULL,
	order_ref   text GENERATED ALWAYS AS ('ord-' || id) STORED, -- a search column
	created_at  timestamptz NOT NULL DEFAULT now() - interval '1 day',
	updated_at  timestamptz NOT NULL DEFAULT now() - interval '1 hour'
)`

// Hostile strings, as a careless or malicious upstream could put them in finding data.
const (
	hostileID       = `<script>alert("id")</script>`
	hostileLocal    = `"><img src=x onerror=alert('local')>`
	hostileExternal = `</td><script>alert('external')</script>`
	hostileDetail   = `<script>alert('detail')</script> & "quoted" 'too'`
	hostileExtID    = `javascript:alert('extid')`
	hostileNote     = `<script>alert('note')</script>"'`
	hostileField    = `<script>alert("field")</script>`
	hostileDiff     = `</td></tr><script>alert('diff')</script>`
)

// world is a database with one reconciled job and the console over it.
type world struct {
	pool    *pgxpool.Pool
	store   *pgstore.Store[string]
	console *console.Console
	srv     *httptest.Server
	ids     map[string]int64 // open finding id by record id, after the first cycle
}

// The sweep job's planted drift: records 1–2 missed their success webhook (Repairable, with a
// command), 3–4 are paid locally but canceled at Stripe (NeedsReview), 5–6 are in sync.
var sweepRows = []struct{ id, ext, local, remote string }{
	{"1", "pi_1TestMissed0001", "pending", "succeeded"},
	{"2", "pi_1TestMissed0002", "pending", "succeeded"},
	{"3", "pi_1TestCanceled03", "paid", "canceled"},
	{"4", "pi_1TestCanceled04", "paid", "canceled"},
	{"5", "pi_1TestInSync0005", "paid", "succeeded"},
	{"6", "pi_1TestInSync0006", "paid", "succeeded"},
}

// newWorld migrates a schema of the test's own, plants the sweep job's drift and reconciles it
// for one cycle, and serves a console over it. With hostile, a second job ("hostile") records
// a finding made of hostile strings, through the store's Commit. The console's Monitor reads
// every status anew (TTL -1); see newWorldTTL.
func newWorld(t *testing.T, hostile bool, mod func(*console.Config)) *world {
	t.Helper()
	return newWorldTTL(t, hostile, -1, mod)
}

// newWorldTTL is newWorld with a Monitor that keeps statuses for ttl. The Monitor's jobs are
// Config.Jobs after mod ("hostile", "idle" and "sweep" if none), each read through the store
// but for a job the store does not have, whose status cannot be read; unless mod sets
// Config.Monitor.
func newWorldTTL(t *testing.T, hostile bool, ttl time.Duration, mod func(*console.Config)) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{pool: pgtest.Pool(t), ids: map[string]int64{}}
	if _, err := w.pool.Exec(ctx, paymentsDDL); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, w.pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	var err error
	if w.store, err = pgstore.New(w.pool, pgstore.Config{Table: "payments", AggregateType: "payment", SearchColumns: []string{"order_ref"}}); err != nil {
		t.Fatal(err)
	}
	ext := map[string]string{}
	for _, r := range sweepRows {
		if _, err := w.pool.Exec(ctx, `INSERT INTO payments (id, external_id, status) VALUES ($1, $2, $3)`, r.id, r.ext, r.local); err != nil {
			t.Fatal(err)
		}
		ext[r.ext] = r.remote
	}
	w.cycle(t, "sweep", ext)
	if hostile {
		w.commitHostile(t)
	}
	open, err := w.store.ListFindings(ctx, reconcile.FindingQuery{State: "open"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range open {
		w.ids[f.RecordID] = f.ID
	}

	cfg := console.Config{
		Store:        w.store,
		Authenticate: headerAuth,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if mod != nil {
		mod(&cfg)
	}
	if cfg.Monitor == nil {
		cfg.Monitor = w.monitor(t, ttl, cfg.Jobs...)
	}
	if w.console, err = console.New(cfg); err != nil {
		t.Fatal(err)
	}
	w.srv = httptest.NewServer(w.console)
	t.Cleanup(w.srv.Close)
	return w
}

// monitor is a Monitor of jobs ("hostile", "idle" and "sweep" if none) over the world's store,
// keeping statuses for ttl; a job other than those three has no store, and its status cannot
// be read.
func (w *world) monitor(t *testing.T, ttl time.Duration, jobs ...string) *reconcile.Monitor {
	t.Helper()
	if len(jobs) == 0 {
		jobs = []string{"hostile", "idle", "sweep"}
	}
	var mj []reconcile.MonitorJob
	for _, job := range jobs {
		var sr reconcile.StatusReader = w.store
		if !slices.Contains([]string{"hostile", "idle", "sweep"}, job) {
			sr = noStore{}
		}
		mj = append(mj, reconcile.MonitorJob{Name: job, Status: sr})
	}
	m, err := reconcile.NewMonitor(reconcile.MonitorConfig{Jobs: mj, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// noStore is the status reader of a job without a store.
type noStore struct{}

func (noStore) Status(_ context.Context, job string) (reconcile.Status, error) {
	return reconcile.Status{}, fmt.Errorf("console test: no store is configured for job %q", job)
}

// cycle runs job over the payments against a fake Stripe answering ext, until the cursor wraps.
func (w *world) cycle(t *testing.T, job string, ext map[string]string) {
	t.Helper()
	reconciletest.Cycle(t, reconcile.Config[string, string]{
		Job: job, Source: w.store, Sink: w.store, Gateway: reconciletest.NewGateway(ext),
		Classifier: reconciletest.Classifier(), BatchSize: 4,
	}, 5)
}

// commitHostile records the hostile finding through Commit, as a batch of the job "hostile"
// would, with a payments row behind it whose external id is a javascript: URL.
func (w *world) commitHostile(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := w.pool.Exec(ctx, `INSERT INTO payments (id, external_id, status) VALUES ($1, $2, 'paid')`, hostileID, hostileExtID); err != nil {
		t.Fatal(err)
	}
	b, err := w.store.Read(ctx, reconcile.ReadRequest{Job: "hostile", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.store.Commit(ctx, reconcile.Commit{Job: "hostile", Cursor: b.Cursor, Next: `["9"]`, Outcomes: []reconcile.Outcome{{
		RecordID: hostileID, ExternalID: hostileExtID, Local: hostileLocal, External: hostileExternal, Verified: true,
		Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "paid_locally_not_externally", Detail: hostileDetail,
			Diffs: []reconcile.Diff{{Field: hostileField, Local: hostileDiff, External: "JPY 1,000"}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
}

// headerAuth is the tests' Authenticate: the actor named by the X-Test-User header.
func headerAuth(r *http.Request) (string, error) {
	if u := r.Header.Get("X-Test-User"); u != "" {
		return u, nil
	}
	return "", errors.New("no X-Test-User header")
}

// response is a page as the tests read it.
type response struct {
	status int
	header http.Header
	body   string
}

// do sends one request to the world's console, as actor (none if empty), following no
// redirect.
func (w *world) do(t *testing.T, method, path, actor string, form url.Values, header ...string) response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, w.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if actor != "" {
		req.Header.Set("X-Test-User", actor)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// get fetches a page as actor and fails the test unless it is a 200.
func (w *world) get(t *testing.T, path, actor string) string {
	t.Helper()
	r := w.do(t, http.MethodGet, path, actor, nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s = %d, want 200:\n%s", path, r.status, r.body)
	}
	return r.body
}

var tokenRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// token reads the form token from a finding's page, as actor.
func (w *world) token(t *testing.T, id int64, actor string) string {
	t.Helper()
	m := tokenRE.FindStringSubmatch(w.get(t, fmt.Sprintf("/findings/%d", id), actor))
	if m == nil {
		t.Fatalf("finding %d's page has no form token", id)
	}
	return m[1]
}

// finding reads a finding from the database, not through the console.
func (w *world) finding(t *testing.T, id int64) reconcile.FindingDetail {
	t.Helper()
	d, err := w.store.Finding(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// findingIDs returns the finding ids linked from a list page, in order.
func findingIDs(body string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`<tr id="finding-(\d+)">`).FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}
