package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// Regression tests for three engine bugs: a cycle that never ended while rows kept arriving, a
// rate limit that walked the cursor over rows never asked, and an outage that cost one call per
// row.

// A cycle ends however many rows arrive meanwhile: 500 rows, batches of 200, one batch an hour
// and 20 new rows between runs. The old engine read 200, 200, 140, 20, 20, ... and never
// completed a cycle.
func TestACycleEndsWhileRowsKeepArriving(t *testing.T) {
	const (
		rows0   = 500
		batch   = 200
		perHour = 20
		runs    = 30
	)
	c := newClock()
	s := newStore(c, rows0, always("paid"))
	gw := newFakeGateway(0, func(context.Context, int, string) (string, error) { return "succeeded", nil })
	cfg := config(s, gw)
	cfg.BatchSize = batch
	r, err := reconcile.New(cfg)
	if err != nil {
		t.Fatal(err)
	}

	// The model: a cycle covers the rows present when its first batch is read, in batches of
	// 200; the batch that reads fewer than 200 (none included) wraps.
	var want []int
	present, left := rows0, 0
	for run := 0; run < runs; run++ {
		if left == 0 && (run == 0 || want[run-1] < batch) {
			left = present // a new cycle
		}
		n := min(batch, left)
		want = append(want, n)
		left -= n
		present += perHour
	}

	next := int64(rows0 + 1)
	var (
		got       []int
		cycles    int
		atStart   []int64        // the keys present when the current cycle began
		callsThen map[string]int // each row's calls when the current cycle began
	)
	snapshot := func() {
		atStart, callsThen = nil, map[string]int{}
		for i := int64(1); i < next; i++ {
			atStart = append(atStart, i)
			callsThen[extID(i)] = gw.Asked(extID(i))
		}
	}
	snapshot()
	for run := 0; run < runs; run++ {
		rep, err := r.RunBatch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rep.Scanned)
		if rep.Wrapped {
			cycles++
			// Every row present at the cycle's start was asked exactly once within it.
			for _, i := range atStart {
				if d := gw.Asked(extID(i)) - callsThen[extID(i)]; d != 1 {
					t.Fatalf("cycle %d: row %d, present at the cycle's start, was asked %d times in it, want 1", cycles, i, d)
				}
			}
			if cur := s.Cursor(job); cur.CyclesCompleted != int64(cycles) || cur.Position != "" {
				t.Fatalf("after cycle %d: cursor %+v", cycles, cur)
			}
		}
		c.Advance(time.Hour)
		old := c.Now().Add(-time.Hour)
		for range perHour {
			s.Put(memstore.Row[int64, string]{Key: next, ExternalID: extID(next), Local: "paid", CreatedAt: old, UpdatedAt: old})
			next++
		}
		if rep.Wrapped {
			snapshot() // the next cycle starts with the next run, and covers these rows too
		}
	}
	if !slices.Equal(got[:6], []int{200, 200, 100, 200, 200, 160}) {
		t.Fatalf("the first two cycles read %v, want 200, 200, 100 (wrap) then 200, 200, 160 (wrap): the second covers the 560 rows present", got[:6])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("batches read %v, want %v", got, want)
	}
	if cycles < 7 {
		t.Fatalf("%d cycles completed in %d runs, want 7", cycles, runs)
	}
}

// stormGateway answers 429 to calls from..to (1-based, inclusive) and succeeds otherwise,
// recording which rows got an answer.
type stormGateway struct {
	from, to int

	mu       sync.Mutex
	calls    int
	answered map[string]int
}

func (g *stormGateway) Fetch(_ context.Context, id string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	if g.calls >= g.from && g.calls <= g.to {
		return "", &reconcile.RateLimitError{RetryAfter: time.Second}
	}
	g.answered[id]++
	return "succeeded", nil
}

func (g *stormGateway) Answered(id string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.answered[id]
}

// A stretch of 429s delays rows, it never skips them: no cycle completes while a row was not
// asked, the cursor never passes a row that got no answer, and once the storm is over every
// row is verified. The old engine committed the rows the storm stopped as Unverifiable, moved
// the cursor past them and completed the cycle.
func TestA429StormDelaysRowsAndNeverSkipsThem(t *testing.T) {
	const n = 100
	for _, conc := range []int{1, 4} {
		t.Run(fmt.Sprintf("concurrency %d", conc), func(t *testing.T) {
			c := newClock()
			s := newStore(c, n, always("paid"))
			// Calls 45-60 are rate limited: the storm starts mid-batch and outlasts many runs.
			gw := &stormGateway{from: 45, to: 60, answered: map[string]int{}}
			cfg := config(s, gw)
			cfg.BatchSize, cfg.Concurrency = 30, conc
			r, err := reconcile.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var deferred, limited int
			for run := 1; ; run++ {
				if run > 50 {
					t.Fatal("no cycle completed in 50 runs")
				}
				rep, err := r.RunBatch(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if rep.RateLimited {
					limited++
				}
				if rep.Deferred {
					deferred++
				}
				cur := s.Cursor(job)
				if rep.Wrapped != (cur.CyclesCompleted == 1) {
					t.Fatalf("run %d: report %+v, cursor %+v: a cycle completes exactly when a batch wraps", run, rep, cur)
				}
				if rep.Wrapped && rep.RateLimited {
					t.Fatalf("run %d: report %+v: a cycle completed while rows were not asked", run, rep)
				}
				// The cursor never passes a row that got no answer.
				pos := int64(n)
				if !rep.Wrapped {
					if pos, err = strconv.ParseInt(cur.Position, 10, 64); cur.Position != "" && err != nil {
						t.Fatal(err)
					}
				}
				for i := int64(1); i <= pos; i++ {
					if gw.Answered(extID(i)) == 0 {
						t.Fatalf("run %d: cursor %+v is past row %d, which was never answered (report %+v)", run, cur, i, rep)
					}
				}
				if rep.Wrapped {
					break
				}
				c.Advance(time.Second)
			}
			if limited == 0 || deferred == 0 {
				t.Fatalf("%d batches rate limited, %d deferred: the storm did not hit as planned", limited, deferred)
			}
			for i := int64(1); i <= n; i++ {
				if o, ok := s.Observation(job, recordID(i)); !ok || o.External != "succeeded" {
					t.Fatalf("row %d not verified after the storm: %+v", i, o)
				}
			}
			if fs := reconciletest.Findings(t, s, ""); len(fs) != 0 {
				t.Fatalf("findings %+v, want none", fs)
			}
		})
	}
}

// failureSink is a Sink that remembers what RecordFailure was told.
type failureSink struct {
	reconcile.Sink
	mu     sync.Mutex
	causes []error
}

func (s *failureSink) RecordFailure(_ context.Context, _ string, cause error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.causes = append(s.causes, cause)
	return nil
}

// During an outage a batch stops asking after its first two calls failed: a per-object batch
// spends at most Concurrency+1 calls, and the cursor moves by the rows actually asked. The old
// engine asked every row of every batch.
func TestAnOutageStopsAPerObjectBatch(t *testing.T) {
	const n = 50
	for _, conc := range []int{1, 4} {
		t.Run(fmt.Sprintf("concurrency %d", conc), func(t *testing.T) {
			s := newStore(newClock(), n, always("paid"))
			sink := &failureSink{Sink: s}
			gw := newFakeGateway(0, func(context.Context, int, string) (string, error) { return "", reconcile.ErrUnavailable })
			cfg := config(s, gw)
			cfg.Sink, cfg.Concurrency, cfg.BatchSize = sink, conc, 20
			r, err := reconcile.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			moved := 0
			for batch := 1; batch <= 3; batch++ {
				before := gw.Calls()
				rep, err := r.RunBatch(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				calls := gw.Calls() - before
				if calls < 2 || calls > conc+1 || rep.GatewayCalls != calls || !rep.Unavailable || rep.Wrapped {
					t.Fatalf("batch %d: %d calls, report %+v; want 2 to %d calls and Unavailable", batch, calls, rep, conc+1)
				}
				if rep.Scanned > calls || rep.Verdicts[reconcile.Unverifiable] != rep.Scanned {
					t.Fatalf("batch %d: report %+v: want at most the %d rows asked committed, all unverifiable", batch, rep, calls)
				}
				moved += rep.Scanned
				if cur := s.Cursor(job); cur.Position != recordID(int64(moved)) {
					t.Fatalf("batch %d: cursor %+v, want it at row %d: it moves by the rows asked", batch, cur, moved)
				}
			}
			if len(sink.causes) != 3 {
				t.Fatalf("the FailureRecorder was told %v, want the 3 stopped batches", sink.causes)
			}
			for _, c := range sink.causes {
				if c == nil {
					t.Fatal("RecordFailure got a nil cause")
				}
			}
			if fs := reconciletest.Findings(t, s, ""); len(fs) != 0 {
				t.Fatalf("findings %+v during an outage, want none", fs)
			}
		})
	}
}

// A bulk gateway during an outage: the bulk call fails, one row is asked alone, it fails too,
// and the batch stops: exactly 2 calls per batch, not 1 + one per row.
func TestAnOutageStopsABulkBatchAfterTwoCalls(t *testing.T) {
	const n = 30
	s := newStore(newClock(), n, always("paid"))
	sink := &failureSink{Sink: s}
	bg := &batchGateway{
		fakeGateway: newFakeGateway(0, func(context.Context, int, string) (string, error) { return "", reconcile.ErrUnavailable }),
		listed:      paymentsWorld(n), pageSize: 10,
		fail: func(int) error { return fmt.Errorf("stripe: list: %w", reconcile.ErrUnavailable) },
	}
	cfg := config(s, bg)
	cfg.Sink, cfg.BatchSize, cfg.Concurrency = sink, 10, 4
	r, err := reconcile.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for batch := 1; batch <= 3; batch++ {
		before := bg.Calls()
		rep, err := r.RunBatch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.GatewayCalls != 2 || bg.Calls()-before != 1 || !rep.Unavailable || rep.Scanned != 1 || rep.Verdicts[reconcile.Unverifiable] != 1 {
			t.Fatalf("batch %d: report %+v, %d per-object calls; want 2 calls (the list, one row alone), 1 row committed unverifiable, Unavailable",
				batch, rep, bg.Calls()-before)
		}
		if cur := s.Cursor(job); cur.Position != recordID(int64(batch)) {
			t.Fatalf("batch %d: cursor %+v, want it at row %d", batch, cur, batch)
		}
	}
	if len(sink.causes) != 3 {
		t.Fatalf("the FailureRecorder was told %v, want the 3 stopped batches", sink.causes)
	}
}

// A failed bulk call alone is no outage: when the row asked alone answers, the rest are asked
// one by one and the batch completes.
func TestAFailedBulkCallWithAHealthyFetchAsksTheRestOneByOne(t *testing.T) {
	const n = 30
	all := paymentsWorld(n)
	s := newStore(newClock(), n, always("paid"))
	sink := &failureSink{Sink: s}
	bg := &batchGateway{
		fakeGateway: newFakeGateway(0, answerFrom(all)),
		listed:      all, pageSize: 10,
		fail: func(int) error { return reconcile.ErrUnavailable },
	}
	cfg := config(s, bg)
	cfg.Sink, cfg.BatchSize, cfg.Concurrency = sink, 50, 4
	rep, err := reconcile.RunBatch(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.GatewayCalls != 1+n || bg.Calls() != n || rep.Unavailable || rep.Scanned != n || !rep.Wrapped || rep.Verdicts[reconcile.Unverifiable] != 0 {
		t.Fatalf("report %+v, %d per-object calls; want the list then %d rows one by one, all judged, the cycle wrapped", rep, bg.Calls(), n)
	}
	if len(sink.causes) != 0 {
		t.Fatalf("the FailureRecorder was told %v, want nothing", sink.causes)
	}
}

// A tick stops at a batch that found the external system unavailable: otherwise it would run
// batch after batch, two calls each, over the whole table, and the outage would cost one call
// per row again.
func TestATickStopsAtAnOutage(t *testing.T) {
	const n = 100
	s := newStore(newClock(), n, always("paid"))
	gw := newFakeGateway(0, func(context.Context, int, string) (string, error) { return "", reconcile.ErrUnavailable })
	cfg := config(s, gw)
	cfg.BatchSize = 20
	r, err := reconcile.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tick, err := reconcile.RunTick(context.Background(), r, reconcile.TickBudget{})
	if err != nil {
		t.Fatal(err)
	}
	if tick.Batches != 1 || gw.Calls() != 2 || !tick.Unavailable || tick.Wrapped {
		t.Fatalf("tick %+v, %d calls; want one batch of 2 calls, Unavailable, no wrap", tick, gw.Calls())
	}
	if cur := s.Cursor(job); cur.Position != "2" || cur.CyclesCompleted != 0 {
		t.Fatalf("cursor %+v, want it at row 2, no cycle completed", cur)
	}
}
