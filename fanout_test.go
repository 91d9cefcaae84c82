package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/leaktest"
)

// fanWorld is a fan-out over scripted accounts: each account has runners that complete their
// cycle every so many batches, and every batch run is logged as "account/runner".
type fanWorld struct {
	t     *testing.T
	clock *clock

	mu       sync.Mutex
	accounts []string                           // what Accounts lists
	cycles   map[string][]int                   // account -> batches per cycle of each runner
	answer   map[string]func() error            // account -> a failure to return instead of a batch
	report   map[string]func() reconcile.Report // account -> a report to return instead
	listErr  error
	builds   map[string]int
	log      []string
	during   func(account string) // called inside every batch
	statuses statuses             // what the jobs' Status readers answer
	position map[string]int       // "account/runner" -> batches run in its current cycle
}

func newFanWorld(t *testing.T, cycles map[string][]int) *fanWorld {
	w := &fanWorld{t: t, clock: newClock(), cycles: cycles, answer: map[string]func() error{},
		report: map[string]func() reconcile.Report{}, builds: map[string]int{}, position: map[string]int{}}
	for a := range cycles {
		w.accounts = append(w.accounts, a)
	}
	return w
}

func (w *fanWorld) list(context.Context) ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.accounts), w.listErr
}

func (w *fanWorld) build(account string) ([]reconcile.FanOutJob, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.builds[account]++
	cycles, ok := w.cycles[account]
	if !ok {
		return nil, fmt.Errorf("no such account %s", account)
	}
	jobs := make([]reconcile.FanOutJob, len(cycles))
	for i := range cycles {
		jobs[i] = reconcile.FanOutJob{Job: "payments@" + account, Batches: &fanRunner{w: w, account: account, runner: i}}
		if i == len(cycles)-1 { // one runner of the job reads its status, as a lane would not
			jobs[i].Status = statusFunc(func(ctx context.Context, job string) (reconcile.Status, error) {
				w.mu.Lock()
				sr := w.statuses
				w.mu.Unlock()
				return sr.Status(ctx, job)
			})
		}
	}
	return jobs, nil
}

// fanRunner is one scripted runner of an account.
type fanRunner struct {
	w       *fanWorld
	account string
	runner  int
}

func (r *fanRunner) RunBatch(ctx context.Context) (reconcile.Report, error) {
	w := r.w
	w.mu.Lock()
	name := fmt.Sprintf("%s/%d", r.account, r.runner)
	w.log = append(w.log, name)
	during, fail, report := w.during, w.answer[r.account], w.report[r.account]
	w.mu.Unlock()
	if during != nil {
		during(r.account)
	}
	if err := ctx.Err(); err != nil {
		return reconcile.Report{}, err
	}
	if fail != nil {
		if err := fail(); err != nil {
			return reconcile.Report{}, err
		}
	}
	if report != nil {
		return report(), nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.position[name]++
	rep := reconcile.Report{Job: "payments@" + r.account, Scanned: 10, GatewayCalls: 1,
		Verdicts: map[reconcile.Verdict]int{reconcile.InSync: 10}}
	if w.position[name] == w.cycles[r.account][r.runner] {
		w.position[name] = 0
		rep.Wrapped = true
	}
	return rep, nil
}

func (w *fanWorld) fanOut() *reconcile.FanOut {
	w.t.Helper()
	f, err := reconcile.NewFanOut(reconcile.FanOutConfig{Name: "connect", Accounts: w.list, Build: w.build,
		Now: w.clock.Now, Backoff: time.Minute, RefreshEvery: time.Hour})
	if err != nil {
		w.t.Fatal(err)
	}
	return f
}

// takeLog returns the batches run since the last call.
func (w *fanWorld) takeLog() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.log
	w.log = nil
	return l
}

// round runs batches until one reports Wrapped (at most limit) and returns the turns taken.
func (w *fanWorld) round(f *reconcile.FanOut, limit int) []string {
	w.t.Helper()
	for range limit {
		rep, err := f.RunBatch(context.Background())
		if err != nil {
			w.t.Fatal(err)
		}
		if rep.Wrapped {
			return w.takeLog()
		}
	}
	w.t.Fatalf("no round completed in %d batches; ran %v", limit, w.takeLog())
	return nil
}

func TestFanOutTakesTurns(t *testing.T) {
	tests := []struct {
		name   string
		cycles map[string][]int
		want   string // the turns of two rounds, each "account/runner"
	}{
		{"one account is its own cycle", map[string][]int{"a": {3}},
			"a/0 a/0 a/0 | a/0 a/0 a/0"},
		{"accounts take turns in id order, one batch each",
			map[string][]int{"a": {3}, "b": {1}, "c": {2}},
			"a/0 b/0 c/0 a/0 c/0 a/0 | a/0 b/0 c/0 a/0 c/0 a/0"},
		{"small accounts wait for the huge one's cycle instead of spinning",
			map[string][]int{"huge": {6}, "s1": {1}, "s2": {1}},
			"huge/0 s1/0 s2/0 huge/0 huge/0 huge/0 huge/0 huge/0 | huge/0 s1/0 s2/0 huge/0 huge/0 huge/0 huge/0 huge/0"},
		{"a huge account does not delay small ones: each gets a turn before its second batch",
			map[string][]int{"a1": {1}, "a2": {1}, "a3": {1}, "zz": {4}},
			"a1/0 a2/0 a3/0 zz/0 zz/0 zz/0 zz/0 | a1/0 a2/0 a3/0 zz/0 zz/0 zz/0 zz/0"},
		{"an account's runners take its turns in order, each until it wraps",
			map[string][]int{"a": {2, 1}, "b": {1, 3}},
			"a/0 b/0 a/1 b/1 a/0 b/1 b/1 | a/0 b/0 a/1 b/1 a/0 b/1 b/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newFanWorld(t, tt.cycles)
			f := w.fanOut()
			got := strings.Join(w.round(f, 100), " ") + " | " + strings.Join(w.round(f, 100), " ")
			if got != tt.want {
				t.Errorf("turns:\n got %s\nwant %s", got, tt.want)
			}
			if f.Rounds() != 2 {
				t.Errorf("rounds = %d, want 2", f.Rounds())
			}
		})
	}
}

func TestFanOutReportsTheBatchUnderItsName(t *testing.T) {
	w := newFanWorld(t, map[string][]int{"a": {2}})
	f := w.fanOut()
	rep, err := f.RunBatch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Job != "connect" || rep.Scanned != 10 || rep.GatewayCalls != 1 || rep.Verdicts[reconcile.InSync] != 10 || rep.Wrapped {
		t.Errorf("first batch: %+v", rep)
	}
	rep, err = f.RunBatch(context.Background())
	if err != nil || !rep.Wrapped {
		t.Errorf("second batch: %+v, %v; want the round wrapped", rep, err)
	}
}

func TestFanOutWithNoAccountsWrapsAtOnce(t *testing.T) {
	w := newFanWorld(t, map[string][]int{})
	rep, err := w.fanOut().RunBatch(context.Background())
	if err != nil || !rep.Wrapped || rep.Scanned != 0 {
		t.Errorf("got %+v, %v; want an empty wrapped round", rep, err)
	}
}

// A failed batch, an outage, a batch every call of which was refused, or a cursor another
// reconciler holds makes that account sit out without holding the round up: the others go on,
// their rounds complete, and the account takes its turn again once its time has passed.
func TestFanOutAccountThatFailsSitsOutAndTheOthersGoOn(t *testing.T) {
	tests := []struct {
		name string
		// trouble makes account b's batches fail in some way.
		trouble func(w *fanWorld)
		// wantWait is how long b sits out after its first and second trouble.
		wantWait [2]time.Duration
	}{
		{"a failed batch: backoff, doubling", func(w *fanWorld) {
			w.answer["b"] = func() error { return errors.New("boom") }
		}, [2]time.Duration{time.Minute, 2 * time.Minute}},
		{"an unavailable external system: backoff, doubling", func(w *fanWorld) {
			w.report["b"] = func() reconcile.Report { return reconcile.Report{Unavailable: true, Deferred: true} }
		}, [2]time.Duration{time.Minute, 2 * time.Minute}},
		{"every call refused by a rate limit: its Retry-After, when longer than the backoff", func(w *fanWorld) {
			w.report["b"] = func() reconcile.Report {
				return reconcile.Report{RateLimited: true, Deferred: true, RetryAfter: 90 * time.Second}
			}
		}, [2]time.Duration{90 * time.Second, 2 * time.Minute}},
		{"another reconciler holds the cursor: the backoff, not doubled", func(w *fanWorld) {
			w.answer["b"] = func() error { return reconcile.ErrConcurrentRun }
		}, [2]time.Duration{time.Minute, time.Minute}},
		{"nothing to do now (every shard leased elsewhere): the backoff, not doubled", func(w *fanWorld) {
			w.report["b"] = func() reconcile.Report { return reconcile.Report{Deferred: true} }
		}, [2]time.Duration{time.Minute, time.Minute}},
		{"nothing to do until the next cycle is due: its Retry-After, not doubled", func(w *fanWorld) {
			w.report["b"] = func() reconcile.Report { return reconcile.Report{Deferred: true, RetryAfter: 90 * time.Second} }
		}, [2]time.Duration{90 * time.Second, 90 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newFanWorld(t, map[string][]int{"a": {3}, "b": {1}, "c": {2}})
			tt.trouble(w)
			f := w.fanOut()
			// b fails on its turn; a and c complete their cycles, and so does the round.
			if got, want := strings.Join(w.round(f, 10), " "), "a/0 b/0 c/0 a/0 c/0 a/0"; got != want {
				t.Fatalf("turns %s, want %s", got, want)
			}
			for k, wait := range tt.wantWait {
				// While b sits out, rounds go on without it.
				w.clock.Advance(wait - time.Second)
				if got, want := strings.Join(w.round(f, 10), " "), "a/0 c/0 a/0 c/0 a/0"; got != want {
					t.Fatalf("a second before the end of sit-out %d: turns %s, want %s", k+1, got, want)
				}
				// Then it takes its turn again, and fails again.
				w.clock.Advance(time.Second)
				if got, want := strings.Join(w.round(f, 10), " "), "a/0 b/0 c/0 a/0 c/0 a/0"; got != want {
					t.Fatalf("after sit-out %d: turns %s, want %s", k+1, got, want)
				}
			}
			// b recovers and completes its cycle in the next round it has a turn in.
			w.mu.Lock()
			delete(w.answer, "b")
			delete(w.report, "b")
			w.mu.Unlock()
			w.clock.Advance(time.Hour)
			if got, want := strings.Join(w.round(f, 10), " "), "a/0 b/0 c/0 a/0 c/0 a/0"; got != want {
				t.Fatalf("after recovery: turns %s, want %s", got, want)
			}
			if w.position["b/0"] != 0 {
				t.Errorf("b did not complete its cycle")
			}
		})
	}
}

// A fan-out whose every account left in the round runs in another call has nothing to do
// here now: that is no rate limit, and no account sits out for it.
func TestFanOutWithEveryAccountBusyIsIdle(t *testing.T) {
	w := newFanWorld(t, map[string][]int{"a": {2}})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	w.during = func(string) {
		once.Do(func() {
			close(entered)
			<-release
		})
	}
	f := w.fanOut()
	ctx := context.Background()
	done := make(chan error)
	go func() {
		_, err := f.RunBatch(ctx)
		done <- err
	}()
	<-entered
	rep, err := f.RunBatch(ctx)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err != nil || !rep.Deferred || rep.RateLimited || rep.Unavailable || rep.RetryAfter != 0 || reconcile.AfterBatch(ctx, rep, err) != reconcile.AfterIdle {
		t.Fatalf("with a busy in another call: %+v, %v; want Deferred alone (idle)", rep, err)
	}
	if rep, err := f.RunBatch(ctx); err != nil || !rep.Wrapped {
		t.Fatalf("a's second batch: %+v, %v; want the round complete", rep, err)
	}
}

// An account rate limited after some progress stays in the round and waits what the answer
// asked; when it is the only one left, the fan-out defers for that long.
func TestFanOutRateLimitedAccountWaitsInTheRound(t *testing.T) {
	w := newFanWorld(t, map[string][]int{"a": {1}, "b": {2}})
	limited := true
	w.report["b"] = func() reconcile.Report {
		if !limited {
			return reconcile.Report{Scanned: 3, Wrapped: true}
		}
		limited = false
		return reconcile.Report{Scanned: 3, RateLimited: true, RetryAfter: 30 * time.Second}
	}
	f := w.fanOut()
	ctx := context.Background()
	for range 2 { // a, then b rate limited
		if rep, err := f.RunBatch(ctx); err != nil || rep.Wrapped || rep.Deferred {
			t.Fatalf("%+v, %v", rep, err)
		}
	}
	rep, err := f.RunBatch(ctx)
	if err != nil || !rep.Deferred || !rep.RateLimited || rep.RetryAfter != 30*time.Second || rep.Wrapped {
		t.Fatalf("with only b left, waiting: %+v, %v; want Deferred and RateLimited for 30s", rep, err)
	}
	w.clock.Advance(30 * time.Second)
	if rep, err := f.RunBatch(ctx); err != nil || !rep.Wrapped {
		t.Fatalf("after the wait: %+v, %v; want b to complete the round", rep, err)
	}
	if got, want := strings.Join(w.takeLog(), " "), "a/0 b/0 b/0"; got != want {
		t.Errorf("turns %s, want %s", got, want)
	}
}

func TestFanOutFollowsTheAccountList(t *testing.T) {
	t.Run("an account added during a round joins it", func(t *testing.T) {
		w := newFanWorld(t, map[string][]int{"a": {2}, "c": {2}, "b": {1}})
		w.accounts = []string{"a", "c"}
		f := w.fanOut()
		ctx := context.Background()
		if _, err := f.RunBatch(ctx); err != nil { // a
			t.Fatal(err)
		}
		w.mu.Lock()
		w.accounts = []string{"a", "b", "c"}
		w.mu.Unlock()
		if err := f.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Join(w.round(f, 10), " "), "a/0 b/0 c/0 a/0 c/0"; got != want {
			t.Errorf("turns %s, want %s", got, want)
		}
		if got := f.Accounts(); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Errorf("accounts %v", got)
		}
	})
	t.Run("an account removed during a round leaves it, and the round completes without it", func(t *testing.T) {
		w := newFanWorld(t, map[string][]int{"a": {1}, "b": {5}})
		f := w.fanOut()
		ctx := context.Background()
		for range 3 { // a b b
			if _, err := f.RunBatch(ctx); err != nil {
				t.Fatal(err)
			}
		}
		w.mu.Lock()
		w.accounts = []string{"a"}
		w.mu.Unlock()
		if err := f.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		rep, err := f.RunBatch(ctx)
		if err != nil || !rep.Wrapped || rep.Scanned != 0 {
			t.Fatalf("got %+v, %v; want the round complete without running anything", rep, err)
		}
		if got, want := strings.Join(w.takeLog(), " "), "a/0 b/0 b/0"; got != want {
			t.Errorf("turns %s, want %s", got, want)
		}
		if got, want := strings.Join(w.round(f, 10), " "), "a/0"; got != want {
			t.Errorf("next round %s, want %s", got, want)
		}
	})
	t.Run("an account removed while its batch runs: its report is ignored", func(t *testing.T) {
		w := newFanWorld(t, map[string][]int{"a": {1}, "b": {1}})
		f := w.fanOut()
		ctx := context.Background()
		w.during = func(account string) {
			if account != "b" {
				return
			}
			w.mu.Lock()
			w.accounts = []string{"a"}
			w.mu.Unlock()
			if err := f.Refresh(ctx); err != nil {
				t.Error(err)
			}
		}
		if _, err := f.RunBatch(ctx); err != nil { // a, which completes its cycle
			t.Fatal(err)
		}
		rep, err := f.RunBatch(ctx) // b, removed meanwhile
		if err != nil || !rep.Wrapped || rep.Scanned != 0 {
			t.Fatalf("got %+v, %v; want the round complete and b's batch not counted", rep, err)
		}
		if got := f.Accounts(); !slices.Equal(got, []string{"a"}) {
			t.Errorf("accounts %v", got)
		}
	})
	t.Run("accounts are listed again every RefreshEvery during a round", func(t *testing.T) {
		w := newFanWorld(t, map[string][]int{"a": {10}, "b": {1}})
		w.accounts = []string{"a"}
		f := w.fanOut()
		ctx := context.Background()
		if _, err := f.RunBatch(ctx); err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		w.accounts = []string{"a", "b"}
		w.mu.Unlock()
		if _, err := f.RunBatch(ctx); err != nil { // not yet listed again
			t.Fatal(err)
		}
		w.clock.Advance(time.Hour)
		if _, err := f.RunBatch(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Join(w.takeLog(), " "), "a/0 a/0 b/0"; got != want {
			t.Errorf("turns %s, want %s", got, want)
		}
	})
	t.Run("a list that fails before it was ever read is the batch's error", func(t *testing.T) {
		w := newFanWorld(t, map[string][]int{"a": {1}})
		w.listErr = errors.New("accounts table unreachable")
		f := w.fanOut()
		_, err := f.RunBatch(context.Background())
		if err == nil || !strings.Contains(err.Error(), "accounts table unreachable") || !strings.Contains(err.Error(), "connect") {
			t.Fatalf("err = %v", err)
		}
		w.mu.Lock()
		w.listErr = nil
		w.mu.Unlock()
		if rep, err := f.RunBatch(context.Background()); err != nil || !rep.Wrapped {
			t.Fatalf("after the list recovered: %+v, %v", rep, err)
		}
	})
	t.Run("a list that fails later: the accounts listed last go on, and health says so", func(t *testing.T) {
		w := newFanWorld(t, map[string][]int{"a": {1}, "b": {1}})
		w.statuses = statuses{}
		f := w.fanOut()
		if got, want := strings.Join(w.round(f, 10), " "), "a/0 b/0"; got != want {
			t.Fatalf("turns %s, want %s", got, want)
		}
		w.mu.Lock()
		w.listErr = errors.New("accounts table unreachable")
		w.mu.Unlock()
		if got, want := strings.Join(w.round(f, 10), " "), "a/0 b/0"; got != want {
			t.Errorf("turns with the list failing %s, want %s", got, want)
		}
		h := f.Health(context.Background(), reconcile.HealthPolicy{})
		if h.OK || h.Checks[0].Name != "accounts" || h.Checks[0].Reason != "accounts: the account list cannot be read: other error" {
			t.Errorf("health %s", h)
		}
	})
	t.Run("duplicate and empty ids", func(t *testing.T) {
		w := newFanWorld(t, map[string][]int{"a": {1}})
		w.accounts = []string{"a", "a"}
		f := w.fanOut()
		if err := f.Refresh(context.Background()); err != nil || !slices.Equal(f.Accounts(), []string{"a"}) {
			t.Fatalf("%v, %v", err, f.Accounts())
		}
		w.accounts = []string{"a", ""}
		if err := f.Refresh(context.Background()); err == nil || !strings.Contains(err.Error(), "empty account id") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestFanOutAccountThatCannotBeBuiltIsSkippedAndRetried(t *testing.T) {
	w := newFanWorld(t, map[string][]int{"a": {1}})
	w.accounts = []string{"a", "b"} // b has no script: its build fails
	f := w.fanOut()
	ctx := context.Background()
	if got, want := strings.Join(w.round(f, 10), " "), "a/0"; got != want {
		t.Errorf("turns %s, want %s", got, want)
	}
	w.statuses = statuses{"payments@a": {Job: "payments@a", Now: w.clock.Now(), CycleStartedAt: w.clock.Now(),
		LastBatchAt: w.clock.Now(), NewRowsPerHour: -1}}
	h := f.Health(ctx, reconcile.HealthPolicy{})
	if h.OK || len(h.Reasons()) != 1 || h.Reasons()[0] != "account b: its jobs cannot be built: other error" {
		t.Errorf("health: %s", h)
	}
	w.mu.Lock()
	w.cycles["b"] = []int{1}
	w.mu.Unlock()
	if got, want := strings.Join(w.round(f, 10), " "), "a/0 b/0"; got != want {
		t.Errorf("after b can be built: turns %s, want %s", got, want)
	}
	if w.builds["a"] != 1 || w.builds["b"] != 2 {
		t.Errorf("builds %v: a once, b until it succeeded", w.builds)
	}
}

func TestFanOutRefusesAJobTwoAccountsShare(t *testing.T) {
	f, err := reconcile.NewFanOut(reconcile.FanOutConfig{Name: "connect",
		Accounts: func(context.Context) ([]string, error) { return []string{"a", "b"}, nil },
		Build: func(string) ([]reconcile.FanOutJob, error) {
			return []reconcile.FanOutJob{{Job: "payments", Batches: &scripted{next: func(context.Context, int) (reconcile.Report, error) {
				return reconcile.Report{Wrapped: true}, nil
			}}}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	h := f.Health(context.Background(), reconcile.HealthPolicy{})
	want := []string{
		"account a (job payments): no runner of the job has a Status reader",
		`account b: its jobs cannot be built: job "payments" is also account a's`,
	}
	if h.OK || !slices.Equal(h.Reasons(), want) {
		t.Errorf("health reasons:\n%s\nwant\n%s", strings.Join(h.Reasons(), "\n"), strings.Join(want, "\n"))
	}
}

func TestNewFanOutChecksItsConfig(t *testing.T) {
	list := func(context.Context) ([]string, error) { return nil, nil }
	build := func(string) ([]reconcile.FanOutJob, error) { return nil, nil }
	for _, cfg := range []reconcile.FanOutConfig{
		{Accounts: list, Build: build},
		{Name: "x", Build: build},
		{Name: "x", Accounts: list},
		{Name: "x", Accounts: list, Build: build, Backoff: -1},
	} {
		if _, err := reconcile.NewFanOut(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

func TestFanOutStopsWhenItsContextEnds(t *testing.T) {
	w := newFanWorld(t, map[string][]int{"a": {1}, "b": {1}})
	f := w.fanOut()
	ctx, cancel := context.WithCancel(context.Background())
	w.during = func(string) { cancel() }
	if _, err := f.RunBatch(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// a is not held to account for our own cancellation: it goes first again.
	w.during = nil
	w.takeLog()
	rep, err := f.RunBatch(context.Background())
	if err != nil || rep.Deferred {
		t.Fatalf("%+v, %v", rep, err)
	}
}

// statusFunc is a StatusReader function.
type statusFunc func(ctx context.Context, job string) (reconcile.Status, error)

func (f statusFunc) Status(ctx context.Context, job string) (reconcile.Status, error) {
	return f(ctx, job)
}

// statuses is a StatusReader over fixed statuses.
type statuses map[string]reconcile.Status

func (s statuses) Status(_ context.Context, job string) (reconcile.Status, error) {
	st, ok := s[job]
	if !ok {
		return reconcile.Status{}, fmt.Errorf("no status for %s", job)
	}
	return st, nil
}

func TestFanOutHealthNamesTheAccountThatLags(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	healthy := func(job string, lag time.Duration, rows int64) reconcile.Status {
		return reconcile.Status{Job: job, Now: now, Lag: lag, Rows: rows, NewRowsPerHour: -1, CycleStartedAt: now.Add(-time.Minute),
			LastCycleCompletedAt: now.Add(-2 * time.Minute), LastBatchAt: now.Add(-time.Minute), LastBatchScanned: 10,
			OpenFindings: map[string]int{"missed_success": 1}}
	}
	w := newFanWorld(t, map[string][]int{"acct_big": {1}, "acct_small": {1}, "acct_gone": {1}})
	w.statuses = statuses{
		"payments@acct_big":   healthy("payments@acct_big", 80*time.Hour, 1000),
		"payments@acct_small": healthy("payments@acct_small", time.Hour, 10),
	}
	h := w.fanOut().Health(context.Background(), reconcile.HealthPolicy{})
	if h.OK || h.Job != "connect" {
		t.Fatalf("health %s: want failing", h)
	}
	var names []string
	for _, c := range h.Checks {
		names = append(names, fmt.Sprintf("%s=%t", c.Name, c.OK))
	}
	if got, want := strings.Join(names, " "), "account:acct_big=false account:acct_gone=false account:acct_small=true"; got != want {
		t.Errorf("checks %s, want %s", got, want)
	}
	reasons := h.Reasons()
	if len(reasons) != 2 ||
		!strings.HasPrefix(reasons[0], "account acct_big (job payments@acct_big): lag: a row has gone 80h0m0s without being verified") ||
		reasons[1] != "account acct_gone (job payments@acct_gone): status unavailable" {
		t.Errorf("reasons:\n%s", strings.Join(reasons, "\n"))
	}
	if h.Checks[0].Value != "80h0m0s" || h.Checks[0].Limit != "72h0m0s" {
		t.Errorf("check %+v", h.Checks[0])
	}
	if h.Status.Lag != 80*time.Hour || h.Status.Rows != 1010 || h.Status.OpenFindings["missed_success"] != 2 || !h.Status.Now.Equal(now) {
		t.Errorf("status %+v", h.Status)
	}
}

// The health endpoint serves a fan-out through Judge: 503, naming the account that lags.
func TestTheHealthHandlerServesAFanOut(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	w := newFanWorld(t, map[string][]int{"acct_big": {1}, "acct_small": {1}})
	w.statuses = statuses{
		"payments@acct_big":   {Job: "payments@acct_big", Now: now, Lag: 80 * time.Hour, NewRowsPerHour: -1},
		"payments@acct_small": {Job: "payments@acct_small", Now: now, Lag: time.Hour, NewRowsPerHour: -1},
	}
	for job, st := range w.statuses {
		st.CycleStartedAt, st.LastCycleCompletedAt, st.LastBatchAt, st.LastBatchScanned = now.Add(-time.Minute), now.Add(-2*time.Minute), now.Add(-time.Minute), 10
		w.statuses[job] = st
	}
	h := healthHandlerOf(t, reconcile.MonitorConfig{Jobs: []reconcile.MonitorJob{{Name: "connect", Judge: w.fanOut().Health}}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz?format=text", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "account acct_big (job payments@acct_big): lag") ||
		strings.Contains(rec.Body.String(), "account acct_small (job") {
		t.Errorf("answer %d:\n%s", rec.Code, rec.Body)
	}
	if _, err := reconcile.NewMonitor(reconcile.MonitorConfig{Jobs: []reconcile.MonitorJob{
		{Name: "connect", Judge: w.fanOut().Health, Status: reconcile.StatusReader(nil)},
		{Name: "both", Judge: w.fanOut().Health, Status: w.statuses},
	}}); err == nil || !strings.Contains(err.Error(), `job "both" needs exactly one of Status and Judge`) {
		t.Errorf("a job with both Status and Judge: %v", err)
	}
}

func TestFanOutHealthReportsAnAccountListThatCannotBeRead(t *testing.T) {
	w := newFanWorld(t, map[string][]int{"a": {1}})
	w.listErr = errors.New(`ERROR: relation "billing_internal.accounts" does not exist (SQLSTATE 42P01)`)
	h := w.fanOut().Health(context.Background(), reconcile.HealthPolicy{})
	if h.OK || len(h.Checks) != 1 || h.Checks[0].Name != "accounts" || h.Checks[0].Reason != "accounts: the account list cannot be read: database error" {
		t.Errorf("health %s, checks %+v", h, h.Checks)
	}
}

// Concurrent batches never run one account twice at once, and every account still completes.
func TestFanOutConcurrentBatchesRunDifferentAccounts(t *testing.T) {
	cycles := map[string][]int{}
	for i := range 8 {
		cycles[fmt.Sprintf("acct_%d", i)] = []int{3}
	}
	w := newFanWorld(t, cycles)
	var (
		mu      sync.Mutex
		running = map[string]bool{}
		clash   string
	)
	w.during = func(account string) {
		mu.Lock()
		if running[account] {
			clash = account
		}
		running[account] = true
		mu.Unlock()
		time.Sleep(time.Millisecond) // let the other goroutines pick meanwhile
		mu.Lock()
		running[account] = false
		mu.Unlock()
	}
	f := w.fanOut()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for f.Rounds() < 3 {
				if _, err := f.RunBatch(context.Background()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if clash != "" {
		t.Errorf("two batches of %s ran at once", clash)
	}
	counts := map[string]int{}
	for _, l := range w.takeLog() {
		counts[l]++
	}
	for a := range cycles {
		if n := counts[a+"/0"]; n < 9 {
			t.Errorf("%s ran %d batches in 3 rounds, want at least 9", a, n)
		}
	}
}

// A Runner scheduling a fan-out leaves no goroutine behind when stopped, and a removed
// account's runner is not called in any round that started after its removal.
func TestFanOutUnderARunnerLeavesNothingBehind(t *testing.T) {
	defer leaktest.VerifyNone(t)
	w := newFanWorld(t, map[string][]int{"a": {2}, "b": {1}})
	f, err := reconcile.NewFanOut(reconcile.FanOutConfig{Name: "connect", Accounts: w.list, Build: w.build})
	if err != nil {
		t.Fatal(err)
	}
	type turn struct {
		account string
		round   int64
	}
	turns := make(chan turn, 1000)
	w.during = func(account string) {
		select {
		case turns <- turn{account, f.Rounds()}:
		default:
		}
	}
	r, err := reconcile.NewRunner(reconcile.RunnerConfig{Jobs: []reconcile.RunnerJob{{Name: "connect", Batches: f,
		Interval: time.Millisecond, Jitter: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for tn := range turns {
		if tn.round >= 2 {
			break
		}
	}
	w.mu.Lock()
	w.accounts = []string{"a"}
	w.mu.Unlock()
	removedIn := f.Rounds()
	for tn := range turns {
		if tn.round >= removedIn+2 {
			break
		}
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(turns)
	for tn := range turns {
		if tn.account == "b" && tn.round > removedIn {
			t.Errorf("b ran in round %d, after its removal during round %d", tn.round, removedIn)
		}
	}
}

// When every account is away after failing, no round is run: the fan-out defers, as a job
// whose external system is down does, until the first may go again.
func TestFanOutWithEveryAccountFailingDefers(t *testing.T) {
	w := newFanWorld(t, map[string][]int{"a": {1}, "b": {1}})
	w.answer["a"] = func() error { return errors.New("boom") }
	w.answer["b"] = func() error { return errors.New("boom") }
	f := w.fanOut()
	ctx := context.Background()
	for range 2 { // a and b fail on their turns
		if rep, err := f.RunBatch(ctx); err != nil || rep.Wrapped {
			t.Fatalf("%+v, %v", rep, err)
		}
	}
	w.clock.Advance(10 * time.Second)
	rep, err := f.RunBatch(ctx)
	if err != nil || rep.Wrapped || !rep.Deferred || !rep.Unavailable || rep.RetryAfter != 50*time.Second {
		t.Fatalf("with both away: %+v, %v; want Deferred and Unavailable for 50s", rep, err)
	}
	if f.Rounds() != 0 {
		t.Errorf("%d rounds completed; none ran", f.Rounds())
	}
	w.mu.Lock()
	delete(w.answer, "b")
	w.mu.Unlock()
	w.clock.Advance(50 * time.Second)
	if got, want := strings.Join(w.round(f, 10), " "), "a/0 b/0 a/0 b/0"; got != want {
		t.Errorf("turns %s, want %s: both back, a failing again, b completing the round", got, want)
	}
}
