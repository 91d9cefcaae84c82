package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/internal/leaktest"
	"golang.org/x/time/rate"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

func TestARowWithoutExternalIDIsReviewedWithoutAsking(t *testing.T) {
	c := newClock()
	s := newStore(c, 2, always("paid"))
	s.Put(memstore.Row[int64, string]{Key: 3, ExternalID: "", Local: "pending", UpdatedAt: c.Now().Add(-time.Hour)})
	gw := newFakeGateway(0, func(context.Context, int, string) (string, error) { return "succeeded", nil })
	rep, err := reconcile.RunBatch(context.Background(), config(s, gw))
	if err != nil {
		t.Fatal(err)
	}
	if gw.Asked("") != 0 || gw.Calls() != 2 {
		t.Fatalf("gateway asked about the empty id %d times (%d calls in all); want never, 2 calls", gw.Asked(""), gw.Calls())
	}
	fs := reconciletest.Findings(t, s, "")
	if rep.Verdicts[reconcile.NeedsReview] != 1 || len(fs) != 1 || fs[0].Kind != reconcile.KindInvalidExternalID || fs[0].RecordID != "3" {
		t.Fatalf("verdicts %v, findings %+v; want one invalid_external_id finding for row 3", rep.Verdicts, fs)
	}
	if _, ok := s.Observation(job, "3"); ok {
		t.Fatal("a row never asked about counts as verified")
	}
}

func TestAPanicInTheGatewayOrClassifierFailsTheBatchNotTheProcess(t *testing.T) {
	tests := []struct {
		name       string
		gateway    func(call int) (string, error)
		classifier reconcile.Classifier[string, string]
	}{
		{"a gateway that panics", func(call int) (string, error) {
			if call == 3 {
				panic("gateway bug")
			}
			return "succeeded", nil
		}, nil},
		{"a classifier that panics", func(int) (string, error) { return "succeeded", nil },
			reconcile.ClassifierFunc[string, string](func(l, e string) reconcile.Decision { panic("classifier bug") })},
	}
	for _, tt := range tests {
		for _, conc := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s at concurrency %d", tt.name, conc), func(t *testing.T) {
				defer leaktest.VerifyNone(t)
				s := newStore(newClock(), 20, always("paid"))
				sink := &countingSink{Sink: s}
				cfg := config(s, newFakeGateway(0, func(_ context.Context, call int, _ string) (string, error) { return tt.gateway(call) }))
				cfg.Sink, cfg.Concurrency = sink, conc
				if tt.classifier != nil {
					cfg.Classifier = tt.classifier
				}
				_, err := reconcile.RunBatch(context.Background(), cfg)
				if err == nil || !strings.Contains(err.Error(), "panic") || !strings.HasPrefix(err.Error(), "reconcile: job ") {
					t.Fatalf("err = %v, want a reconcile error naming the panic", err)
				}
				assertNothingWritten(t, s, sink, 20)
			})
		}
	}
}

func TestALimiterThatCannotGrantACallBeforeTheDeadlineStillCommitsWhatWasLearned(t *testing.T) {
	s := newStore(newClock(), 10, always("paid"))
	gw := newFakeGateway(0, func(context.Context, int, string) (string, error) { return "succeeded", nil })
	cfg := config(s, gw)
	cfg.Limiter = rate.NewLimiter(rate.Every(time.Second), 2) // two at once, then one a second
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	rep, err := reconcile.RunBatch(ctx, cfg)
	if err != nil {
		t.Fatalf("RunBatch: %v; a limiter refusing before the deadline is a slowdown, not a failure", err)
	}
	if gw.Calls() != 2 || rep.Scanned != 2 || rep.Verdicts[reconcile.InSync] != 2 || rep.Verdicts[reconcile.Unverifiable] != 0 || !rep.RateLimited {
		t.Fatalf("calls %d, report %+v; want 2 calls, 2 in sync committed, rate limited", gw.Calls(), rep)
	}
	if cur := s.Cursor(job); cur.Version != 1 || cur.Position != "2" {
		t.Fatalf("cursor %+v: want the batch committed with the cursor at row 2, before the first row not asked", cur)
	}
}

func TestTheReportCarriesTheLongestRetryAfter(t *testing.T) {
	s := newStore(newClock(), 10, always("paid"))
	gw := newFakeGateway(0, func(_ context.Context, call int, _ string) (string, error) {
		if call == 2 {
			return "", &reconcile.RateLimitError{RetryAfter: 7 * time.Second, Reason: "global-rate"}
		}
		return "succeeded", nil
	})
	rep, err := reconcile.RunBatch(context.Background(), config(s, gw))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.RateLimited || rep.RetryAfter != 7*time.Second {
		t.Fatalf("report %+v, want rate limited with RetryAfter 7s", rep)
	}
}

func TestALostCursorRaceNamesTheJob(t *testing.T) {
	s := newStore(newClock(), 4, always("paid"))
	gw := newFakeGateway(0, func(context.Context, int, string) (string, error) { return "succeeded", nil })
	stale, err := s.Read(context.Background(), reconcile.ReadRequest{Job: job, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Another run moves the cursor between our read and our commit.
	racer := &racingSource{Source: s, before: func() {
		if _, err := reconcile.RunBatch(context.Background(), config(s, gw)); err != nil {
			t.Fatal(err)
		}
	}, batch: stale}
	cfg := config(s, gw)
	cfg.Source = racer
	_, err = reconcile.RunBatch(context.Background(), cfg)
	if !errors.Is(err, reconcile.ErrConcurrentRun) || !strings.Contains(err.Error(), "job "+job) {
		t.Fatalf("err = %v, want ErrConcurrentRun naming job %s", err, job)
	}
}

// racingSource returns a batch read earlier, after letting another run go first.
type racingSource struct {
	reconcile.Source[string]
	before func()
	batch  reconcile.Batch[string]
}

func (r *racingSource) Read(context.Context, reconcile.ReadRequest) (reconcile.Batch[string], error) {
	r.before()
	return r.batch, nil
}
