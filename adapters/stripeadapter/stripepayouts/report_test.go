package stripepayouts_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/tieout"
)

// logBuffer collects a logger's lines, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// reportLister builds a ReportLister over srv that polls every millisecond, logging into log.
func reportLister(t testing.TB, srv *stripetest.Server, opt stripepayouts.ReportOptions, log *logBuffer) *stripepayouts.ReportLister {
	t.Helper()
	if opt.PollInterval == 0 {
		opt.PollInterval = time.Millisecond
	}
	if log != nil {
		opt.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	r, err := newLister(t, srv, stripepayouts.Config{PerPage: 2}).WithReports(opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sweepTwice ties the world out with l as its sweep: p1 paid, then later (p1 failed, p2, p3,
// p4 pending), and the never-paid-out walk; it returns the findings by (record, kind).
func sweepTwice(t *testing.T, w *world, l tieout.Lister, lane string) map[[2]string]int {
	t.Helper()
	s := memstore.New[string, string](memstore.Options{Now: w.clk.now})
	ledger := &ledgerRef{}
	ledger.set(w.memLedger())
	pass(t, step(t, lane, l, ledger, s), 10)
	return found(t, s)
}

// The same world tied out through the report and through per-payout listing gives the same
// findings, each once: every kind a line can have (unbooked charge, refund, dispute, refund
// failure, payment failure, payout failure; amounts differing in presentment and in
// settlement; a type the policy does not know) and the payout's own (a sum that does not hold,
// a manual payout), for p1 and p2 served from reports. The report path lists no balance
// transaction of the payouts it covers, and lists one by one the one it cannot cover (p1 once
// it failed).
func TestTheReportFindsWhatListingFinds(t *testing.T) {
	w := newWorld(t)
	w.srv.SetReporting(stripetest.Reporting{DataAvailableEnd: t0.Add(365 * 24 * time.Hour), Polls: 1})
	log := &logBuffer{}
	byReport := reportLister(t, w.srv, stripepayouts.ReportOptions{}, log)
	byList := newLister(t, w.srv, stripepayouts.Config{PerPage: 2})

	lists := func() int { return w.srv.Requests(stripetest.ListBalanceTransactions) }
	w.srv.ResetLog()
	viaReport := sweepTwice(t, w, byReport, "report")
	if n := lists(); n != 0 {
		t.Errorf("the report path listed balance transactions %d times for p1, paid and covered", n)
	}
	if n := w.srv.Requests(stripetest.CreateReportRun); n != 1 {
		t.Errorf("%d report runs for one page, want 1", n)
	}
	viaList := sweepTwice(t, w, byList, "list")
	if !maps.Equal(viaReport, viaList) {
		t.Errorf("p1 through the report found %v\nthrough listing %v", viaReport, viaList)
	}

	w.later()
	w.srv.ResetLog()
	ledger := &ledgerRef{}
	ledger.set(w.memLedger())
	sReport := memstore.New[string, string](memstore.Options{Now: w.clk.now})
	sList := memstore.New[string, string](memstore.Options{Now: w.clk.now})
	pass(t, step(t, "report", byReport, ledger, sReport), 10)
	if n := w.srv.Requests(stripetest.ListBalanceTransactions); n != 2 {
		t.Errorf("the report path listed balance transactions %d times, want twice: p1, failed, which no report covers, "+
			"and p2, whose lines do not sum to it", n)
	}
	pass(t, step(t, "list", byList, ledger, sList), 10)
	unpaid(t, w, ledger, sReport)
	unpaid(t, w, ledger, sList)
	if got, want := found(t, sReport), found(t, sList); !maps.Equal(got, want) {
		t.Errorf("through the report %v\nthrough listing %v", got, want)
	}
	checkFound(t, sReport, w.want)
	if strings.Contains(log.String(), "level=WARN") {
		t.Errorf("warnings where every report could be used: %s", log.String())
	}
	if strings.Contains(log.String(), w.srv.Key()) {
		t.Error("the key is in the log")
	}
}

// A payout the report type has no data for yet (effective after data_available_end) is listed
// one by one, and so is every payout of a page whose report cannot be used: a run that fails or
// does not finish in time, a file too large, a result url on another host (never sent the key),
// a file that does not read. Each is logged with why, without the key, and the findings are
// those of listing: a missing or broken report never makes a finding.
func TestAReportThatCannotBeUsedFallsBackToListing(t *testing.T) {
	var evilHits atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { evilHits.Add(1) }))
	defer evil.Close()
	replace := func(old, new string) func([]byte) []byte {
		return func(b []byte) []byte { return bytes.Replace(b, []byte(old), []byte(new), 1) }
	}
	secondRow := func(f func(row []byte) []byte) func([]byte) []byte {
		return func(b []byte) []byte {
			lines := bytes.SplitAfter(b, []byte("\n"))
			lines[2] = f(lines[2])
			return bytes.Join(lines, nil)
		}
	}
	tests := []struct {
		name      string
		reporting stripetest.Reporting
		opt       stripepayouts.ReportOptions
		why       string
	}{
		{name: "the payouts are after the report's data", why: "no data"}, // not a warning: the usual case of recent payouts
		{name: "the run failed", reporting: stripetest.Reporting{Fail: "We could not run this report."}, why: "failed"},
		{name: "the run is not finished in time", reporting: stripetest.Reporting{Polls: 1 << 20}, opt: stripepayouts.ReportOptions{MaxWait: 20 * time.Millisecond},
			why: "did not finish within"},
		{name: "the file is too large", opt: stripepayouts.ReportOptions{MaxBytes: 100}, why: "larger than 100 bytes"},
		{name: "the result is on another host", reporting: stripetest.Reporting{ResultURL: func(string) string { return evil.URL + "/v1/files/file_1/contents" }},
			why: "not fetched"},
		{name: "the result is on another scheme", reporting: stripetest.Reporting{ResultURL: func(u string) string { return strings.Replace(u, "http:", "https:", 1) }},
			why: "not fetched"},
		{name: "the result url carries the key", reporting: stripetest.Reporting{ResultURL: func(u string) string { return u + "?key=" + stripetest.DefaultKey }},
			why: "not fetched"},
		{name: "a NUL byte", reporting: stripetest.Reporting{Contents: secondRow(func(r []byte) []byte { return bytes.Replace(r, []byte("txn_"), []byte("txn_\x00"), 1) })},
			why: "control character"},
		{name: "invalid UTF-8", reporting: stripetest.Reporting{Contents: secondRow(func(r []byte) []byte { return append([]byte{0xff}, r...) })}, why: "not UTF-8"},
		{name: "a 10 KB cell", reporting: stripetest.Reporting{Contents: secondRow(func(r []byte) []byte {
			return bytes.Replace(r, []byte("txn_"), []byte("txn_"+strings.Repeat("a", 10_000)), 1)
		})}, why: "more than a report's cell holds"},
		{name: "a wrong header", reporting: stripetest.Reporting{Contents: replace("gross", "grosss")}, why: "lacks the column"},
		{name: "a missing column", reporting: stripetest.Reporting{Contents: func(b []byte) []byte {
			var out [][]byte
			for _, l := range bytes.SplitAfter(b, []byte("\n")) {
				if i := bytes.LastIndexByte(bytes.TrimSuffix(l, []byte("\n")), ','); i >= 0 {
					l = append(l[:i:i], '\n')
				}
				out = append(out, l)
			}
			return bytes.Join(out, nil)
		}}, why: "lacks the column"},
		{name: "a duplicate balance transaction", reporting: stripetest.Reporting{Contents: secondRow(func(r []byte) []byte { return append(slices.Clone(r), r...) })},
			why: "listed twice"},
		{name: "a line left out", reporting: stripetest.Reporting{Contents: secondRow(func([]byte) []byte { return nil })},
			why: "do not sum to it"},
		{name: "a row of a payout not asked for", reporting: stripetest.Reporting{Contents: secondRow(func(r []byte) []byte {
			i := bytes.IndexByte(r, ',')
			return append([]byte("po_1NotAsked"), r[i:]...)
		})}, why: "which the page does not hold"},
		{name: "more decimals than the currency has", reporting: stripetest.Reporting{Contents: secondRow(func(r []byte) []byte {
			return bytes.Replace(r, []byte(",usd,"), []byte(",usd,1.001,"), 1)
		})}, why: "does not read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			if tt.reporting.DataAvailableEnd.IsZero() && tt.why != "no data" {
				tt.reporting.DataAvailableEnd = t0.Add(365 * 24 * time.Hour)
			}
			w.srv.SetReporting(tt.reporting)
			log := &logBuffer{}
			viaReport := sweepTwice(t, w, reportLister(t, w.srv, tt.opt, log), "report")
			viaList := sweepTwice(t, w, newLister(t, w.srv, stripepayouts.Config{PerPage: 2}), "list")
			if !maps.Equal(viaReport, viaList) {
				t.Errorf("through the report %v\nthrough listing %v", viaReport, viaList)
			}
			if tt.why != "no data" && (!strings.Contains(log.String(), "listed one by one") || !strings.Contains(log.String(), tt.why)) {
				t.Errorf("the log does not say why (%q): %s", tt.why, log.String())
			}
			if tt.why == "no data" && w.srv.Requests(stripetest.CreateReportRun) != 0 {
				t.Errorf("%d report runs for payouts past the data", w.srv.Requests(stripetest.CreateReportRun))
			}
			if strings.Contains(log.String(), w.srv.Key()) {
				t.Errorf("the key is in the log: %s", log.String())
			}
		})
	}
	if n := evilHits.Load(); n != 0 {
		t.Errorf("the other host got %d requests", n)
	}
}

// A rate limit on any of the report's calls defers the step with nothing written, and the next
// step does the work; an outage fails the step (reconcile.ErrUnavailable), nothing written.
func TestRateLimitsAndOutagesOnTheReportDelayTheTieOut(t *testing.T) {
	for _, route := range []stripetest.Route{stripetest.RetrieveReportType, stripetest.CreateReportRun, stripetest.RetrieveReportRun, stripetest.DownloadFile} {
		t.Run(string(route), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := newWorld(t)
			w.srv.SetReporting(stripetest.Reporting{DataAvailableEnd: t0.Add(365 * 24 * time.Hour)})
			w.srv.ResetLog()
			s := memstore.New[string, string](memstore.Options{Now: w.clk.now})
			ledger := &ledgerRef{}
			ledger.set(w.memLedger())
			log := &logBuffer{}
			st := step(t, "sweep", reportLister(t, w.srv, stripepayouts.ReportOptions{}, log), ledger, s)
			w.srv.Inject(route, stripetest.Fault{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"3"}}, Times: 1})
			rep, err := st.RunBatch(ctx)
			if err != nil || !rep.RateLimited || !rep.Deferred || rep.RetryAfter != 3*time.Second {
				t.Fatalf("a 429: %+v, %v", rep, err)
			}
			w.srv.Inject(route, stripetest.Fault{Status: http.StatusBadGateway, Body: "<html>bad gateway</html>", Times: 1})
			if _, err := st.RunBatch(ctx); !errors.Is(err, reconcile.ErrUnavailable) {
				t.Fatalf("a 502: %v", err)
			}
			if cur, _ := s.ReadLane(ctx, job, "sweep"); cur.Position != "" || len(found(t, s)) != 0 {
				t.Fatalf("written after a fault: %q, %v", cur.Position, found(t, s))
			}
			pass(t, st, 10)
			if len(found(t, s)) == 0 || w.srv.Requests(stripetest.ListBalanceTransactions) != 0 {
				t.Errorf("after the faults: %d findings, %d listings: %s", len(found(t, s)), w.srv.Requests(stripetest.ListBalanceTransactions), log)
			}
		})
	}
}

// A step with a deadline waits for a run at most half the time left, then lists its page, so
// that a step given less time than a report takes still ties its page out, within its
// deadline; a cancelled step ends the wait at once, with its error.
func TestTheContextBoundsTheWaitForARun(t *testing.T) {
	w := newWorld(t)
	w.srv.SetReporting(stripetest.Reporting{DataAvailableEnd: t0.Add(365 * 24 * time.Hour), Polls: 1 << 20})
	log := &logBuffer{}
	r := reportLister(t, w.srv, stripepayouts.ReportOptions{PollInterval: 5 * time.Millisecond, MaxWait: time.Hour}, log)
	s := memstore.New[string, string](memstore.Options{Now: w.clk.now})
	ledger := &ledgerRef{}
	ledger.set(w.memLedger())
	st := step(t, "sweep", r, ledger, s)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rep, err := st.RunBatch(ctx) // past its deadline, the listing would fail
	if err != nil || rep.Scanned != 1 {
		t.Fatalf("a step of 2s: %+v, %v", rep, err)
	}
	if !strings.Contains(log.String(), "did not finish within") || len(found(t, s)) == 0 {
		t.Errorf("the page was not listed after the wait: %d findings, log %s", len(found(t, s)), log.String())
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := r.Groups(ctx, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("Groups cancelled: %v, want context.Canceled", err)
	}
}

func TestReportOptionsAreChecked(t *testing.T) {
	srv := newServer(t, &clock{t: t0})
	l := newLister(t, srv, stripepayouts.Config{})
	for _, opt := range []stripepayouts.ReportOptions{{PollInterval: -1}, {MaxWait: -1}, {MaxBytes: -1}} {
		if _, err := l.WithReports(opt); err == nil {
			t.Errorf("%+v accepted", opt)
		}
	}
	acct, err := l.ForAccount("acct_1Connected")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acct.WithReports(stripepayouts.ReportOptions{}); err == nil || !strings.Contains(err.Error(), "connected account") {
		t.Errorf("a connected account's lister: %v", err)
	}
}

// countingLimiter grants every call and counts them.
type countingLimiter struct{ n atomic.Int64 }

func (l *countingLimiter) Wait(ctx context.Context) error {
	l.n.Add(1)
	return ctx.Err()
}

// Every call a ReportLister makes, the report's included, waits for the limiter first.
func TestEveryReportCallIsPaced(t *testing.T) {
	w := newWorld(t)
	w.srv.SetReporting(stripetest.Reporting{DataAvailableEnd: t0.Add(365 * 24 * time.Hour), Polls: 2})
	w.srv.ResetLog()
	limiter := &countingLimiter{}
	r, err := newLister(t, w.srv, stripepayouts.Config{Limiter: limiter}).WithReports(stripepayouts.ReportOptions{PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s := memstore.New[string, string](memstore.Options{Now: w.clk.now})
	ledger := &ledgerRef{}
	ledger.set(w.memLedger())
	pass(t, step(t, "sweep", r, ledger, s), 10)
	if calls := len(w.srv.Log()); calls == 0 || int64(calls) != limiter.n.Load() || w.srv.Requests(stripetest.RetrieveReportRun) != 3 {
		t.Errorf("%d requests (%d polls), %d waits for the limiter", calls, w.srv.Requests(stripetest.RetrieveReportRun), limiter.n.Load())
	}
}
