package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// batchGateway answers FetchBatch from listed (one wait per page of pageSize ids) and Fetch from
// all; a listed id is one the bulk call can see. fail, when set, decides the bulk call's error
// after page n.
type batchGateway struct {
	*fakeGateway
	listed   map[string]string
	pageSize int
	fail     func(page int) error
	panics   bool

	mu      sync.Mutex
	lookups []reconcile.Lookup
}

func (g *batchGateway) FetchBatch(ctx context.Context, lookups []reconcile.Lookup, wait func(context.Context) error) (map[string]string, error) {
	if g.panics {
		panic("bulk decoder bug")
	}
	g.mu.Lock()
	g.lookups = append(g.lookups, lookups...)
	g.mu.Unlock()
	var ids []string
	for _, l := range lookups {
		if _, ok := g.listed[l.ExternalID]; ok {
			ids = append(ids, l.ExternalID)
		}
	}
	found := map[string]string{}
	for page := 0; page == 0 || page*g.pageSize < len(ids); page++ {
		if err := wait(ctx); err != nil {
			return found, err
		}
		if g.fail != nil {
			if err := g.fail(page); err != nil {
				return found, err
			}
		}
		for _, id := range ids[page*g.pageSize : min(len(ids), (page+1)*g.pageSize)] {
			found[id] = g.listed[id]
		}
	}
	return found, nil
}

// payments: rows 1..n, local paid; external: odd rows succeeded, even rows canceled, every
// fifth row unknown to the external system.
func paymentsWorld(n int) map[string]string {
	all := map[string]string{}
	for i := int64(1); i <= int64(n); i++ {
		switch {
		case i%5 == 0:
		case i%2 == 1:
			all[extID(i)] = "succeeded"
		default:
			all[extID(i)] = "canceled"
		}
	}
	return all
}

func answerFrom(all map[string]string) func(context.Context, int, string) (string, error) {
	return func(_ context.Context, _ int, id string) (string, error) {
		if s, ok := all[id]; ok {
			return s, nil
		}
		return "", reconcile.ErrNotFound
	}
}

// cycle runs batches until the cycle wraps and returns the summed report.
func cycle(t *testing.T, cfg reconcile.Config[string, string]) reconcile.Report {
	t.Helper()
	sum := reconcile.Report{Verdicts: map[reconcile.Verdict]int{}}
	for range 1000 {
		rep, err := reconcile.RunBatch(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		sum.Scanned += rep.Scanned
		sum.GatewayCalls += rep.GatewayCalls
		sum.NewFindings += rep.NewFindings
		sum.NewCommands += rep.NewCommands
		for v, n := range rep.Verdicts {
			sum.Verdicts[v] += n
		}
		if rep.Wrapped {
			return sum
		}
	}
	t.Fatal("the cycle did not wrap")
	return sum
}

func TestABatchGatewayGivesTheSameResultsWithFewerCalls(t *testing.T) {
	const n = 100
	all := paymentsWorld(n)
	// The bulk call sees three rows in four; the rest, and the missing ones, go one by one.
	listed := map[string]string{}
	for i := int64(1); i <= n; i++ {
		if s, ok := all[extID(i)]; ok && i%4 != 0 {
			listed[extID(i)] = s
		}
	}

	perObject := newStore(newClock(), n, always("paid"))
	one := newFakeGateway(0, answerFrom(all))
	cfg := config(perObject, reconcile.GatewayFunc[string](one.Fetch))
	cfg.BatchSize = 25
	want := cycle(t, cfg)

	bulk := newStore(newClock(), n, always("paid"))
	bg := &batchGateway{fakeGateway: newFakeGateway(0, answerFrom(all)), listed: listed, pageSize: 10}
	cfg = config(bulk, bg)
	cfg.BatchSize = 25
	got := cycle(t, cfg)

	if diff := cmp.Diff(want.Verdicts, got.Verdicts); diff != "" {
		t.Errorf("verdicts differ between per-object and bulk (-per-object +bulk):\n%s", diff)
	}
	if diff := cmp.Diff(reconciletest.Findings(t, perObject, ""), reconciletest.Findings(t, bulk, "")); diff != "" {
		t.Errorf("findings differ (-per-object +bulk):\n%s", diff)
	}
	if diff := cmp.Diff(perObject.Commands(), bulk.Commands()); diff != "" {
		t.Errorf("commands differ (-per-object +bulk):\n%s", diff)
	}
	notListed := n - len(listed)
	pages := 0
	for b := range 4 { // listed ids per batch of 25, in pages of 10
		k := 0
		for i := b*25 + 1; i <= (b+1)*25; i++ {
			if _, ok := listed[extID(int64(i))]; ok {
				k++
			}
		}
		pages += max(1, (k+9)/10)
	}
	if one.Calls() != n || bg.Calls() != notListed || got.GatewayCalls != pages+notListed {
		t.Fatalf("per-object made %d calls; bulk made %d pages + %d fetches, reported %d; want %d, %d pages + %d fetches",
			one.Calls(), pages, bg.Calls(), got.GatewayCalls, n, pages, notListed)
	}
	for i := int64(1); i <= n; i++ {
		if _, ok := listed[extID(i)]; ok && bg.Asked(extID(i)) != 0 {
			t.Fatalf("%s was found in bulk and still fetched on its own", extID(i))
		}
	}
}

func TestABatchGatewayIsAskedOnlyAboutRowsToCheck(t *testing.T) {
	c := newClock()
	s := memstore.New[int64, string](memstore.Options{Now: c.Now})
	old := c.Now().Add(-time.Hour)
	s.Put(memstore.Row[int64, string]{Key: 1, ExternalID: extID(1), Local: "paid", CreatedAt: old.Add(-time.Minute), UpdatedAt: old})
	s.Put(memstore.Row[int64, string]{Key: 2, ExternalID: extID(2), Local: "paid", UpdatedAt: c.Now()}) // in grace
	s.Put(memstore.Row[int64, string]{Key: 3, ExternalID: "", Local: "paid", UpdatedAt: old})           // no id
	bg := &batchGateway{fakeGateway: newFakeGateway(0, answerFrom(nil)), listed: map[string]string{extID(1): "succeeded"}, pageSize: 100}
	if _, err := reconcile.RunBatch(context.Background(), config(s, bg)); err != nil {
		t.Fatal(err)
	}
	want := []reconcile.Lookup{{ExternalID: extID(1), CreatedAt: old.Add(-time.Minute)}}
	if diff := cmp.Diff(want, bg.lookups); diff != "" {
		t.Fatalf("lookups (-want +got):\n%s", diff)
	}
}

func TestBatchGatewayFailures(t *testing.T) {
	const n = 30
	all := paymentsWorld(n)
	listed := map[string]string{}
	for id, s := range all {
		listed[id] = s
	}
	tests := []struct {
		name string
		fail func(page int) error
		// want: calls in all, verdict counts, or a batch error
		wantErr                       error
		wantCalls                     int
		wantScanned                   int // rows committed; the cursor stops after the last
		wantUnverifiable              int
		wantRateLimited, wantThrottle bool
	}{
		{
			name: "a rate limit on the second page commits the rows before the first one not asked and asks no more",
			fail: func(page int) error {
				if page == 1 {
					return &reconcile.RateLimitError{RetryAfter: 3 * time.Second}
				}
				return nil
			},
			// Page 0 answers rows 1-4 and 6-12; row 5 is not listed, so it would be asked on its
			// own, and the rate limit stops that: rows 1-4 commit, row 5 is the next batch's first.
			wantCalls: 2, wantScanned: 4, wantRateLimited: true, wantThrottle: true,
		},
		{
			name:      "an unavailable bulk call falls back to one call per row",
			fail:      func(int) error { return reconcile.ErrUnavailable },
			wantCalls: 1 + n, wantScanned: n,
		},
		{
			name:    "an aborting bulk call aborts the batch",
			fail:    func(int) error { return reconcile.ErrAbortBatch },
			wantErr: reconcile.ErrAbortBatch,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(newClock(), n, always("paid"))
			sink := &countingSink{Sink: s}
			bg := &batchGateway{fakeGateway: newFakeGateway(0, answerFrom(all)), listed: listed, pageSize: 10, fail: tt.fail}
			lim := &recordingLimiter{}
			cfg := config(s, bg)
			cfg.Sink, cfg.Limiter, cfg.BatchSize = sink, lim, n
			rep, err := reconcile.RunBatch(context.Background(), cfg)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				assertNothingWritten(t, s, sink, n)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.GatewayCalls != tt.wantCalls || rep.Scanned != tt.wantScanned || rep.Verdicts[reconcile.Unverifiable] != tt.wantUnverifiable || rep.RateLimited != tt.wantRateLimited {
				t.Fatalf("report %+v; want %d calls, %d scanned, %d unverifiable, rate limited %v", rep, tt.wantCalls, tt.wantScanned, tt.wantUnverifiable, tt.wantRateLimited)
			}
			if cur := s.Cursor(job); cur.Position != recordID(int64(tt.wantScanned)) {
				t.Fatalf("cursor %+v, want it at row %d, the last committed", cur, tt.wantScanned)
			}
			if got := len(lim.throttled) > 0; got != tt.wantThrottle {
				t.Fatalf("limiter throttled %v, want %v", lim.throttled, tt.wantThrottle)
			}
		})
	}
}

func TestAPanickingBatchGatewayFailsTheBatchNotTheProcess(t *testing.T) {
	s := newStore(newClock(), 5, always("paid"))
	sink := &countingSink{Sink: s}
	bg := &batchGateway{fakeGateway: newFakeGateway(0, answerFrom(nil)), panics: true}
	cfg := config(s, bg)
	cfg.Sink = sink
	if _, err := reconcile.RunBatch(context.Background(), cfg); err == nil {
		t.Fatal("RunBatch succeeded after the batch gateway panicked")
	}
	assertNothingWritten(t, s, sink, 5)
}

func TestABatchGatewayStopsWhenTheLimiterRunsOutOfTime(t *testing.T) {
	const n = 30
	all := paymentsWorld(n)
	s := newStore(newClock(), n, always("paid"))
	bg := &batchGateway{fakeGateway: newFakeGateway(0, answerFrom(all)), listed: all, pageSize: 5}
	lim, err := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{Rate: 1, Burst: 2})
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	var mu sync.Mutex
	cfg := config(s, bg)
	cfg.Limiter, cfg.BatchSize = lim, n
	cfg.Logger = slog.New(funcHandler(func(r slog.Record) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, r.Message)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	rep, err := reconcile.RunBatch(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Two pages granted (rows 1-4 and 6-12 of the 24 listed), then nothing: row 5, not listed,
	// is the first row not asked, so rows 1-4 commit and the cursor stops at row 4.
	if rep.GatewayCalls != 2 || rep.Scanned != 4 || rep.Verdicts[reconcile.Unverifiable] != 0 || !rep.RateLimited || bg.Calls() != 0 {
		t.Fatalf("report %+v, per-object calls %d; want 2 pages, 4 rows committed, none unverifiable, no per-object calls", rep, bg.Calls())
	}
	if cur := s.Cursor(job); cur.Position != "4" {
		t.Fatalf("cursor %+v, want it at row 4, before the first row not asked", cur)
	}
	for _, msg := range []string{"reconcile batch fetch failure; asking one by one", "reconcile batch fetch rate limited"} {
		if slices.Contains(logged, msg) {
			t.Fatalf("the limiter's refusal was logged as %q", msg)
		}
	}
}

// funcHandler is a slog.Handler calling f for every record.
type funcHandler func(slog.Record)

func (h funcHandler) Enabled(context.Context, slog.Level) bool      { return true }
func (h funcHandler) Handle(_ context.Context, r slog.Record) error { h(r); return nil }
func (h funcHandler) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h funcHandler) WithGroup(string) slog.Handler                 { return h }

// checkingGateway rejects ids that do not start with "pi_" without a call.
type checkingGateway struct{ *fakeGateway }

func (g checkingGateway) CheckID(id string) error {
	if !strings.HasPrefix(id, "pi_") {
		return &reconcile.ReviewError{Kind: reconcile.KindInvalidExternalID, Detail: id + " is not a PaymentIntent id"}
	}
	return nil
}

func TestInvalidIDsAreFindingsWithoutACallEvenAfterARateLimit(t *testing.T) {
	c := newClock()
	s := memstore.New[int64, string](memstore.Options{Now: c.Now})
	old := c.Now().Add(-time.Hour)
	for i := int64(1); i <= 5; i++ {
		s.Put(memstore.Row[int64, string]{Key: i, ExternalID: fmt.Sprintf("ch_%d", i), Local: "paid", UpdatedAt: old})
	}
	s.Put(memstore.Row[int64, string]{Key: 6, ExternalID: "pi_6", Local: "paid", UpdatedAt: old})
	s.Put(memstore.Row[int64, string]{Key: 7, ExternalID: "ch_7", Local: "paid", UpdatedAt: old})
	limited := true
	gw := checkingGateway{newFakeGateway(0, func(context.Context, int, string) (string, error) {
		if limited {
			return "", &reconcile.RateLimitError{}
		}
		return "succeeded", nil
	})}
	lim := &recordingLimiter{}
	cfg := config(s, gw)
	cfg.Limiter = lim
	rep, err := reconcile.RunBatch(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// pi_6 is rate limited: rows 1-5 commit as findings, pi_6 and ch_7 wait for the next batch.
	if rep.GatewayCalls != 1 || gw.Calls() != 1 || gw.Asked("pi_6") != 1 || !rep.RateLimited ||
		rep.Scanned != 5 || rep.Verdicts[reconcile.NeedsReview] != 5 || rep.Verdicts[reconcile.Unverifiable] != 0 {
		t.Fatalf("report %+v, %d calls; want 1 call (pi_6, rate limited) and 5 invalid-id findings", rep, gw.Calls())
	}
	if cur := s.Cursor(job); cur.Position != "5" {
		t.Fatalf("cursor %+v, want it at row 5, before pi_6 which was not answered", cur)
	}
	limited = false
	if rep, err = reconcile.RunBatch(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if rep.GatewayCalls != 1 || gw.Asked("pi_6") != 2 || rep.Scanned != 2 || rep.Verdicts[reconcile.InSync] != 1 ||
		rep.Verdicts[reconcile.NeedsReview] != 1 || !rep.Wrapped {
		t.Fatalf("next batch %+v; want pi_6 asked and in sync, ch_7 a finding without a call, the cycle wrapped", rep)
	}
	if fs := reconciletest.Findings(t, s, ""); len(fs) != 6 {
		t.Fatalf("findings %+v, want 6", fs)
	}
	for _, f := range reconciletest.Findings(t, s, "") {
		if f.Kind != reconcile.KindInvalidExternalID {
			t.Fatalf("finding %+v, want kind %s", f, reconcile.KindInvalidExternalID)
		}
	}
}
