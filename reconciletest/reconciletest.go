package reconciletest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

// Row is a local row of the fixture's table: an integer key, an external id and a status.
type Row struct {
	ID         int64
	ExternalID string
	Local      string
	// Recent makes the row look changed just now (inside the grace period); otherwise it was
	// last changed an hour ago.
	Recent bool
	// UpdatedAhead and CreatedAhead, when positive, put the row's updated_at (whatever Recent
	// says) and created_at that far ahead of the store's clock, as a skewed clock, a bad import
	// or a hostile writer would (see reconcile.MaxClockSkew). Zero: the fixture's usual times.
	UpdatedAhead, CreatedAhead time.Duration
}

// Fixture is one isolated store with a table the suite can fill and inspect.
type Fixture interface {
	// Store is the adapter under test, over the fixture's table.
	Store() reconcile.Store[string]
	Insert(t testing.TB, rows ...Row)
	Delete(t testing.TB, ids ...int64)
	// Verified returns the record's last-verified time and observed external state for job.
	Verified(t testing.TB, job string, id int64) (at time.Time, external string, ok bool)
	// Reviewer is the store's review side (the store itself, for memstore and pgstore).
	Reviewer() reconcile.Reviewer
	// Commands returns the repair commands the job queued, oldest first.
	Commands(t testing.TB, job string) []reconcile.Command
}

// Gateway is a fake external system over a map of external id to state, counting calls.
// A state of "!unavailable", "!ratelimited", "!notfound" or "!abort" answers with that error.
type Gateway struct {
	mu     sync.Mutex
	states map[string]string
	calls  map[string]int
	total  int
}

// NewGateway returns a fake gateway with the given states.
func NewGateway(states map[string]string) *Gateway {
	return &Gateway{states: states, calls: map[string]int{}}
}

// Set changes one object's state.
func (g *Gateway) Set(id, state string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.states[id] = state
}

// Calls returns the number of calls for one id, or for all ids when id is empty.
func (g *Gateway) Calls(id string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if id == "" {
		return g.total
	}
	return g.calls[id]
}

// Fetch implements reconcile.Gateway.
func (g *Gateway) Fetch(ctx context.Context, id string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls[id]++
	g.total++
	s, ok := g.states[id]
	switch {
	case !ok || s == "!notfound":
		return "", reconcile.ErrNotFound
	case s == "!unavailable":
		return "", reconcile.ErrUnavailable
	case s == "!ratelimited":
		return "", &reconcile.RateLimitError{RetryAfter: time.Second}
	case s == "!abort":
		return "", fmt.Errorf("fake: key rejected: %w", reconcile.ErrAbortBatch)
	}
	return s, nil
}

// Classifier returns the suite's payment policy (the same shape as the Stripe one, without
// Stripe).
func Classifier() reconcile.Classifier[string, string] { return classifier }

var classifier = func() reconcile.Classifier[string, string] {
	id := func(s string) string { return s }
	t, err := reconcile.NewRuleTable(id, id,
		reconcile.Rule[string, string]{Local: []string{"paid"}, External: []string{"succeeded"}, Decision: reconcile.Decision{Verdict: reconcile.InSync}},
		reconcile.Rule[string, string]{Local: []string{"failed"}, External: []string{"canceled"}, Decision: reconcile.Decision{Verdict: reconcile.InSync}},
		reconcile.Rule[string, string]{Local: []string{"pending"}, External: []string{"processing"}, Decision: reconcile.Decision{Verdict: reconcile.InFlight}},
		reconcile.Rule[string, string]{Local: []string{"pending"}, External: []string{"succeeded"},
			Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}},
		reconcile.Rule[string, string]{Local: []string{"paid"},
			Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "paid_locally_not_externally"}},
	)
	if err != nil {
		panic(err)
	}
	return t
}()

// Config returns a job config over the fixture's store and the gateway.
func Config(f Fixture, job string, gw reconcile.Gateway[string], batch int) reconcile.Config[string, string] {
	return reconcile.Config[string, string]{
		Job: job, Source: f.Store(), Sink: f.Store(), Gateway: gw, Classifier: Classifier(), BatchSize: batch,
	}
}

// Cycle runs batches until the cursor wraps and returns each batch's report, the wrapping
// one last. It fails the test after maxBatches.
func Cycle[L, E any](t testing.TB, cfg reconcile.Config[L, E], maxBatches int) []reconcile.Report {
	t.Helper()
	r, err := reconcile.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var reps []reconcile.Report
	for range maxBatches {
		rep, err := r.RunBatch(context.Background())
		if err != nil {
			t.Fatalf("RunBatch: %v", err)
		}
		reps = append(reps, rep)
		if rep.Wrapped {
			return reps
		}
	}
	t.Fatalf("no wrap after %d batches", maxBatches)
	return nil
}

func rows(n int, mk func(i int64) Row) []Row {
	out := make([]Row, n)
	for i := range out {
		out[i] = mk(int64(i + 1))
	}
	return out
}

func paidRow(i int64) Row { return Row{ID: i, ExternalID: fmt.Sprintf("pi_%d", i), Local: "paid"} }

func states(n int, state string) map[string]string {
	m := make(map[string]string, n)
	for i := 1; i <= n; i++ {
		m[fmt.Sprintf("pi_%d", i)] = state
	}
	return m
}

// Findings returns the findings r holds of job (of every job when job is empty), open and
// resolved, by id. It fails t on an error.
func Findings(t testing.TB, r reconcile.Reviewer, job string) []reconcile.Finding {
	t.Helper()
	var all []reconcile.Finding
	q := reconcile.FindingQuery{Job: job, State: reconcile.FindingsAll, Limit: 1000}
	for {
		page, err := r.ListFindings(context.Background(), q)
		if err != nil {
			t.Fatalf("ListFindings: %v", err)
		}
		all = append(all, page...)
		if len(page) < q.Limit {
			return all
		}
		q.AfterID = page[len(page)-1].ID
	}
}

// Run runs the conformance suite. newFixture is called once per subtest.
func Run(t *testing.T, newFixture func(t *testing.T) Fixture) {
	tests := []struct {
		name string
		fn   func(t *testing.T, f Fixture)
	}{
		{"keyset over 450 rows in batches of 200 reads 200, 200, 50, the short read wrapping with every row verified", testKeyset},
		{"a second cycle starts again from the first row", testSecondCycle},
		{"a gateway failing every call stops the batch after two calls, leaving verified times unmoved", testGatewayDown},
		{"two cycles over drifting rows keep one finding and one command per drift", testDedup},
		{"paid locally but canceled externally is a finding for review with no command", testReviewNoCommand},
		{"a row changed within the grace period is in flight and not sent to the gateway", testGrace},
		{"a cursor moved by a concurrent run fails the commit and writes nothing", testConcurrentRun},
		{"a resolved finding can be found again with a new command", testFoundAgain},
		{"findings are listed, read with their history, resolved and reopened the same way by every store", testReview},
		{"a finding keeps its decision's diffs, and a search finds it by external id or record id, whole", testDiffsAndSearch},
		{"text no store can keep (NUL, invalid UTF-8) and too many diffs cost their finding nothing but the excess", testUnstorable},
		{"an object missing externally is a verified missing_externally finding", testNotFound},
		{"a rate limit stops the rest of the batch's calls; the rows before it commit and the next batch starts with it", testRateLimit},
		{"an abort error writes nothing and keeps the cursor", testAbort},
		{"rows deleted and inserted during a cycle do not disturb the rest", testChurn},
		{"rows inserted beyond the last key after a cycle's first batch are the next cycle's, and the cycle wraps", testHighWaterMark},
		{"a backdated row inserted mid-cycle between the cursor and the cycle's end is read in that cycle", testBackdated},
		{"a store's status reports rows, cycles, open findings, the last batch and the last failure, which health judges", testStatus},
		{"a hostile answer (NUL, invalid UTF-8, control characters, 10 KB) is one finding with a bounded, valid kind, and its batch commits", testHostileAnswers},
		{"a lane's objects with hostile states or ids are one finding each, with bounded, valid text, and the step commits", testHostileFeed},
		{"a batch stopped by an error quoting hostile bytes is recorded as failed", testHostileFailure},
		{"a row's verified time is when its answer was obtained, never later than the commit, and the lag counts from it", testAnswerTime},
		{"a store's status says its stale-finding threshold, and health's reason names it", testStaleThreshold},
	}
	tests = append(tests, laneTests...)
	tests = append(tests, futureTimeTests...)
	tests = append(tests, changedRowTests...)
	tests = append(tests, supersedeTests...)
	tests = append(tests, answerOrderTests...)
	tests = append(tests, externalRecordTests...)
	tests = append(tests, groupTests...)
	tests = append(tests, reviewDuringBatchTests...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newFixture(t))
		})
	}
}

func testKeyset(t *testing.T, f Fixture) {
	f.Insert(t, rows(450, paidRow)...)
	gw := NewGateway(states(450, "succeeded"))
	reps := Cycle(t, Config(f, "sweep", gw, 200), 10)
	var got []int
	for _, r := range reps {
		got = append(got, r.Scanned)
	}
	if want := []int{200, 200, 50}; !slices.Equal(got, want) {
		t.Fatalf("batch sizes = %v, want %v", got, want)
	}
	for i := int64(1); i <= 450; i++ {
		at, ext, ok := f.Verified(t, "sweep", i)
		if !ok || at.IsZero() || ext != "succeeded" {
			t.Fatalf("row %d: verified=%v at %v external %q; want a last-verified time and succeeded", i, ok, at, ext)
		}
		if n := gw.Calls(fmt.Sprintf("pi_%d", i)); n != 1 {
			t.Fatalf("row %d asked %d times in one cycle, want 1", i, n)
		}
	}
}

func testSecondCycle(t *testing.T, f Fixture) {
	f.Insert(t, rows(5, paidRow)...)
	gw := NewGateway(states(5, "succeeded"))
	cfg := Config(f, "sweep", gw, 2)
	Cycle(t, cfg, 10)
	reps := Cycle(t, cfg, 10)
	if reps[0].Scanned != 2 || gw.Calls("pi_1") != 2 || gw.Calls("pi_5") != 2 {
		t.Fatalf("second cycle: first batch %d rows, pi_1 asked %d times, pi_5 %d; want 2, 2, 2",
			reps[0].Scanned, gw.Calls("pi_1"), gw.Calls("pi_5"))
	}
}

func testGatewayDown(t *testing.T, f Fixture) {
	f.Insert(t, rows(10, paidRow)...)
	gw := NewGateway(states(10, "succeeded"))
	cfg := Config(f, "sweep", gw, 10)
	Cycle(t, cfg, 5)
	before := map[int64]time.Time{}
	for i := int64(1); i <= 10; i++ {
		before[i], _, _ = f.Verified(t, "sweep", i)
	}
	for i := 1; i <= 10; i++ {
		gw.Set(fmt.Sprintf("pi_%d", i), "!unavailable")
	}
	callsBefore := gw.Calls("")
	rep, err := reconcile.RunBatch(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The first two calls failed and none answered: the batch stops asking, commits the two
	// rows asked (Unverifiable) and the cursor stops after them.
	if gw.Calls("")-callsBefore != 2 || rep.GatewayCalls != 2 || !rep.Unavailable || rep.Wrapped || rep.Scanned != 2 ||
		rep.Verdicts[reconcile.Unverifiable] != 2 || rep.Verdicts[reconcile.InSync] != 0 {
		t.Fatalf("calls %d, report %+v; want 2 calls, 2 rows unverifiable, unavailable, not wrapped", gw.Calls("")-callsBefore, rep)
	}
	if rep.UnverifiableRatio() != 1 {
		t.Fatalf("unverifiable ratio = %v, want 1", rep.UnverifiableRatio())
	}
	for i := int64(1); i <= 10; i++ {
		if at, _, _ := f.Verified(t, "sweep", i); !at.Equal(before[i]) {
			t.Fatalf("row %d: last verified moved from %v to %v while the gateway was down", i, before[i], at)
		}
	}
	if n := len(Findings(t, f.Reviewer(), "sweep")); n != 0 {
		t.Fatalf("%d findings for unverifiable rows, want 0", n)
	}
}

// drift: rows 1-3 pending but succeeded externally (repairable), 4-5 paid but canceled
// (review), the rest in sync.
func drift(f Fixture, t *testing.T) *Gateway {
	f.Insert(t, rows(20, func(i int64) Row {
		r := paidRow(i)
		if i <= 3 {
			r.Local = "pending"
		}
		return r
	})...)
	st := states(20, "succeeded")
	st["pi_4"], st["pi_5"] = "canceled", "canceled"
	return NewGateway(st)
}

func testDedup(t *testing.T, f Fixture) {
	gw := drift(f, t)
	cfg := Config(f, "sweep", gw, 7)
	first := Cycle(t, cfg, 10)
	Cycle(t, cfg, 10)
	var opened int
	for _, r := range first {
		opened += r.NewFindings
	}
	if fs := Findings(t, f.Reviewer(), "sweep"); len(fs) != 5 || opened != 5 {
		t.Fatalf("after two cycles: %d findings (%d reported new in the first), want 5", len(fs), opened)
	}
	cmds := f.Commands(t, "sweep")
	if len(cmds) != 3 {
		t.Fatalf("after two cycles: %d commands, want 3: %+v", len(cmds), cmds)
	}
	for _, c := range cmds {
		if c.Name != "ApplyPaymentSucceeded" || c.Kind != "missed_success" || c.ExpectedLocal != "pending" || c.FindingID == 0 {
			t.Errorf("command %+v: want ApplyPaymentSucceeded for a missed_success finding expecting pending", c)
		}
	}
}

func testReviewNoCommand(t *testing.T, f Fixture) {
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "paid"})
	gw := NewGateway(map[string]string{"pi_1": "canceled"})
	rep, err := reconcile.RunBatch(context.Background(), Config(f, "sweep", gw, 10))
	if err != nil {
		t.Fatal(err)
	}
	fs := Findings(t, f.Reviewer(), "sweep")
	if rep.Verdicts[reconcile.NeedsReview] != 1 || len(fs) != 1 || fs[0].Kind != "paid_locally_not_externally" ||
		fs[0].Local != "paid" || fs[0].External != "canceled" || fs[0].RecordID != "1" || !fs[0].Open() {
		t.Fatalf("verdicts %v, findings %+v; want one open paid_locally_not_externally finding for record 1", rep.Verdicts, fs)
	}
	if cmds := f.Commands(t, "sweep"); len(cmds) != 0 {
		t.Fatalf("commands %+v, want none for a NeedsReview finding", cmds)
	}
}

func testGrace(t *testing.T, f Fixture) {
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "pending", Recent: true}, Row{ID: 2, ExternalID: "pi_2", Local: "paid"})
	gw := NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "succeeded"})
	rep, err := reconcile.RunBatch(context.Background(), Config(f, "sweep", gw, 10))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdicts[reconcile.InFlight] != 1 || rep.Verdicts[reconcile.InSync] != 1 {
		t.Fatalf("verdicts %v, want 1 in flight and 1 in sync", rep.Verdicts)
	}
	if n := gw.Calls("pi_1"); n != 0 {
		t.Fatalf("gateway asked %d times about a row inside the grace period, want 0", n)
	}
	if _, _, ok := f.Verified(t, "sweep", 1); ok {
		t.Fatal("a row judged in flight by grace got a last-verified time")
	}
	if len(Findings(t, f.Reviewer(), "sweep")) != 0 {
		t.Fatal("a row inside the grace period produced a finding")
	}
}

func testConcurrentRun(t *testing.T, f Fixture) {
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "pending"}, Row{ID: 2, ExternalID: "pi_2", Local: "paid"})
	gw := NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "succeeded"})
	ctx := context.Background()
	// Reconciler A reads, then B runs a whole batch, then A tries to commit what it read.
	stale, err := f.Store().Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 1, Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reconcile.RunBatch(ctx, Config(f, "sweep", gw, 1)); err != nil {
		t.Fatal(err)
	}
	before := len(Findings(t, f.Reviewer(), "sweep"))
	_, err = f.Store().Commit(ctx, reconcile.Commit{
		Job: "sweep", Cursor: stale.Cursor, Next: stale.Records[0].Key,
		Outcomes: []reconcile.Outcome{{RecordID: "2", Local: "paid", External: "canceled", Verified: true,
			Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "stale_write"}}},
	})
	if !errors.Is(err, reconcile.ErrConcurrentRun) {
		t.Fatalf("commit on a moved cursor: err = %v, want ErrConcurrentRun", err)
	}
	if fs := Findings(t, f.Reviewer(), "sweep"); len(fs) != before {
		t.Fatalf("the losing commit wrote findings: %+v", fs)
	}
	if _, _, ok := f.Verified(t, "sweep", 2); ok {
		t.Fatal("the losing commit wrote an observation")
	}
	// The winner's cursor stands: the next batch reads row 2.
	rep, err := reconcile.RunBatch(ctx, Config(f, "sweep", gw, 1))
	if err != nil || rep.Scanned != 1 || gw.Calls("pi_2") != 1 {
		t.Fatalf("next batch: %+v, %v; want row 2 read once", rep, err)
	}
}

func testFoundAgain(t *testing.T, f Fixture) {
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "pending"})
	gw := NewGateway(map[string]string{"pi_1": "succeeded"})
	cfg := Config(f, "sweep", gw, 10)
	Cycle(t, cfg, 3)
	fs := Findings(t, f.Reviewer(), "sweep")
	if len(fs) != 1 {
		t.Fatalf("findings %+v, want 1", fs)
	}
	if err := f.Reviewer().ResolveFinding(context.Background(), fs[0].ID, reconcile.Resolution{As: reconcile.ResolutionFixed, By: "test"}); err != nil {
		t.Fatal(err)
	}
	Cycle(t, cfg, 3)
	fs = Findings(t, f.Reviewer(), "sweep")
	cmds := f.Commands(t, "sweep")
	if len(fs) != 2 || fs[0].Open() || !fs[1].Open() || len(cmds) != 2 || cmds[1].FindingID != fs[1].ID {
		t.Fatalf("after resolving and another cycle: findings %+v, commands %+v; want a second open finding with its own command", fs, cmds)
	}
}

func testNotFound(t *testing.T, f Fixture) {
	f.Insert(t, Row{ID: 1, ExternalID: "pi_gone", Local: "paid"})
	gw := NewGateway(map[string]string{})
	if _, err := reconcile.RunBatch(context.Background(), Config(f, "sweep", gw, 10)); err != nil {
		t.Fatal(err)
	}
	fs := Findings(t, f.Reviewer(), "sweep")
	if len(fs) != 1 || fs[0].Kind != reconcile.KindMissingExternally || fs[0].Command != "" {
		t.Fatalf("findings %+v, want one missing_externally finding without a command", fs)
	}
	// It says what the external system answered, and which object the row names.
	want := []reconcile.Diff{{Field: "object", Local: "pi_gone", External: "not found"}}
	if !strings.Contains(fs[0].Detail, "pi_gone") || !slices.Equal(fs[0].Diffs, want) {
		t.Fatalf("missing_externally finding: detail %q, diffs %+v; want the id in the detail and diffs %+v", fs[0].Detail, fs[0].Diffs, want)
	}
	if _, _, ok := f.Verified(t, "sweep", 1); !ok {
		t.Fatal("a confirmed absence did not count as verified")
	}
}

func testRateLimit(t *testing.T, f Fixture) {
	f.Insert(t, rows(10, paidRow)...)
	st := states(10, "succeeded")
	st["pi_4"] = "!ratelimited"
	gw := NewGateway(st)
	rep, err := reconcile.RunBatch(context.Background(), Config(f, "sweep", gw, 10))
	if err != nil {
		t.Fatal(err)
	}
	if gw.Calls("") != 4 || rep.Scanned != 3 || rep.Verdicts[reconcile.InSync] != 3 || rep.Verdicts[reconcile.Unverifiable] != 0 ||
		!rep.RateLimited || rep.Wrapped {
		t.Fatalf("calls %d, report %+v; want 4 calls, the 3 rows before the rate-limited one committed in sync, rate limited, not wrapped", gw.Calls(""), rep)
	}
	for i := int64(1); i <= 10; i++ {
		if _, _, ok := f.Verified(t, "sweep", i); ok != (i <= 3) {
			t.Fatalf("row %d: verified %v, want %v: only the rows before the rate limit are committed", i, ok, i <= 3)
		}
	}
	// The cursor stopped at row 3: the next batch starts with row 4, and the cycle wraps only
	// once every row was asked.
	gw.Set("pi_4", "succeeded")
	rep, err = reconcile.RunBatch(context.Background(), Config(f, "sweep", gw, 10))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Scanned != 7 || rep.Verdicts[reconcile.InSync] != 7 || !rep.Wrapped || gw.Calls("pi_4") != 2 || gw.Calls("pi_3") != 1 || gw.Calls("pi_5") != 1 {
		t.Fatalf("next batch %+v, pi_3 asked %d, pi_4 %d, pi_5 %d times; want rows 4-10 read, in sync and the cycle wrapped",
			rep, gw.Calls("pi_3"), gw.Calls("pi_4"), gw.Calls("pi_5"))
	}
	for i := int64(1); i <= 10; i++ {
		if _, _, ok := f.Verified(t, "sweep", i); !ok {
			t.Fatalf("row %d was never verified", i)
		}
	}
}

func testAbort(t *testing.T, f Fixture) {
	f.Insert(t, rows(3, paidRow)...)
	st := states(3, "succeeded")
	st["pi_2"] = "!abort"
	_, err := reconcile.RunBatch(context.Background(), Config(f, "sweep", NewGateway(st), 10))
	if !errors.Is(err, reconcile.ErrAbortBatch) {
		t.Fatalf("err = %v, want ErrAbortBatch", err)
	}
	if _, _, ok := f.Verified(t, "sweep", 1); ok {
		t.Fatal("an aborted batch wrote observations")
	}
	// The cursor did not move: a healthy gateway now reads row 1 first.
	gw := NewGateway(states(3, "succeeded"))
	if _, err := reconcile.RunBatch(context.Background(), Config(f, "sweep", gw, 1)); err != nil || gw.Calls("pi_1") != 1 {
		t.Fatalf("after abort: err %v, pi_1 asked %d times; want the batch redone from row 1", err, gw.Calls("pi_1"))
	}
}

func testChurn(t *testing.T, f Fixture) {
	const n = 1000
	f.Insert(t, rows(n, paidRow)...)
	st := states(3*n, "succeeded")
	gw := NewGateway(st)
	r, err := reconcile.New(Config(f, "sweep", gw, 50))
	if err != nil {
		t.Fatal(err)
	}
	deleted := map[int64]bool{}
	next := int64(n + 1)
	for batch := 0; ; batch++ {
		rep, err := r.RunBatch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Wrapped {
			break
		}
		// Between batches: delete two rows (one already read, one ahead) and insert two.
		for _, id := range []int64{int64(batch*50 + 10), int64(batch*50 + 500)} {
			if id >= 1 && id <= n && !deleted[id] {
				f.Delete(t, id)
				deleted[id] = true
			}
		}
		if batch < n/50 { // inserts stop eventually, or the cycle could never end
			f.Insert(t, paidRow(next), paidRow(next+1))
			next += 2
		}
	}
	for i := int64(1); i <= n; i++ {
		id := fmt.Sprintf("pi_%d", i)
		if deleted[i] {
			if gw.Calls(id) > 1 {
				t.Fatalf("deleted row %d asked %d times", i, gw.Calls(id))
			}
			continue
		}
		if gw.Calls(id) != 1 {
			t.Fatalf("row %d existed for the whole cycle and was asked %d times, want exactly 1", i, gw.Calls(id))
		}
	}
	for i := int64(n + 1); i < next; i++ {
		if c := gw.Calls(fmt.Sprintf("pi_%d", i)); c > 1 {
			t.Fatalf("inserted row %d asked %d times", i, c)
		}
	}
}

// scanned returns each report's Scanned.
func scanned(reps []reconcile.Report) []int {
	var out []int
	for _, r := range reps {
		out = append(out, r.Scanned)
	}
	return out
}

// testHighWaterMark: a cycle covers the rows present when its first batch was read. Rows
// inserted afterwards beyond the last key belong to the next cycle, so a cycle ends however
// fast rows arrive. The Store must record the cycle's end (reconcile.Cursor.End).
func testHighWaterMark(t *testing.T, f Fixture) {
	f.Insert(t, rows(10, paidRow)...)
	gw := NewGateway(states(40, "succeeded"))
	r, err := reconcile.New(Config(f, "sweep", gw, 4))
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	next := int64(11)
	for batch := 0; ; batch++ {
		if batch == 6 {
			t.Fatalf("no wrap after %d batches (%v): rows inserted during the cycle kept it open", batch, got)
		}
		rep, err := r.RunBatch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rep.Scanned)
		if rep.Wrapped {
			break
		}
		// Between batches, four new rows after the last key: as many as a batch reads.
		for range 4 {
			f.Insert(t, paidRow(next))
			next++
		}
	}
	if want := []int{4, 4, 2}; !slices.Equal(got, want) {
		t.Fatalf("batch sizes = %v, want %v: the cycle covers rows 1-10 only", got, want)
	}
	for i := int64(1); i < next; i++ {
		if c, want := gw.Calls(fmt.Sprintf("pi_%d", i)), b2i(i <= 10); c != want {
			t.Fatalf("row %d asked %d times in the first cycle, want %d", i, c, want)
		}
	}
	// The next cycle covers every row present at its start.
	reps := Cycle(t, Config(f, "sweep", gw, 4), 10)
	if got, want := scanned(reps), []int{4, 4, 4, 4, 2}; !slices.Equal(got, want) {
		t.Fatalf("second cycle batch sizes = %v, want %v", got, want)
	}
	for i := int64(1); i < next; i++ {
		if c, want := gw.Calls(fmt.Sprintf("pi_%d", i)), 1+b2i(i <= 10); c != want {
			t.Fatalf("row %d asked %d times after two cycles, want %d", i, c, want)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// testBackdated: a row inserted mid-cycle with a key between the cursor and the cycle's end
// (a backdated created_at in a composite key, say) is read in that cycle; one beyond the end
// is not.
func testBackdated(t *testing.T, f Fixture) {
	f.Insert(t, rows(10, func(i int64) Row { return paidRow(10 * i) })...) // keys 10, 20, ..., 100
	st := states(200, "succeeded")
	gw := NewGateway(st)
	r, err := reconcile.New(Config(f, "sweep", gw, 4))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.RunBatch(context.Background()) // rows 10-40
	if err != nil {
		t.Fatal(err)
	}
	if rep.Scanned != 4 || rep.Wrapped {
		t.Fatalf("first batch %+v, want 4 rows and no wrap", rep)
	}
	f.Insert(t, paidRow(55), paidRow(110))
	var got []int
	for batch := 0; ; batch++ {
		if batch == 5 {
			t.Fatalf("no wrap after %d more batches (%v)", batch, got)
		}
		rep, err := r.RunBatch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rep.Scanned)
		if rep.Wrapped {
			break
		}
	}
	if want := []int{4, 3}; !slices.Equal(got, want) { // 50, 55, 60, 70; then 80, 90, 100
		t.Fatalf("batch sizes after the first = %v, want %v", got, want)
	}
	if c := gw.Calls("pi_55"); c != 1 {
		t.Fatalf("the backdated row 55 was asked %d times in the cycle, want 1", c)
	}
	if c := gw.Calls("pi_110"); c != 0 {
		t.Fatalf("row 110, inserted beyond the cycle's end, was asked %d times in the cycle, want 0", c)
	}
	for i := int64(10); i <= 100; i += 10 {
		if c := gw.Calls(fmt.Sprintf("pi_%d", i)); c != 1 {
			t.Fatalf("row %d asked %d times in the cycle, want 1", i, c)
		}
	}
}

// personal keeps the events of a history that people and detection made, not the repair
// commands' (a store with an outbox adds those), as "action by actor: resolution note".
func personal(h []reconcile.FindingEvent) []string {
	var out []string
	for _, e := range h {
		if !e.CommandEvent() {
			out = append(out, strings.TrimSpace(e.Action+" by "+e.Actor+": "+e.Resolution+" "+e.Note))
		}
	}
	return out
}

func testReview(t *testing.T, f Fixture) {
	ctx := context.Background()
	r := f.Reviewer()
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "pending"}, Row{ID: 2, ExternalID: "pi_2", Local: "paid"}, paidRow(3))
	gw := NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "canceled", "pi_3": "succeeded"})
	cfg := Config(f, "sweep", gw, 10)
	Cycle(t, cfg, 3)

	open, err := r.ListFindings(ctx, reconcile.FindingQuery{})
	if err != nil || len(open) != 2 || open[0].RecordID != "1" || open[1].RecordID != "2" {
		t.Fatalf("ListFindings of the zero query = %+v, %v; want the open findings of rows 1 and 2", open, err)
	}
	if open[0].ExternalID != "pi_1" || open[0].Command == "" || open[1].Kind != "paid_locally_not_externally" {
		t.Fatalf("findings %+v; want row 1's with its external id and command, row 2's for review", open)
	}
	for _, tt := range []struct {
		name string
		q    reconcile.FindingQuery
		want []int64
	}{
		{"by kind", reconcile.FindingQuery{Kind: "paid_locally_not_externally"}, []int64{open[1].ID}},
		{"by record", reconcile.FindingQuery{RecordID: "1"}, []int64{open[0].ID}},
		{"by jobs", reconcile.FindingQuery{Jobs: []string{"other", "sweep"}}, []int64{open[0].ID, open[1].ID}},
		{"by another job", reconcile.FindingQuery{Job: "other"}, nil},
		{"a page after the first", reconcile.FindingQuery{AfterID: open[0].ID, Limit: 1}, []int64{open[1].ID}},
		{"a page of one", reconcile.FindingQuery{Limit: 1}, []int64{open[0].ID}},
		{"detected before an hour ago", reconcile.FindingQuery{DetectedBefore: time.Now().Add(-time.Hour)}, nil},
		{"resolved", reconcile.FindingQuery{State: reconcile.FindingsResolved}, nil},
		{"newest first", reconcile.FindingQuery{Newest: true}, []int64{open[1].ID, open[0].ID}},
		{"newest first, a page of one", reconcile.FindingQuery{Newest: true, Limit: 1}, []int64{open[1].ID}},
		{"newest first, a page after the first", reconcile.FindingQuery{Newest: true, AfterID: open[1].ID}, []int64{open[0].ID}},
		{"newest first by kind", reconcile.FindingQuery{Newest: true, Kind: "paid_locally_not_externally"}, []int64{open[1].ID}},
	} {
		fs, err := r.ListFindings(ctx, tt.q)
		var ids []int64
		for _, f := range fs {
			ids = append(ids, f.ID)
		}
		if err != nil || !slices.Equal(ids, tt.want) {
			t.Errorf("ListFindings %s = %v, %v; want %v", tt.name, ids, err, tt.want)
		}
		if c, ok := r.(reconcile.FindingCounter); ok {
			// A count is of every page: the query's paging aside.
			q := tt.q
			q.AfterID, q.Limit, q.Newest = 0, 0, false
			all, _ := r.ListFindings(ctx, q)
			if n, err := c.CountFindings(ctx, tt.q); err != nil || n != len(all) {
				t.Errorf("CountFindings %s = %d, %v; want %d", tt.name, n, err, len(all))
			}
		}
	}
	if _, err := r.ListFindings(ctx, reconcile.FindingQuery{State: "closed"}); err == nil {
		t.Error("ListFindings accepted the state \"closed\"")
	}

	id := open[1].ID
	if err := r.ResolveFinding(ctx, id, reconcile.Resolution{As: reconcile.ResolutionAccepted, By: "alice", Note: "refunded by hand"}); err != nil {
		t.Fatalf("resolve: %v", err)
	}
	if err := r.ResolveFinding(ctx, id, reconcile.Resolution{As: reconcile.ResolutionFixed, By: "bob"}); !errors.Is(err, reconcile.ErrAlreadyResolved) {
		t.Fatalf("resolving again = %v, want ErrAlreadyResolved", err)
	}
	if err := r.ReopenFinding(ctx, open[0].ID, "bob", ""); !errors.Is(err, reconcile.ErrAlreadyOpen) {
		t.Fatalf("reopening an open finding = %v, want ErrAlreadyOpen", err)
	}
	d, err := r.Finding(ctx, id)
	if err != nil || d.Open() || d.Resolution != reconcile.ResolutionAccepted || d.ResolvedBy != "alice" || d.ResolutionNote != "refunded by hand" || d.ExternalID != "pi_2" {
		t.Fatalf("Finding after resolving = %+v, %v; want resolved as accepted by alice, with the note", d, err)
	}
	if err := r.ReopenFinding(ctx, id, "carol", "the refund bounced"); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if d, err = r.Finding(ctx, id); err != nil || !d.Open() || d.Resolution != "" || d.ResolvedBy != "" {
		t.Fatalf("Finding after reopening = %+v, %v; want open again", d, err)
	}
	want := []string{"detected by sweep:", "resolved by alice: accepted refunded by hand", "reopened by carol:  the refund bounced"}
	if got := personal(d.History); !slices.Equal(got, want) {
		t.Fatalf("history %q, want %q", got, want)
	}

	// Resolved, then found again: the newer finding is the open one.
	if err := r.ResolveFinding(ctx, id, reconcile.Resolution{As: reconcile.ResolutionFalsePositive, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	Cycle(t, cfg, 3)
	if err := r.ReopenFinding(ctx, id, "bob", ""); !errors.Is(err, reconcile.ErrFoundAgain) {
		t.Fatalf("reopening drift found again = %v, want ErrFoundAgain", err)
	}
	if fs, err := r.ListFindings(ctx, reconcile.FindingQuery{RecordID: "2"}); err != nil || len(fs) != 1 || fs[0].ID == id {
		t.Fatalf("open findings of row 2 = %+v, %v; want the newer one", fs, err)
	}

	const missing = 1 << 40
	if _, err := r.Finding(ctx, missing); !errors.Is(err, reconcile.ErrFindingNotFound) {
		t.Errorf("Finding of a missing id = %v, want ErrFindingNotFound", err)
	}
	if err := r.ResolveFinding(ctx, missing, reconcile.Resolution{As: "fixed", By: "x"}); !errors.Is(err, reconcile.ErrFindingNotFound) {
		t.Errorf("resolving a missing finding = %v, want ErrFindingNotFound", err)
	}
	if err := r.ReopenFinding(ctx, missing, "x", ""); !errors.Is(err, reconcile.ErrFindingNotFound) {
		t.Errorf("reopening a missing finding = %v, want ErrFindingNotFound", err)
	}
	if err := r.ResolveFinding(ctx, id, reconcile.Resolution{By: "x"}); err == nil {
		t.Error("a resolution without its word was accepted")
	}
	if err := r.ReopenFinding(ctx, id, "", ""); err == nil {
		t.Error("a reopening without its actor was accepted")
	}
}

// diffing is the suite's policy with the fields that differ on each finding: the status, and
// for a missed success an amount whose value is longer than a Diff keeps.
type diffing struct {
	reconcile.Classifier[string, string]
}

func (c diffing) Classify(local, external string) reconcile.Decision {
	d := c.Classifier.Classify(local, external)
	if d.Kind != "" {
		d.Diffs = []reconcile.Diff{{Field: "status", Local: local, External: external}}
	}
	if d.Kind == "missed_success" {
		d.Diffs = append(d.Diffs, reconcile.Diff{Field: "amount", Local: "USD 1,234.50", External: strings.Repeat("9", 300)})
	}
	return d
}

// unstorable is the suite's policy with text a database cannot keep as it is in every finding:
// a NUL and invalid UTF-8 in its detail and diffs, and more diffs than a finding keeps.
type unstorable struct {
	reconcile.Classifier[string, string]
}

func (c unstorable) Classify(local, external string) reconcile.Decision {
	d := c.Classifier.Classify(local, external)
	if d.Kind != "" {
		d.Detail = "a\x00b\xffc"
		for i := range reconcile.MaxDiffs + 4 {
			d.Diffs = append(d.Diffs, reconcile.Diff{Field: fmt.Sprintf("f%d\x00", i), Local: "x\x00", External: "\xfe"})
		}
	}
	return d
}

func testUnstorable(t *testing.T, f Fixture) {
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "pending"}, paidRow(2))
	gw := NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "succeeded"})
	cfg := Config(f, "sweep", gw, 10)
	cfg.Classifier = unstorable{Classifier()}
	Cycle(t, cfg, 3)
	fs := Findings(t, f.Reviewer(), "sweep")
	if len(fs) != 1 || fs[0].RecordID != "1" {
		t.Fatalf("findings %+v, want row 1's", fs)
	}
	if got := fs[0].Detail; got != "a\uFFFDb\uFFFDc" {
		t.Errorf("detail %q, want the NUL and the invalid byte replaced", got)
	}
	if len(fs[0].Diffs) != reconcile.MaxDiffs {
		t.Fatalf("%d diffs kept, want the first %d", len(fs[0].Diffs), reconcile.MaxDiffs)
	}
	if d := fs[0].Diffs[reconcile.MaxDiffs-1]; d != (reconcile.Diff{Field: fmt.Sprintf("f%d\uFFFD", reconcile.MaxDiffs-1), Local: "x\uFFFD", External: "\uFFFD"}) {
		t.Errorf("last diff kept %q, want the %dth with its text made storable", d, reconcile.MaxDiffs)
	}
}

func testDiffsAndSearch(t *testing.T, f Fixture) {
	ctx := context.Background()
	r := f.Reviewer()
	f.Insert(t, Row{ID: 1, ExternalID: "pi_1", Local: "pending"}, Row{ID: 2, ExternalID: "pi_2", Local: "paid"}, paidRow(3))
	gw := NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "canceled", "pi_3": "succeeded"})
	cfg := Config(f, "sweep", gw, 10)
	cfg.Classifier = diffing{Classifier()}
	Cycle(t, cfg, 3)

	fs := Findings(t, r, "sweep")
	if len(fs) != 2 {
		t.Fatalf("findings %+v, want rows 1 and 2's", fs)
	}
	long := strings.Repeat("9", reconcile.MaxDiffValue-len("…")) + "…"
	want := map[string][]reconcile.Diff{
		"1": {{Field: "status", Local: "pending", External: "succeeded"}, {Field: "amount", Local: "USD 1,234.50", External: long}},
		"2": {{Field: "status", Local: "paid", External: "canceled"}},
	}
	for _, fd := range fs {
		if !slices.Equal(fd.Diffs, want[fd.RecordID]) {
			t.Errorf("listed finding of row %s has diffs %q, want %q", fd.RecordID, fd.Diffs, want[fd.RecordID])
		}
		d, err := r.Finding(ctx, fd.ID)
		if err != nil || !slices.Equal(d.Diffs, want[fd.RecordID]) {
			t.Errorf("Finding of row %s has diffs %q (%v), want %q", fd.RecordID, d.Diffs, err, want[fd.RecordID])
		}
	}
	// Without diffs a finding has none, not an empty list.
	f.Insert(t, Row{ID: 4, ExternalID: "pi_4", Local: "paid"})
	gw.Set("pi_4", "canceled")
	Cycle(t, Config(f, "plain", gw, 10), 3)
	for _, fd := range Findings(t, r, "plain") {
		if fd.Diffs != nil {
			t.Errorf("finding of row %s by a policy without diffs has diffs %q, want nil", fd.RecordID, fd.Diffs)
		}
	}

	byID := map[string]int64{}
	for _, fd := range fs {
		byID[fd.RecordID] = fd.ID
	}
	for _, tt := range []struct {
		search string
		state  string
		want   []int64
	}{
		{"pi_1", "", []int64{byID["1"]}},
		{"2", "", []int64{byID["2"]}},
		{"pi_", "", nil},
		{"pi_3", "", nil},
		{"pi_2", reconcile.FindingsResolved, nil},
	} {
		got, err := r.ListFindings(ctx, reconcile.FindingQuery{Job: "sweep", Search: tt.search, State: tt.state})
		var ids []int64
		for _, fd := range got {
			ids = append(ids, fd.ID)
		}
		if err != nil || !slices.Equal(ids, tt.want) {
			t.Errorf("search %q (%s) = %v, %v; want %v", tt.search, tt.state, ids, err, tt.want)
		}
		if c, ok := r.(reconcile.FindingCounter); ok {
			if n, err := c.CountFindings(ctx, reconcile.FindingQuery{Job: "sweep", Search: tt.search, State: tt.state}); err != nil || n != len(tt.want) {
				t.Errorf("count of search %q (%s) = %d, %v; want %d", tt.search, tt.state, n, err, len(tt.want))
			}
		}
	}
	if err := r.ResolveFinding(ctx, byID["2"], reconcile.Resolution{As: reconcile.ResolutionAccepted, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	got, err := r.ListFindings(ctx, reconcile.FindingQuery{Job: "sweep", Search: "pi_2", State: reconcile.FindingsAll})
	if err != nil || len(got) != 1 || got[0].ID != byID["2"] {
		t.Errorf("search pi_2 among all findings = %+v, %v; want the resolved one", got, err)
	}
}

// testStatus checks a store that is a reconcile.StatusReader (memstore and pgstore are) against
// what the suite did, and that EvaluateHealth judges it as it should.
func testStatus(t *testing.T, f Fixture) {
	sr, ok := f.Store().(reconcile.StatusReader)
	if !ok {
		t.Log("the store is not a reconcile.StatusReader: nothing to check")
		return
	}
	ctx := context.Background()
	status := func() (reconcile.Status, reconcile.Health) {
		t.Helper()
		st, err := sr.Status(ctx, "sweep")
		if err != nil {
			t.Fatal(err)
		}
		return st, reconcile.EvaluateHealth(st, reconcile.HealthPolicy{})
	}
	failing := func(h reconcile.Health) []string {
		var names []string
		for _, c := range h.Checks {
			if !c.OK {
				names = append(names, c.Name)
			}
		}
		return names
	}

	gw := drift(f, t)
	st, h := status()
	// (The fixtures' tables date new rows differently, so the lag and new rows are not compared here.)
	if st.Job != "sweep" || st.Rows != 20 || st.CyclesCompleted != 0 || !st.CycleStartedAt.IsZero() ||
		len(st.OpenFindings) != 0 || !slices.Equal(failing(h), []string{"cycle_age"}) {
		t.Fatalf("before any batch: %+v, failing %v; want 20 rows, no cycle, no findings, and cycle_age failing", st, failing(h))
	}

	Cycle(t, Config(f, "sweep", gw, 7), 10)
	st, h = status()
	want := map[string]int{"missed_success": 3, "paid_locally_not_externally": 2}
	if st.Rows != 20 || st.CyclesCompleted != 1 || st.LastCycleCompletedAt.IsZero() || st.CycleStartedAt.IsZero() ||
		st.LastBatchScanned != 6 || st.LastBatchUnverifiable != 0 || st.Lag > time.Minute || st.StaleFindings != 0 ||
		st.OldestOpenFinding.IsZero() || !st.LastFailureAt.IsZero() || fmt.Sprint(st.OpenFindings) != fmt.Sprint(want) || !h.OK {
		t.Fatalf("after a cycle: %+v, failing %v; want one cycle, a last batch of 6, lag under a minute, findings %v, healthy", st, failing(h), want)
	}

	// A deleted row's finding no longer counts, though it stays open until the cycle completes.
	f.Delete(t, 1)
	if st, _ = status(); st.Rows != 19 || st.OpenFindings["missed_success"] != 2 {
		t.Fatalf("after deleting row 1: %d rows, findings %v; want 19 rows and 2 missed_success", st.Rows, st.OpenFindings)
	}

	// A failed batch is the last attempt, and health fails on it however fresh the lag.
	gw.Set("pi_2", "!abort")
	if _, err := reconcile.RunBatch(ctx, Config(f, "sweep", gw, 7)); !errors.Is(err, reconcile.ErrAbortBatch) {
		t.Fatalf("RunBatch = %v; want ErrAbortBatch", err)
	}
	st, h = status()
	if st.LastFailureAt.IsZero() || !strings.Contains(st.LastFailure, "key rejected") || !slices.Equal(failing(h), []string{"last_attempt"}) {
		t.Fatalf("after a failed batch: failure %q at %v, failing %v; want it recorded and last_attempt failing", st.LastFailure, st.LastFailureAt, failing(h))
	}

	// The next batch that commits puts the failure behind it, and counts its unverifiable row.
	gw.Set("pi_2", "succeeded")
	gw.Set("pi_3", "!unavailable")
	if _, err := reconcile.RunBatch(ctx, Config(f, "sweep", gw, 7)); err != nil {
		t.Fatal(err)
	}
	st, h = status()
	if st.LastBatchScanned != 7 || st.LastBatchUnverifiable != 1 || !h.OK {
		t.Fatalf("after a batch with one row unverifiable: last batch %d rows, %d unverifiable, failing %v; want 7, 1, healthy",
			st.LastBatchScanned, st.LastBatchUnverifiable, failing(h))
	}
}
