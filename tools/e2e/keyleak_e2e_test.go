package e2e_test

// The integrated key-leak test: a server echoing the secret key everywhere it can, a real sweep
// on pgstore with both lanes, and every place a key could land afterwards: errors, the log, an
// observer's arguments, the Prometheus metrics, every table of the test's schema, and every
// console page.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/prommetrics"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/console"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

const e2eKey = "sk_test_51E2eLeakSECRETe2eLeakSECRET0123456789"

// e2eSecrets are the parts of the key that must never be seen (its last four characters may
// be, as Stripe itself shows them).
var e2eSecrets = []string{e2eKey, "E2eLeakSECRET", "e2eLeakSECRET"}

// echoAll answers every request with status. An error answer carries the key, and the
// request's Authorization header, in every field of Stripe's error JSON (code too, unless code
// is given); every answer carries them in every header. A 200 answers a PaymentIntent (or a
// list of one, or of one event) with the key as its status, and as its id too if keyAsID.
func echoAll(status int, code string, keyAsID bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echo := fmt.Sprintf("echo %s | %s", r.Header.Get("Authorization"), e2eKey)
		for _, h := range []string{"Request-Id", "Stripe-Rate-Limited-Reason", "Stripe-Version", "Stripe-Should-Retry",
			"Idempotency-Key", "Original-Request", "Stripe-Account", "Www-Authenticate", "X-Echo", "Server"} {
			w.Header().Set(h, echo)
		}
		w.Header().Set("Retry-After", echo)
		w.Header().Set("Content-Type", "application/json")
		if status != http.StatusOK {
			if status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			w.WriteHeader(status)
			c := code
			if c == "" {
				c = echo
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
				"type": echo, "code": c, "decline_code": echo, "param": echo, "message": echo,
				"doc_url": echo, "request_log_url": echo, "charge": echo, "advice_code": echo,
				"payment_intent": map[string]any{"id": echo, "status": echo}}})
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/")
		if keyAsID || strings.Contains(id, "/") {
			id = e2eKey
		}
		created := time.Now().Add(-2 * time.Hour).Unix()
		pi := map[string]any{"id": id, "object": "payment_intent", "status": echo, "created": created,
			"amount": 100, "currency": "usd", "description": echo, "metadata": map[string]any{"k": echo},
			"last_payment_error": map[string]any{"message": echo, "code": echo}}
		switch {
		case r.URL.Path == "/v1/payment_intents":
			pi["id"] = e2eKey
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "url": echo, "has_more": false, "data": []any{pi}})
		case r.URL.Path == "/v1/events":
			pi["id"] = e2eKey
			ev := map[string]any{"id": e2eKey, "object": "event", "type": "payment_intent.succeeded",
				"created": time.Now().Add(-10 * time.Minute).Unix(), "data": map[string]any{"object": pi}}
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "url": echo, "has_more": false, "data": []any{ev}})
		default:
			_ = json.NewEncoder(w).Encode(pi)
		}
	})
}

// argsObserver records every argument it is given, printed every way.
type argsObserver struct {
	mu   sync.Mutex
	args []string
}

func (o *argsObserver) GatewayCalls(job string, calls int, d time.Duration, class string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.args = append(o.args, fmt.Sprintf("%s %d %v %s", job, calls, d, class))
}

func (o *argsObserver) BatchDone(job string, rep reconcile.Report, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.args = append(o.args, fmt.Sprintf("%s %v %+v %#v %v %+v %#v", job, rep, rep, rep, err, err, err))
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestTheKeyAppearsNowhereAfterARealSweepAndLanesOverPostgres(t *testing.T) {
	t.Parallel()
	for _, f := range []struct {
		name    string
		status  int
		code    string
		keyAsID bool
	}{
		{"400", http.StatusBadRequest, "", false},
		{"401", http.StatusUnauthorized, "", false},
		{"402", http.StatusPaymentRequired, "", false},
		{"403", http.StatusForbidden, "", false},
		{"404 resource_missing", http.StatusNotFound, "resource_missing", false},
		{"404", http.StatusNotFound, "", false},
		{"409 lock_timeout", http.StatusConflict, "lock_timeout", false},
		{"429", http.StatusTooManyRequests, "", false},
		{"500", http.StatusInternalServerError, "", false},
		{"503", http.StatusServiceUnavailable, "", false},
		{"200 with the key as status", http.StatusOK, "", false},
		{"200 with the key as id and status", http.StatusOK, "", true},
	} {
		t.Run(f.name, func(t *testing.T) {
			srv := httptest.NewServer(echoAll(f.status, f.code, f.keyAsID))
			defer srv.Close()
			leakCheck(t, srv.URL, nil)
		})
	}
}

// A host's own classifier may name states as the server sent them, keys and all: the findings
// it makes (their kind, "unexpected:pending-><status>") are the host's data and hold the key,
// but the console's pages and the metrics show it nowhere, not even in a link or a label.
func TestAHostClassifiersKeyInAKindIsShownByNeitherTheConsoleNorTheMetrics(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(echoAll(http.StatusOK, "", false))
	defer srv.Close()
	raw, err := reconcile.NewRuleTable(func(l string) string { return l },
		func(pi *stripe.PaymentIntent) string { return string(pi.Status) },
		reconcile.Rule[string, *stripe.PaymentIntent]{Local: []string{"pending"}, External: []string{"requires_payment_method"},
			Decision: reconcile.Decision{Verdict: reconcile.InSync}})
	if err != nil {
		t.Fatal(err)
	}
	leakCheck(t, srv.URL, raw)
}

// leakCheck runs a sweep (bulk and per object) and both lanes against the server at url, then
// looks for the key everywhere. classifier, if not nil, is a host's own, whose findings may
// hold the key: the stored rows, errors and statuses are then not searched.
func leakCheck(t *testing.T, url string, classifier reconcile.Classifier[string, *stripe.PaymentIntent]) {
	hostData := classifier != nil
	if classifier == nil {
		classifier = stripepolicy.PaymentIntentPolicy()
	}
	ctx := context.Background()
	pool, schema := pgtest.PoolSchema(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE payments (id bigint PRIMARY KEY, external_id text, status text NOT NULL,
		created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	// Pending and paid rows (a paid row whose intent is not found is a finding), and one
	// whose external id is not an id.
	if _, err := pool.Exec(ctx, `INSERT INTO payments
		SELECT i, CASE WHEN i = 6 THEN 'not an id' ELSE 'pi_3LeakTest' || lpad(i::text, 15, '0') END,
			CASE WHEN i % 2 = 0 THEN 'paid' ELSE 'pending' END, now() - interval '2 hours', now() - interval '1 hour'
		FROM generate_series(1, 6) i`); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	var logged syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store, err := pgstore.New(pool, pgstore.Config{Table: "payments", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	gcfg := stripeadapter.GatewayConfig{Key: e2eKey, BaseURL: url, Timeout: 2 * time.Second}
	gw, err := stripeadapter.NewObjectGateway(gcfg, stripeadapter.PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	// A host logs its configuration, or dumps it as JSON.
	logger.Info("starting", "stripe", gcfg)
	cfgJSON, err := json.Marshal(gcfg)
	if err != nil {
		t.Fatal(err)
	}
	const job = "payments"
	// One Monitor for the metrics, the health endpoint and the console, reading anew each time.
	monitor, err := reconcile.NewMonitor(reconcile.MonitorConfig{Logger: logger, TTL: -1, Jobs: []reconcile.MonitorJob{
		{Name: job, Status: store}, {Name: job + "_single", Status: store}}})
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := prommetrics.New(prommetrics.Options{Monitor: monitor})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg); err != nil {
		t.Fatal(err)
	}
	rec := &argsObserver{}
	obs := reconcile.Observers(rec, metrics)

	texts := []string{"config: " + string(cfgJSON)} // and every error and report
	note := func(what string, v any, err error) {
		texts = append(texts, fmt.Sprintf("%s: %v %+v %#v | %v %+v %#v", what, v, v, v, err, err, err))
	}
	for _, perObject := range []bool{false, true} {
		var g reconcile.Gateway[*stripe.PaymentIntent] = gw
		name := job
		if perObject {
			g, name = reconcile.PerObject(g), job+"_single"
		}
		r, err := reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{
			Job: name, Source: store, Sink: store, Gateway: g, Classifier: classifier,
			BatchSize: 4, Concurrency: 2, Logger: logger, Observer: obs,
		})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			rep, err := r.RunBatch(ctx)
			note("sweep", rep, err)
		}
	}
	events, err := gw.EventsFeed(stripeadapter.EventsOptions{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	reverse, err := gw.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.PaymentIntent]{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct {
		name    string
		feed    reconcile.Feed[*stripe.PaymentIntent]
		missing bool
	}{{"events", events, false}, {"reverse", reverse, true}} {
		lane, err := reconcile.NewLane(reconcile.LaneConfig[string, *stripe.PaymentIntent]{
			Job: job, Lane: l.name, Feed: l.feed, Matcher: store, Sink: store, Current: gw,
			Classifier: classifier, ReportMissing: l.missing,
			Logger: logger, Observer: obs,
		})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			rep, err := lane.RunBatch(ctx)
			note("lane "+l.name, rep, err)
		}
	}
	for _, j := range []string{job, job + "_single"} {
		st, err := store.Status(ctx, j)
		note("status", st, err)
		note("health", reconcile.EvaluateHealth(st, reconcile.HealthPolicy{}), nil)
	}
	// The health endpoint's answers, JSON and text.
	health, err := reconcile.NewHealthHandler(monitor)
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, target := range []string{"/healthz", "/healthz?format=text"} {
		rr := httptest.NewRecorder()
		health.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, target, nil))
		answers = append(answers, rr.Body.String())
	}

	// The metrics, as scraped.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var scraped bytes.Buffer
	enc := expfmt.NewEncoder(&scraped, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}

	// Every row of every table of the schema, as text.
	var tables []string
	rows, err := pool.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 5 {
		t.Fatalf("tables %v, %v", tables, err)
	}
	var stored []string
	for _, table := range tables {
		q := fmt.Sprintf(`SELECT t::text FROM %s AS t`, pgx.Identifier{schema, table}.Sanitize())
		rows, err := pool.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range texts {
			stored = append(stored, table+": "+text)
		}
	}

	// Every console page.
	con, err := console.New(console.Config{Store: store, Monitor: monitor, Logger: logger,
		Authenticate: func(*http.Request) (string, error) { return "alice", nil }})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		t.Helper()
		rr := httptest.NewRecorder()
		con.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, path, nil))
		body, _ := io.ReadAll(rr.Result().Body)
		if rr.Code != http.StatusOK {
			t.Fatalf("GET %s = %d:\n%s", path, rr.Code, body)
		}
		return fmt.Sprintf("%s %v\n%s", path, rr.Header(), body)
	}
	pages := []string{get("/"), get("/findings"), get("/findings?state=all")}
	rows, err = pool.Query(ctx, `SELECT id FROM reconcile_findings`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		pages = append(pages, get(fmt.Sprintf("/findings/%d", id)))
	}

	// The places searched are the right ones: they hold what the sweep did.
	if all := strings.Join(stored, "\n"); !strings.Contains(all, "pi_3LeakTest") || !strings.Contains(all, "reconcile_cursors") && !strings.Contains(all, job) {
		t.Fatalf("the tables hold nothing of the sweep:\n%s", all)
	}
	if !strings.Contains(scraped.String(), `job="`+job+`"`) {
		t.Fatalf("the metrics hold nothing of the job:\n%s", scraped.String())
	}
	if len(rec.args) == 0 || !strings.Contains(pages[0], job) {
		t.Fatalf("the observer (%d calls) or the overview saw nothing:\n%s", len(rec.args), pages[0])
	}

	noKey := func(what string, texts ...string) {
		t.Helper()
		for _, text := range texts {
			for _, s := range e2eSecrets {
				if strings.Contains(text, s) {
					t.Errorf("%s shows the key: %s", what, text)
					break
				}
			}
		}
	}
	if hostData {
		if !strings.Contains(strings.Join(stored, "\n"), "E2eLeakSECRET") {
			t.Fatal("the host's classifier stored no key: the test tests nothing")
		}
		texts, stored = nil, nil
	}
	noKey("an error, report, status or health", texts...)
	noKey("the log", logged.String())
	noKey("an observer argument", rec.args...)
	noKey("the metrics", scraped.String())
	noKey("a table row", stored...)
	noKey("a console page", pages...)
	noKey("the health endpoint", answers...)
	t.Logf("%d findings, %d stored rows, %d pages, %d log bytes", len(ids), len(stored), len(pages), len(logged.String()))
}
