package scale_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/tools/scale"
)

// TestMain runs the tests, or, in the worker processes the tests start (re-executions of this
// test binary), a worker.
func TestMain(m *testing.M) {
	scale.MaybeRunWorker()
	os.Exit(m.Run())
}

// rows is the table size: $RECONCILE_SCALE_ROWS, or def. The default is what the issue asks
// for; the knob is for quick local runs.
func rows(t *testing.T, def int) int {
	v := os.Getenv("RECONCILE_SCALE_ROWS")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("RECONCILE_SCALE_ROWS=%q is not a positive number", v)
	}
	return n
}

func load(t *testing.T, n int) *scale.Fixture {
	t.Helper()
	pool, schema := pgtest.PoolSchema(t)
	f, err := scale.Load(context.Background(), pool, pgtest.URL(t), schema, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func logResult(t *testing.T, res scale.Result) {
	t.Helper()
	b, _ := json.Marshal(res)
	t.Logf("result: %s", b)
}

// Four worker processes share one budget of 100 calls per second with bursts of 10 (Stripe's
// whole live-mode allowance). Every row must be verified exactly once, the planted drift found
// exactly (no finding or command twice), and no sliding window of one second of stripetest's
// request log may hold more than 100×(1 s + 20 ms + 20 ms + 100 ms) + 10 = 124 calls: the budget
// grants at most 100×1 s + 10 in any second of the database clock (ratebudget_internal_test.go
// checks that exactly), a worker makes a granted call within MaxLate (20 ms) of its time or gives
// it up, 20 ms (scale.Travel) allow for the request's way to stripetest's log, and 100 ms
// (scale.Skew) for the spread of the budget's answers' way to the workers, which time each call
// from when its answer arrived.
//
// Without the race detector the workers could make several hundred list calls a second and the
// budget binds; with it they are slower than the budget (each list call decodes a hundred
// PaymentIntents), and TestTheBudgetBindsWorkersThatCouldCallFasterThanIt makes sure it binds.
func TestFourWorkerProcessesVerifyEveryRowOnceWithinOneSharedBudget(t *testing.T) {
	t.Parallel()
	n := rows(t, 200_000)
	f := load(t, n)
	res, err := scale.Run(context.Background(), f, scale.Options{
		Workers: 4, Shards: 8, Batch: 1000, Concurrency: 4,
		Rate: 100, Burst: 10, MaxLate: 20 * time.Millisecond, Latency: 5 * time.Millisecond, Timeout: 5 * time.Minute,
	})
	logResult(t, res)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Reports) != 4 || res.Verifications[0] != int64(n) {
		t.Fatalf("%d worker reports, %v verifications; want 4 and %d", len(res.Reports), res.Verifications, n)
	}
	// No call without a grant: the shared bucket counted at least every call stripetest saw.
	if int64(res.APICalls) > res.Granted {
		t.Fatalf("%d calls made, only %d granted by the budget", res.APICalls, res.Granted)
	}
	worked := 0
	for _, r := range res.Reports {
		if r.Ticks > 0 {
			worked++
		}
	}
	t.Logf("%d of 4 workers leased shards; max calls in a sliding second %d (bound %v), in a clock second %d",
		worked, res.MaxCalls1s, res.BudgetBound, res.MaxCallsAligned1s)
}

// One of three workers hangs in the middle of a batch (its calls made, its commit not) and is
// killed with SIGKILL. Its shard stays leased until the lease (2 s) expires; then another worker
// takes it over from the shard's last commit. Every row is still verified exactly once, and the
// drift found exactly once.
func TestAWorkerKilledMidBatchIsTakenOverAfterItsLeaseWithNothingSkippedOrDoubled(t *testing.T) {
	t.Parallel()
	f := load(t, 15_000)
	victim := 0
	res, err := scale.Run(context.Background(), f, scale.Options{
		Workers: 3, Shards: 6, Batch: 1000, Concurrency: 4, Rate: 1000, Burst: 50,
		Latency: 5 * time.Millisecond, Lease: 2 * time.Second, Hang: &victim, HangOnFetch: 2, Timeout: 5 * time.Minute,
	})
	logResult(t, res)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Killed) != 1 || res.Takeovers < 1 {
		t.Fatalf("killed %v, %d takeovers; want worker-0 killed and its shard taken over", res.Killed, res.Takeovers)
	}
	took := 0
	for _, r := range res.Reports {
		took += r.TookOver
	}
	if took < 1 {
		t.Fatalf("no surviving worker reports a takeover: %+v", res.Reports)
	}
}

// Four worker processes asking one PaymentIntent per call, each with 8 calls in flight at 5 ms:
// they could make far more calls than the shared budget of 50 a second (with bursts of 5)
// allows, and together they must stay within it in every second of stripetest's log (bound
// 50×(1 s + 20 ms + 20 ms + 100 ms) + 5 = 62). Four budgets of their own would allow 4×55.
func TestTheBudgetBindsWorkersThatCouldCallFasterThanIt(t *testing.T) {
	t.Parallel()
	f := load(t, 800)
	res, err := scale.Run(context.Background(), f, scale.Options{
		Workers: 4, Shards: 8, Batch: 50, Concurrency: 8, PerObject: true,
		Rate: 50, Burst: 5, MaxLate: 20 * time.Millisecond, Latency: 5 * time.Millisecond, Timeout: 5 * time.Minute,
	})
	logResult(t, res)
	if err != nil {
		t.Fatal(err)
	}
	if res.APICalls < 800 || int64(res.APICalls) > res.Granted {
		t.Fatalf("%d calls, %d granted; want a call per row at least, and none without a grant", res.APICalls, res.Granted)
	}
}

// A run that cannot finish in its time says so, rather than fail later for want of the
// completion it never reached: two workers at 2 calls a second need 10 s for 2000 rows.
func TestARunOutOfTimeReportsThatItsWorkersDidNotFinish(t *testing.T) {
	t.Parallel()
	f := load(t, 2000)
	res, err := scale.Run(context.Background(), f, scale.Options{
		Workers: 2, Shards: 2, Batch: 100, Rate: 2, Burst: 1, Latency: 5 * time.Millisecond, Timeout: 2 * time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("Run out of time: %v, want its workers reported as not finished", err)
	}
	if len(res.Killed) != 0 {
		t.Fatalf("killed %v: workers stopped for want of time are not victims", res.Killed)
	}
}
