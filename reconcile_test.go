package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/internal/leaktest"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

const job = "sweep"

type store = memstore.Store[int64, string]

func extID(i int64) string    { return fmt.Sprintf("pi_%d", i) }
func recordID(i int64) string { return strconv.FormatInt(i, 10) }

// clock is a settable time source for memstore, so that grace and last-verified times are exact.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// newStore returns a memstore with rows 1..n (external ids pi_1..pi_n) last changed an hour
// before the clock, outside the default grace period.
func newStore(c *clock, n int, local func(i int64) string) *store {
	s := memstore.New[int64, string](memstore.Options{Now: c.Now})
	old := c.Now().Add(-time.Hour)
	for i := int64(1); i <= int64(n); i++ {
		s.Put(memstore.Row[int64, string]{Key: i, ExternalID: extID(i), Local: local(i), CreatedAt: old, UpdatedAt: old})
	}
	return s
}

func always(state string) func(int64) string { return func(int64) string { return state } }

func config(s *store, gw reconcile.Gateway[string]) reconcile.Config[string, string] {
	return reconcile.Config[string, string]{
		Job: job, Source: s, Sink: s, Gateway: gw, Classifier: reconciletest.Classifier(),
	}
}

// fakeGateway counts calls and tracks how many are in flight at once. It asks answer as soon as
// a call arrives (call is its 1-based number); an error is returned at once, while a success is
// returned after delay, or ctx.Err() if ctx is done first. Failing at once keeps the number of
// calls started before the engine reacts to a failure bounded by Concurrency.
type fakeGateway struct {
	delay  time.Duration
	answer func(ctx context.Context, call int, id string) (string, error)

	mu          sync.Mutex
	calls       int
	asked       map[string]int
	inFlight    int
	maxInFlight int
}

func newFakeGateway(delay time.Duration, answer func(ctx context.Context, call int, id string) (string, error)) *fakeGateway {
	return &fakeGateway{delay: delay, answer: answer, asked: map[string]int{}}
}

func (g *fakeGateway) Fetch(ctx context.Context, id string) (string, error) {
	g.mu.Lock()
	g.calls++
	call := g.calls
	g.asked[id]++
	g.inFlight++
	g.maxInFlight = max(g.maxInFlight, g.inFlight)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	state, err := g.answer(ctx, call, id)
	if err != nil || g.delay == 0 {
		return state, err
	}
	timer := time.NewTimer(g.delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return state, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (g *fakeGateway) Calls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

func (g *fakeGateway) Asked(id string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.asked[id]
}

func (g *fakeGateway) MaxInFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.maxInFlight
}

// countingSink counts commits, so "nothing written" is checked at the sink rather than
// inferred from a store that might refuse the write for its own reasons.
type countingSink struct {
	reconcile.Sink
	commits atomic.Int64
}

func (s *countingSink) Commit(ctx context.Context, c reconcile.Commit) (reconcile.CommitResult, error) {
	s.commits.Add(1)
	return s.Sink.Commit(ctx, c)
}

// assertNothingWritten checks that the batch left no trace: no commit, the cursor where it was
// before the first batch, no findings, commands or observations for rows 1..n.
func assertNothingWritten(t *testing.T, s *store, sink *countingSink, n int) {
	t.Helper()
	if c := sink.commits.Load(); c != 0 {
		t.Errorf("Commit called %d times, want 0", c)
	}
	if cur := s.Cursor(job); cur != (memstore.CursorInfo{}) {
		t.Errorf("cursor %+v, want it untouched", cur)
	}
	if fs := reconciletest.Findings(t, s, ""); len(fs) != 0 {
		t.Errorf("findings %+v, want none", fs)
	}
	if cmds := s.Commands(); len(cmds) != 0 {
		t.Errorf("commands %+v, want none", cmds)
	}
	for i := int64(1); i <= int64(n); i++ {
		if o, ok := s.Observation(job, recordID(i)); ok {
			t.Errorf("row %d has observation %+v, want none", i, o)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*reconcile.Config[string, string])
		field  string
	}{
		{"an empty Job is rejected", func(c *reconcile.Config[string, string]) { c.Job = "" }, "Job"},
		{"a nil Source is rejected", func(c *reconcile.Config[string, string]) { c.Source = nil }, "Source"},
		{"a nil Sink is rejected", func(c *reconcile.Config[string, string]) { c.Sink = nil }, "Sink"},
		{"a nil Gateway is rejected", func(c *reconcile.Config[string, string]) { c.Gateway = nil }, "Gateway"},
		{"a nil Classifier is rejected", func(c *reconcile.Config[string, string]) { c.Classifier = nil }, "Classifier"},
		{"a negative BatchSize is rejected", func(c *reconcile.Config[string, string]) { c.BatchSize = -1 }, "BatchSize"},
		{"a negative Concurrency is rejected", func(c *reconcile.Config[string, string]) { c.Concurrency = -2 }, "Concurrency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(newClock(), 1, always("paid"))
			cfg := config(s, reconciletest.NewGateway(map[string]string{}))
			tt.mutate(&cfg)
			r, err := reconcile.New(cfg)
			if err == nil {
				t.Fatalf("New accepted the config and returned %v, want an error naming %s", r, tt.field)
			}
			if r != nil {
				t.Errorf("New returned a reconciler with error %v, want nil", err)
			}
			if !strings.HasPrefix(err.Error(), "reconcile: ") || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("error %q, want a reconcile: error naming %s", err, tt.field)
			}
		})
	}
}

func TestNewAcceptsAConfigWithOnlyTheRequiredFields(t *testing.T) {
	s := newStore(newClock(), 1, always("paid"))
	r, err := reconcile.New(config(s, reconciletest.NewGateway(map[string]string{"pi_1": "succeeded"})))
	if err != nil || r == nil {
		t.Fatalf("New = %v, %v; want a reconciler", r, err)
	}
	rep, err := r.RunBatch(context.Background())
	if err != nil || rep.Verdicts[reconcile.InSync] != 1 {
		t.Fatalf("RunBatch = %+v, %v; want one row in sync", rep, err)
	}
}

// requestSource records the ReadRequest it gets and returns an empty batch.
type requestSource struct {
	mu  sync.Mutex
	req reconcile.ReadRequest
}

func (s *requestSource) Read(_ context.Context, req reconcile.ReadRequest) (reconcile.Batch[string], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.req = req
	return reconcile.Batch[string]{}, nil
}

func TestConfigDefaultsReachTheSource(t *testing.T) {
	tests := []struct {
		name      string
		batch     int
		grace     time.Duration
		wantLimit int
		wantGrace func(time.Duration) bool
	}{
		{"zero BatchSize and Grace mean the defaults", 0, 0, reconcile.DefaultBatchSize,
			func(g time.Duration) bool { return g == reconcile.DefaultGrace }},
		{"a BatchSize and a positive Grace are passed as given", 7, 3 * time.Minute, 7,
			func(g time.Duration) bool { return g == 3*time.Minute }},
		{"a negative Grace asks the source for no grace at all", 7, -time.Second, 7,
			func(g time.Duration) bool { return g <= 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &requestSource{}
			s := newStore(newClock(), 0, always("paid"))
			cfg := config(s, reconciletest.NewGateway(map[string]string{}))
			cfg.Source, cfg.BatchSize, cfg.Grace = src, tt.batch, tt.grace
			if _, err := reconcile.RunBatch(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			if src.req.Job != job || src.req.Limit != tt.wantLimit || !tt.wantGrace(src.req.Grace) {
				t.Fatalf("source got %+v, want job %s, limit %d and the expected grace", src.req, job, tt.wantLimit)
			}
		})
	}
}

func TestGrace(t *testing.T) {
	tests := []struct {
		name      string
		grace     time.Duration
		changed   time.Duration // how long before the batch the row was updated
		wantAsked bool
	}{
		{"a negative grace asks about a row updated just now", -1, 0, true},
		{"a negative grace asks about a row updated a second ago", -time.Minute, time.Second, true},
		{"zero grace is the default, so a row updated 9 minutes ago is in flight", 0, 9 * time.Minute, false},
		{"zero grace is the default, so a row updated 11 minutes ago is asked", 0, 11 * time.Minute, true},
		{"a one-minute grace holds back a row updated 30 seconds ago", time.Minute, 30 * time.Second, false},
		{"a one-minute grace asks about a row updated 2 minutes ago", time.Minute, 2 * time.Minute, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			s := memstore.New[int64, string](memstore.Options{Now: c.Now})
			s.Put(memstore.Row[int64, string]{Key: 1, ExternalID: "pi_1", Local: "paid", UpdatedAt: c.Now().Add(-tt.changed)})
			gw := reconciletest.NewGateway(map[string]string{"pi_1": "succeeded"})
			cfg := config(s, gw)
			cfg.Grace = tt.grace
			rep, err := reconcile.RunBatch(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := reconcile.InFlight
			if tt.wantAsked {
				want = reconcile.InSync
			}
			asked := gw.Calls("pi_1") == 1
			if asked != tt.wantAsked || rep.Verdicts[want] != 1 || rep.GatewayCalls != gw.Calls("") {
				t.Fatalf("asked %v (report %+v), want asked %v and the row %s", asked, rep, tt.wantAsked, want)
			}
			if _, ok := s.Observation(job, "1"); ok != tt.wantAsked {
				t.Fatalf("observation present %v, want %v", ok, tt.wantAsked)
			}
		})
	}
}

func TestRunBatchInvalidDecisionCommitsNothing(t *testing.T) {
	tests := []struct {
		name    string
		d       reconcile.Decision
		wantErr string
	}{
		{"a repairable decision without a command", reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success"}, "without a repair command"},
		{"a needs-review decision without a kind", reconcile.Decision{Verdict: reconcile.NeedsReview}, "without a finding kind"},
		{"a decision with no verdict", reconcile.Decision{}, "invalid verdict"},
		{"an in-sync decision carrying a command", reconcile.Decision{Verdict: reconcile.InSync, Command: "Refund"}, "carries a repair command"},
	}
	for _, tt := range tests {
		for _, conc := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s on one row fails the batch with concurrency %d", tt.name, conc), func(t *testing.T) {
				const n = 20
				s := newStore(newClock(), n, func(i int64) string {
					if i == 5 {
						return "bad"
					}
					return "paid"
				})
				gw := reconciletest.NewGateway(map[string]string{})
				for i := int64(1); i <= n; i++ {
					gw.Set(extID(i), "succeeded")
				}
				sink := &countingSink{Sink: s}
				cfg := config(s, gw)
				cfg.Sink, cfg.Concurrency = sink, conc
				cfg.Classifier = reconcile.ClassifierFunc[string, string](func(l, e string) reconcile.Decision {
					if l == "bad" {
						return tt.d
					}
					return reconciletest.Classifier().Classify(l, e)
				})
				rep, err := reconcile.RunBatch(context.Background(), cfg)
				if err == nil {
					t.Fatalf("RunBatch = %+v, nil; want an error for the invalid decision", rep)
				}
				if !strings.HasPrefix(err.Error(), "reconcile: ") || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %q, want a reconcile: error containing %q", err, tt.wantErr)
				}
				assertNothingWritten(t, s, sink, n)
			})
		}
	}
}

func TestRunBatchAsksEveryRowOncePerCycleUnderConcurrency(t *testing.T) {
	const n = 500
	// Rows by i%10: 1 pending but succeeded (repairable), 2 paid but canceled (review),
	// 3 unavailable, 4 not found externally (review), 5 pending and processing (in flight),
	// the rest paid and succeeded (in sync).
	s := newStore(newClock(), n, func(i int64) string {
		switch i % 10 {
		case 1, 5:
			return "pending"
		}
		return "paid"
	})
	states := map[string]string{}
	for i := int64(1); i <= n; i++ {
		switch i % 10 {
		case 2:
			states[extID(i)] = "canceled"
		case 3:
			states[extID(i)] = "!unavailable"
		case 4:
			states[extID(i)] = "!notfound"
		case 5:
			states[extID(i)] = "processing"
		default:
			states[extID(i)] = "succeeded"
		}
	}
	inner := reconciletest.NewGateway(states)
	gw := newFakeGateway(time.Millisecond, func(ctx context.Context, _ int, id string) (string, error) {
		return inner.Fetch(ctx, id)
	})
	cfg := config(s, gw)
	cfg.Concurrency = 8
	r, err := reconcile.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[reconcile.Verdict]int{
		reconcile.InSync: 250, reconcile.InFlight: 50, reconcile.Repairable: 50,
		reconcile.NeedsReview: 100, reconcile.Unverifiable: 50,
	}
	for cycle := 1; cycle <= 2; cycle++ {
		t.Run(fmt.Sprintf("cycle %d asks every row exactly once and the verdicts add up to %d", cycle, n), func(t *testing.T) {
			got := map[reconcile.Verdict]int{}
			var scanned, calls, batches int
			for {
				rep, err := r.RunBatch(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				batches++
				if batches > 10 {
					t.Fatal("no wrap after 10 batches")
				}
				sum := 0
				for v, c := range rep.Verdicts {
					got[v] += c
					sum += c
				}
				if sum != rep.Scanned {
					t.Fatalf("batch %d: verdicts %v add up to %d, scanned %d", batches, rep.Verdicts, sum, rep.Scanned)
				}
				scanned += rep.Scanned
				calls += rep.GatewayCalls
				// The short read (100 rows) that ends the cycle is judged and wraps at once.
				if rep.Wrapped {
					break
				}
			}
			if batches != 3 {
				t.Fatalf("the cycle took %d batches, want 3 (200, 200, then 100 wrapping)", batches)
			}
			if scanned != n || calls != n || !reflect.DeepEqual(got, want) {
				t.Fatalf("cycle: scanned %d, gateway calls %d, verdicts %v; want %d, %d, %v", scanned, calls, got, n, n, want)
			}
			for i := int64(1); i <= n; i++ {
				if a := gw.Asked(extID(i)); a != cycle {
					t.Fatalf("after cycle %d row %d was asked %d times, want %d", cycle, i, a, cycle)
				}
			}
			if gw.Calls() != cycle*n {
				t.Fatalf("gateway saw %d calls after %d cycles, want %d", gw.Calls(), cycle, cycle*n)
			}
			if m := gw.MaxInFlight(); m > 8 {
				t.Fatalf("%d gateway calls in flight at once, want at most Concurrency 8", m)
			}
			// Findings are deduplicated across cycles: 50 repairable and 100 review, 50 commands.
			if fs, cmds := reconciletest.Findings(t, s, ""), s.Commands(); len(fs) != 150 || len(cmds) != 50 {
				t.Fatalf("%d findings and %d commands, want 150 and 50", len(fs), len(cmds))
			}
		})
	}
	t.Logf("at most %d gateway calls were in flight at once", gw.MaxInFlight())
}

func TestRunBatchStopsAskingAfterARateLimit(t *testing.T) {
	const (
		n           = 200
		concurrency = 4
		limitedCall = 4 // the first call answered with a rate limit
	)
	tests := []struct {
		name string
		err  error
	}{
		{"a RateLimitError", &reconcile.RateLimitError{RetryAfter: time.Second, Reason: "too many requests"}},
		{"the ErrRateLimited sentinel", reconcile.ErrRateLimited},
		{"a wrapped ErrRateLimited", fmt.Errorf("stripe: 429: %w", reconcile.ErrRateLimited)},
	}
	for _, tt := range tests {
		t.Run(tt.name+" on call 4 of a 200-row batch commits the rows before the first one not answered and stops the cursor there", func(t *testing.T) {
			s := newStore(newClock(), n, always("paid"))
			var (
				mu        sync.Mutex
				limited   = true
				succeeded = map[string]bool{}
			)
			// Calls 1-3 succeed; call 4 and any call after it is rate limited, until limited is
			// cleared.
			gw := newFakeGateway(time.Millisecond, func(_ context.Context, call int, id string) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				if limited && call >= limitedCall {
					return "", tt.err
				}
				succeeded[id] = true
				return "succeeded", nil
			})
			cfg := config(s, gw)
			cfg.Concurrency = concurrency
			rep, err := reconcile.RunBatch(context.Background(), cfg)
			if err != nil {
				t.Fatalf("RunBatch: %v; a rate limit must not fail the batch", err)
			}
			if !rep.RateLimited || rep.Wrapped {
				t.Errorf("report %+v, want RateLimited and not Wrapped", rep)
			}
			calls := gw.Calls()
			if calls < limitedCall || calls > limitedCall+concurrency {
				t.Errorf("%d gateway calls, want between %d and %d: the rest of the batch must not be asked", calls, limitedCall, limitedCall+concurrency)
			}
			if rep.GatewayCalls != calls {
				t.Errorf("report says %d gateway calls, gateway saw %d", rep.GatewayCalls, calls)
			}
			// The calls run concurrently, so which rows got calls 1-3 varies: the batch commits
			// the rows answered before the first row that was not.
			ok := 0
			for ok < n && succeeded[extID(int64(ok+1))] {
				ok++
			}
			if rep.Scanned != ok || rep.Verdicts[reconcile.InSync] != ok || rep.Verdicts[reconcile.Unverifiable] != 0 {
				t.Errorf("report %+v, want %d scanned, all in sync", rep, ok)
			}
			for i := int64(1); i <= n; i++ {
				_, observed := s.Observation(job, recordID(i))
				if observed != (i <= int64(ok)) {
					t.Errorf("row %d: observation present %v, want %v (only rows committed are verified)", i, observed, i <= int64(ok))
				}
			}
			if fs := reconciletest.Findings(t, s, ""); len(fs) != 0 {
				t.Errorf("findings %+v for rows not answered, want none", fs)
			}
			// The cursor stops at the last committed row: a rate limit delays rows, it never
			// skips them. If row 1 itself got no answer, the batch is Deferred and writes nothing.
			wantPos := recordID(int64(ok))
			if ok == 0 {
				wantPos = ""
			}
			if cur := s.Cursor(job); cur.Position != wantPos || cur.LastBatchUnverified != 0 || cur.CyclesCompleted != 0 || rep.Deferred != (ok == 0) {
				t.Errorf("cursor %+v, report %+v; want position %q, nothing unverified, no cycle completed, deferred %v", cur, rep, wantPos, ok == 0)
			}

			// Once the limit lifts, the next batch starts with the first row not answered.
			mu.Lock()
			limited = false
			mu.Unlock()
			callsBefore := gw.Calls()
			if rep, err = reconcile.RunBatch(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			if rep.Scanned != n-ok || rep.Verdicts[reconcile.InSync] != n-ok || rep.Wrapped != (ok > 0) || gw.Calls()-callsBefore != n-ok {
				t.Errorf("next batch %+v, want the %d rows not committed asked and in sync, and the cycle wrapped if the read was short", rep, n-ok)
			}
			if ok == 0 { // a full read: the next, empty, read wraps
				if rep, err = reconcile.RunBatch(context.Background(), cfg); err != nil || !rep.Wrapped || rep.Scanned != 0 {
					t.Fatalf("third batch %+v, %v; want an empty read wrapping", rep, err)
				}
			}
			for i := int64(1); i <= n; i++ {
				if _, observed := s.Observation(job, recordID(i)); !observed {
					t.Errorf("row %d was never verified", i)
				}
			}
			if cur := s.Cursor(job); cur.CyclesCompleted != 1 {
				t.Errorf("cursor %+v, want one cycle completed", cur)
			}
		})
	}
}

func TestRunBatchAbortsOnErrAbortBatch(t *testing.T) {
	const (
		n           = 200
		concurrency = 4
		abortCall   = 10
	)
	tests := []struct {
		name string
		err  error
	}{
		{"the ErrAbortBatch sentinel", reconcile.ErrAbortBatch},
		{"a wrapped ErrAbortBatch", fmt.Errorf("stripe: 401 invalid api key: %w", reconcile.ErrAbortBatch)},
	}
	for _, tt := range tests {
		t.Run(tt.name+" on call 10 with concurrency 4 fails the batch, writes nothing and leaks nothing", func(t *testing.T) {
			defer leaktest.VerifyNone(t)
			s := newStore(newClock(), n, always("paid"))
			gw := newFakeGateway(time.Millisecond, func(_ context.Context, call int, _ string) (string, error) {
				if call == abortCall {
					return "", tt.err
				}
				return "succeeded", nil
			})
			sink := &countingSink{Sink: s}
			cfg := config(s, gw)
			cfg.Sink, cfg.Concurrency = sink, concurrency
			rep, err := reconcile.RunBatch(context.Background(), cfg)
			if !errors.Is(err, reconcile.ErrAbortBatch) {
				t.Fatalf("RunBatch = %+v, %v; want an error wrapping ErrAbortBatch", rep, err)
			}
			if calls := gw.Calls(); calls > abortCall+concurrency {
				t.Errorf("%d gateway calls, want at most %d: an abort stops the batch", calls, abortCall+concurrency)
			}
			assertNothingWritten(t, s, sink, n)
		})
	}
}

func TestRunBatchCancelledDuringGatewayCalls(t *testing.T) {
	const (
		n          = 200
		cancelCall = 5
	)
	// afterCancel is how the gateway answers once the caller's ctx is cancelled.
	tests := []struct {
		name        string
		afterCancel func(ctx context.Context) (string, error)
	}{
		{"a gateway returning ctx.Err()", func(ctx context.Context) (string, error) { return "", ctx.Err() }},
		{"a gateway reporting the cancellation as unavailable", func(ctx context.Context) (string, error) {
			return "", fmt.Errorf("fake: %w: %w", reconcile.ErrUnavailable, ctx.Err())
		}},
		{"a gateway reporting the cancellation as not found", func(context.Context) (string, error) { return "", reconcile.ErrNotFound }},
		{"a gateway ignoring the cancellation and answering", func(context.Context) (string, error) { return "succeeded", nil }},
	}
	for _, tt := range tests {
		for _, conc := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s with concurrency %d fails the batch with context.Canceled and commits nothing", tt.name, conc), func(t *testing.T) {
				defer leaktest.VerifyNone(t)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				s := newStore(newClock(), n, always("paid"))
				gw := newFakeGateway(0, func(ctx context.Context, call int, _ string) (string, error) {
					if call == cancelCall {
						cancel()
					}
					if ctx.Err() != nil {
						return tt.afterCancel(ctx)
					}
					return "succeeded", nil
				})
				sink := &countingSink{Sink: s}
				cfg := config(s, gw)
				cfg.Sink, cfg.Concurrency = sink, conc
				rep, err := reconcile.RunBatch(ctx, cfg)
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("RunBatch = %+v, %v; want an error wrapping context.Canceled", rep, err)
				}
				assertNothingWritten(t, s, sink, n)
			})
		}
	}
}

func TestRunBatchCancelledAfterTheLastGatewayCallCommitsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newStore(newClock(), 1, always("paid"))
	// The only call cancels and still answers: the batch must not be committed as if healthy.
	gw := reconcile.GatewayFunc[string](func(context.Context, string) (string, error) {
		cancel()
		return "succeeded", nil
	})
	sink := &countingSink{Sink: s}
	cfg := config(s, gw)
	cfg.Sink = sink
	if _, err := reconcile.RunBatch(ctx, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("RunBatch: %v, want context.Canceled", err)
	}
	assertNothingWritten(t, s, sink, 1)
}

func TestRunBatchGatewayAnswers(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		want       reconcile.Verdict
		wantKind   string // empty: no finding
		wantDetail string
		verified   bool
	}{
		{"a plain unknown error is unverifiable", errors.New("connection reset by peer"), reconcile.Unverifiable, "", "", false},
		{"ErrUnavailable is unverifiable", reconcile.ErrUnavailable, reconcile.Unverifiable, "", "", false},
		{"a wrapped ErrUnavailable is unverifiable", fmt.Errorf("stripe: 503: %w", reconcile.ErrUnavailable), reconcile.Unverifiable, "", "", false},
		{"the gateway's own timeout, with our ctx alive, is unverifiable", fmt.Errorf("stripe: %w", context.DeadlineExceeded), reconcile.Unverifiable, "", "", false},
		// A rate limit is no answer: the batch is Deferred, nothing is written and the row is
		// asked again next batch.
		{"a rate limit defers the row: nothing is written and it is asked again", &reconcile.RateLimitError{}, reconcile.Unverifiable, "", "", false},
		{"ErrNotFound is a verified missing_externally finding, which names the id and the answer",
			reconcile.ErrNotFound, reconcile.NeedsReview, reconcile.KindMissingExternally, `"pi_1": reconcile: external object not found`, true},
		{"an ErrNotFound that names the id is the finding's detail, any key in it redacted",
			fmt.Errorf("gw: GET /v1/payment_intents/pi_1 with sk_live_51AbCdEfGh answered 404: %w", reconcile.ErrNotFound),
			reconcile.NeedsReview, reconcile.KindMissingExternally,
			"gw: GET /v1/payment_intents/pi_1 with [redacted key] answered 404: reconcile: external object not found", true},
		{"a ReviewError with a kind is a finding of that kind, not verified",
			&reconcile.ReviewError{Kind: "invalid_external_id", Detail: "pi_1 is not a PaymentIntent id"},
			reconcile.NeedsReview, "invalid_external_id", "pi_1 is not a PaymentIntent id", false},
		{"a ReviewError without a kind is a rejected_by_external_system finding",
			&reconcile.ReviewError{Detail: "400 parameter_invalid"}, reconcile.NeedsReview, reconcile.KindRejected, "400 parameter_invalid", false},
		{"a wrapped ReviewError is found through the wrapping",
			fmt.Errorf("stripe: 400: %w", &reconcile.ReviewError{Kind: "invalid_external_id"}), reconcile.NeedsReview, "invalid_external_id", "", false},
		{"no error is judged by the classifier and verified", nil, reconcile.InSync, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			s := newStore(c, 1, always("paid"))
			var answer atomic.Value // error, or nil for "succeeded"
			gw := reconcile.GatewayFunc[string](func(context.Context, string) (string, error) {
				if err, _ := answer.Load().(error); err != nil {
					return "", err
				}
				return "succeeded", nil
			})
			r, err := reconcile.New(config(s, gw))
			if err != nil {
				t.Fatal(err)
			}
			// A first cycle verifies the row; then the gateway answers with tt.err.
			for range 2 {
				if _, err := r.RunBatch(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			before, ok := s.Observation(job, "1")
			if !ok {
				t.Fatal("the healthy first cycle left no observation")
			}
			c.Advance(time.Hour)
			if tt.err != nil {
				answer.Store(tt.err)
			}
			cursorBefore := s.Cursor(job)
			rep, err := r.RunBatch(context.Background())
			if err != nil {
				t.Fatalf("RunBatch: %v; a single row's answer must not fail the batch", err)
			}
			switch {
			case errors.Is(tt.err, reconcile.ErrRateLimited):
				if rep.Scanned != 0 || !rep.Deferred || !rep.RateLimited || rep.Wrapped || rep.GatewayCalls != 1 {
					t.Fatalf("report %+v, want the batch deferred after one call, nothing scanned", rep)
				}
				if cur := s.Cursor(job); cur != cursorBefore {
					t.Fatalf("cursor %+v, want it unmoved at %+v", cur, cursorBefore)
				}
			case rep.Scanned != 1 || rep.Verdicts[tt.want] != 1 || rep.GatewayCalls != 1:
				t.Fatalf("report %+v, want one row judged %s after one call", rep, tt.want)
			}
			after, _ := s.Observation(job, "1")
			if tt.verified && !after.VerifiedAt.Equal(c.Now()) {
				t.Errorf("last verified %v, want it advanced to %v", after.VerifiedAt, c.Now())
			}
			if !tt.verified && after != before {
				t.Errorf("observation moved from %+v to %+v, want it kept: the row was not confirmed", before, after)
			}
			fs := reconciletest.Findings(t, s, "")
			if tt.wantKind == "" {
				if len(fs) != 0 {
					t.Fatalf("findings %+v, want none", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Kind != tt.wantKind || fs[0].Detail != tt.wantDetail || fs[0].RecordID != "1" ||
				fs[0].Local != "paid" || fs[0].Command != "" || !fs[0].Open() {
				t.Fatalf("findings %+v, want one open %q finding for record 1 with detail %q and no command", fs, tt.wantKind, tt.wantDetail)
			}
			if cmds := s.Commands(); len(cmds) != 0 {
				t.Fatalf("commands %+v, want none for a review finding", cmds)
			}
		})
	}
}

func TestReportUnverifiableRatio(t *testing.T) {
	tests := []struct {
		name string
		rep  reconcile.Report
		want float64
	}{
		{"the zero report is 0", reconcile.Report{}, 0},
		{"an empty batch with a verdict map is 0", reconcile.Report{Verdicts: map[reconcile.Verdict]int{}}, 0},
		{"no unverifiable rows is 0", reconcile.Report{Scanned: 4, Verdicts: map[reconcile.Verdict]int{reconcile.InSync: 4}}, 0},
		{"one of four unverifiable is 0.25",
			reconcile.Report{Scanned: 4, Verdicts: map[reconcile.Verdict]int{reconcile.InSync: 3, reconcile.Unverifiable: 1}}, 0.25},
		{"every row unverifiable is 1", reconcile.Report{Scanned: 3, Verdicts: map[reconcile.Verdict]int{reconcile.Unverifiable: 3}}, 1},
		{"rows in flight count in the denominator",
			reconcile.Report{Scanned: 10, Verdicts: map[reconcile.Verdict]int{reconcile.InFlight: 8, reconcile.Unverifiable: 2}}, 0.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rep.UnverifiableRatio(); got != tt.want {
				t.Fatalf("UnverifiableRatio = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRunBatchReportsTheUnverifiableRatio(t *testing.T) {
	tests := []struct {
		name   string
		rows   int
		states map[string]string
		want   float64
	}{
		{"an empty batch wraps with ratio 0", 0, map[string]string{}, 0},
		{"one unavailable row of four gives 0.25, and the short read wraps", 4,
			map[string]string{"pi_1": "succeeded", "pi_2": "!unavailable", "pi_3": "succeeded", "pi_4": "succeeded"}, 0.25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(newClock(), tt.rows, always("paid"))
			rep, err := reconcile.RunBatch(context.Background(), config(s, reconciletest.NewGateway(tt.states)))
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Wrapped || rep.Scanned != tt.rows || rep.UnverifiableRatio() != tt.want {
				t.Fatalf("report %+v with ratio %v, want %d scanned and ratio %v", rep, rep.UnverifiableRatio(), tt.rows, tt.want)
			}
		})
	}
}

func TestPackageRunBatchWorksLikeNewThenRunBatch(t *testing.T) {
	// drift: rows 1-3 pending but succeeded, 4-5 paid but canceled, 6 unavailable, rest in sync.
	setup := func() (*store, reconcile.Config[string, string]) {
		s := newStore(newClock(), 10, func(i int64) string {
			if i <= 3 {
				return "pending"
			}
			return "paid"
		})
		st := map[string]string{}
		for i := int64(1); i <= 10; i++ {
			st[extID(i)] = "succeeded"
		}
		st["pi_4"], st["pi_5"], st["pi_6"] = "canceled", "canceled", "!unavailable"
		cfg := config(s, reconciletest.NewGateway(st))
		cfg.BatchSize = 4
		return s, cfg
	}
	viaFunc, funcCfg := setup()
	viaNew, newCfg := setup()
	r, err := reconcile.New(newCfg)
	if err != nil {
		t.Fatal(err)
	}
	for batch := 1; batch <= 4; batch++ {
		t.Run(fmt.Sprintf("batch %d gives the same report and the same store", batch), func(t *testing.T) {
			got, err := reconcile.RunBatch(context.Background(), funcCfg)
			if err != nil {
				t.Fatal(err)
			}
			want, err := r.RunBatch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got.Duration, want.Duration = 0, 0
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("reconcile.RunBatch = %+v, New+RunBatch = %+v", got, want)
			}
			if !reflect.DeepEqual(reconciletest.Findings(t, viaFunc, ""), reconciletest.Findings(t, viaNew, "")) || !reflect.DeepEqual(viaFunc.Commands(), viaNew.Commands()) ||
				viaFunc.Cursor(job) != viaNew.Cursor(job) {
				t.Fatalf("stores differ: findings %+v vs %+v, commands %+v vs %+v, cursor %+v vs %+v",
					reconciletest.Findings(t, viaFunc, ""), reconciletest.Findings(t, viaNew, ""), viaFunc.Commands(), viaNew.Commands(), viaFunc.Cursor(job), viaNew.Cursor(job))
			}
		})
	}
	if fs := reconciletest.Findings(t, viaFunc, ""); len(fs) != 5 {
		t.Fatalf("after a cycle %d findings, want 5", len(fs))
	}
	if cur := viaFunc.Cursor(job); cur.CyclesCompleted != 1 {
		t.Fatalf("cursor %+v, want one completed cycle after batches of 4, 4, 2 and the wrap", cur)
	}
	t.Run("a bad config is rejected before anything is read", func(t *testing.T) {
		src := &requestSource{}
		cfg := funcCfg
		cfg.Source, cfg.Concurrency = src, -1
		if _, err := reconcile.RunBatch(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "Concurrency") {
			t.Fatalf("RunBatch with a negative Concurrency: %v, want an error naming Concurrency", err)
		}
		if src.req != (reconcile.ReadRequest{}) {
			t.Fatalf("the source was read with %+v despite the bad config", src.req)
		}
	})
}

func TestDecodeCommand(t *testing.T) {
	t.Run("a command encoded with encoding/json round-trips", func(t *testing.T) {
		want := reconcile.Command{
			Name: "ApplyPaymentSucceeded", Job: job, RecordID: "42", FindingID: 7, Kind: "missed_success",
			ExpectedLocal: "pending", External: "succeeded",
		}
		payload, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(payload), "ApplyPaymentSucceeded") {
			t.Errorf("payload %s carries the name, which belongs in the outbox row's event type", payload)
		}
		got, err := reconcile.DecodeCommand(want.Name, payload)
		if err != nil || got != want {
			t.Fatalf("DecodeCommand = %+v, %v; want %+v", got, err, want)
		}
	})
	t.Run("a payload written by hand with the documented field names decodes", func(t *testing.T) {
		payload := `{"job":"sweep","record_id":"42","finding_id":7,"kind":"missed_success",` +
			`"expected_local_state":"pending","external_state":"succeeded"}`
		want := reconcile.Command{
			Name: "ApplyPaymentSucceeded", Job: "sweep", RecordID: "42", FindingID: 7, Kind: "missed_success",
			ExpectedLocal: "pending", External: "succeeded",
		}
		got, err := reconcile.DecodeCommand("ApplyPaymentSucceeded", []byte(payload))
		if err != nil || got != want {
			t.Fatalf("DecodeCommand = %+v, %v; want %+v", got, err, want)
		}
	})
	rejects := []struct {
		name    string
		payload string
	}{
		{"a payload without record_id is rejected", `{"job":"sweep","finding_id":7,"kind":"missed_success"}`},
		{"a payload without finding_id is rejected", `{"job":"sweep","record_id":"42","kind":"missed_success"}`},
		{"a payload with neither is rejected", `{"job":"sweep"}`},
		{"an empty object is rejected", `{}`},
		{"a payload that is not JSON is rejected", `record 42`},
		{"an empty payload is rejected", ``},
	}
	for _, tt := range rejects {
		t.Run(tt.name, func(t *testing.T) {
			c, err := reconcile.DecodeCommand("ApplyPaymentSucceeded", []byte(tt.payload))
			if err == nil {
				t.Fatalf("DecodeCommand = %+v, nil; want an error", c)
			}
			if c != (reconcile.Command{}) {
				t.Errorf("DecodeCommand returned %+v with its error, want the zero Command", c)
			}
			if !strings.HasPrefix(err.Error(), "reconcile: ") || !strings.Contains(err.Error(), "ApplyPaymentSucceeded") {
				t.Errorf("error %q, want a reconcile: error naming the command", err)
			}
		})
	}
}

func TestNewNamesStatesSafely(t *testing.T) {
	type secretive struct{ Status, ClientSecret string }
	s := newStore(newClock(), 1, always("paid"))
	gw := reconcile.GatewayFunc[*secretive](func(context.Context, string) (*secretive, error) {
		return &secretive{Status: "succeeded", ClientSecret: "pi_1_secret_abc"}, nil
	})
	fn := reconcile.ClassifierFunc[string, *secretive](func(string, *secretive) reconcile.Decision {
		return reconcile.Decision{Verdict: reconcile.InSync}
	})
	cfg := reconcile.Config[string, *secretive]{Job: job, Source: s, Sink: s, Gateway: gw, Classifier: fn}
	if _, err := reconcile.New(cfg); err == nil || !strings.Contains(err.Error(), "ExternalState") {
		t.Fatalf("New = %v; want an error asking for ExternalState rather than recording the struct whole", err)
	}
	table, err := reconcile.NewRuleTable(func(l string) string { return l }, func(e *secretive) string { return e.Status },
		reconcile.Rule[string, *secretive]{Local: []string{"paid"}, External: []string{"succeeded"}, Decision: reconcile.Decision{Verdict: reconcile.InSync}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Classifier = table
	if _, err := reconcile.RunBatch(context.Background(), cfg); err != nil {
		t.Fatalf("a rule table names its own states: %v", err)
	}
	if o, ok := s.Observation(job, recordID(1)); !ok || o.External != "succeeded" {
		t.Fatalf("observation %+v; want the rule table's name for the state, %q", o, "succeeded")
	}
}
