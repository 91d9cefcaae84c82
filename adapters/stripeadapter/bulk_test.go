package stripeadapter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

var (
	t0  = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now = t0.Add(400 * 24 * time.Hour)
)

// world is a payments table in a memstore and the matching PaymentIntents in a stripetest server.
type world struct {
	srv  *stripetest.Server
	rows []memstore.Row[int64, string]
}

// worldOptions shapes the data: row i is created at t0 + 10s·i, and its PaymentIntent 0–30 s
// later unless shift moves it.
type worldOptions struct {
	rows int
	// shift moves every PaymentIntent's created time, to make the rows' hints useless.
	shift time.Duration
	// crowd adds this many unrelated PaymentIntents per row, created in the same window.
	crowd int
	// missing leaves out every missing-th row's PaymentIntent (0: none).
	missing int
	// burst creates every row within t0's second and every PaymentIntent at t0 (plus shift):
	// an import, a backfill.
	burst bool
	// spacing is the time between two rows' creation; zero means 10 s.
	spacing time.Duration
	// aligned creates each PaymentIntent in its row's second, not 0–30 s later.
	aligned bool
	// imported rows in the middle of the others are an import: created within one second,
	// spacing after the row before them, their objects all at that second; the rows after
	// follow them spacing apart again.
	imported int
	// reversed adds the import's objects last row first: Stripe's order among objects of
	// one second is not documented.
	reversed bool
}

// importSpan returns the first and last imported row, and the second they were created in.
func (o worldOptions) importSpan() (first, last int, at time.Time) {
	first = (o.rows-o.imported)/2 + 1
	return first, first + o.imported - 1, t0.Add(time.Duration(first) * o.spacing)
}

// created is row i's creation time.
func (o worldOptions) created(i int) time.Time {
	if o.burst {
		return t0.Add(time.Duration(i) * time.Second / time.Duration(o.rows+1))
	}
	if o.imported > 0 {
		switch first, last, at := o.importSpan(); {
		case i < first:
			return t0.Add(time.Duration(i) * o.spacing)
		case i <= last:
			return at.Add(time.Duration(i-first+1) * time.Second / time.Duration(o.imported+1))
		default:
			return at.Add(time.Duration(i-last) * o.spacing)
		}
	}
	if o.spacing > 0 {
		return t0.Add(time.Duration(i) * o.spacing)
	}
	return t0.Add(time.Duration(i) * 10 * time.Second)
}

// status gives row i's local state and its PaymentIntent's status: mostly in sync, with every
// kind of drift the policy knows.
func status(i int) (string, stripe.PaymentIntentStatus) {
	switch i % 10 {
	case 0:
		return stripepolicy.LocalPending, stripe.PaymentIntentStatusSucceeded
	case 1:
		return stripepolicy.LocalPending, stripe.PaymentIntentStatusCanceled
	case 2:
		return stripepolicy.LocalPaid, stripe.PaymentIntentStatusProcessing
	case 3:
		return stripepolicy.LocalPending, stripe.PaymentIntentStatusRequiresPaymentMethod
	default:
		return stripepolicy.LocalPaid, stripe.PaymentIntentStatusSucceeded
	}
}

func newWorld(t *testing.T, o worldOptions) *world {
	t.Helper()
	srv := stripetest.NewServer(stripetest.Options{Now: func() time.Time { return now }})
	t.Cleanup(srv.Close)
	var pis []stripetest.PaymentIntent
	var which []int
	for i := 1; i <= o.rows; i++ {
		created := o.created(i)
		if o.missing == 0 || i%o.missing != 0 {
			_, st := status(i)
			piCreated := created.Add(time.Duration(i*7%31)*time.Second + o.shift)
			if o.aligned {
				piCreated = created.Add(o.shift)
			}
			if o.burst {
				piCreated = t0.Add(o.shift)
			}
			if first, last, at := o.importSpan(); o.imported > 0 && i >= first && i <= last {
				piCreated = at.Add(o.shift)
			}
			pis = append(pis, stripetest.PaymentIntent{Status: st, Created: piCreated, Amount: int64(i)})
			which = append(which, i)
		}
		for k := range o.crowd {
			pis = append(pis, stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Created: created.Add(time.Duration(k) * time.Second)})
			which = append(which, 0)
		}
	}
	if first, last, _ := o.importSpan(); o.reversed {
		// pis[k] is row which[k]'s: the import's rows are pis[first-1:last] without a crowd.
		slices.Reverse(pis[first-1 : last])
		slices.Reverse(which[first-1 : last])
	}
	ids := srv.AddPaymentIntents(pis)
	ext := map[int]string{}
	for k, i := range which {
		if i != 0 {
			ext[i] = ids[k]
		}
	}
	w := &world{srv: srv}
	for i := 1; i <= o.rows; i++ {
		id, ok := ext[i]
		if !ok {
			id = fmt.Sprintf("pi_missing%d", i)
		}
		local, _ := status(i)
		created := o.created(i)
		w.rows = append(w.rows, memstore.Row[int64, string]{Key: int64(i), ExternalID: id, Local: local, CreatedAt: created, UpdatedAt: created})
	}
	return w
}

func (w *world) newStore() *memstore.Store[int64, string] {
	s := memstore.New[int64, string](memstore.Options{Now: func() time.Time { return now }})
	for _, r := range w.rows {
		s.Put(r)
	}
	return s
}

func (w *world) gateway(t *testing.T) *stripeadapter.ObjectGateway[*stripe.PaymentIntent] {
	t.Helper()
	g, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: w.srv.Key(), BaseURL: w.srv.URL()}, stripeadapter.PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// runCycle runs one full cycle over s with one Reconciler, as a Runner does, and returns the
// summed report.
func runCycle(t *testing.T, s *memstore.Store[int64, string], gw reconcile.Gateway[*stripe.PaymentIntent], batch int) (reconcile.Report, error) {
	t.Helper()
	r, err := reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{
		Job: "sweep", Source: s, Sink: s, Gateway: gw, Classifier: stripepolicy.PaymentIntentPolicy(),
		BatchSize: batch, Concurrency: 4, ExternalState: stripepolicy.PaymentIntentState,
	})
	if err != nil {
		return reconcile.Report{}, err
	}
	sum := reconcile.Report{Verdicts: map[reconcile.Verdict]int{}}
	for range 10000 {
		rep, err := r.RunBatch(context.Background())
		if err != nil {
			return sum, err
		}
		sum.Scanned += rep.Scanned
		sum.GatewayCalls += rep.GatewayCalls
		sum.RateLimited = sum.RateLimited || rep.RateLimited
		sum.RetryAfter = max(sum.RetryAfter, rep.RetryAfter)
		for v, n := range rep.Verdicts {
			sum.Verdicts[v] += n
		}
		if rep.Wrapped {
			return sum, nil
		}
	}
	t.Fatal("the cycle did not wrap")
	return sum, nil
}

// verified counts the rows the cycle checked against Stripe.
func verified(r reconcile.Report) int {
	return r.Scanned - r.Verdicts[reconcile.Unverifiable] - r.Verdicts[reconcile.InFlight]
}

// compareRuns runs a per-object cycle and a bulk cycle over the same data and fails if their
// verdicts, findings or commands differ. It returns both reports.
func compareRuns(t *testing.T, w *world, batch int) (perObject, bulk reconcile.Report) {
	t.Helper()
	one, many := w.newStore(), w.newStore()
	g := w.gateway(t)
	var err error
	if perObject, err = runCycle(t, one, reconcile.GatewayFunc[*stripe.PaymentIntent](g.Fetch), batch); err != nil {
		t.Fatal(err)
	}
	w.srv.ResetLog()
	if bulk, err = runCycle(t, many, g, batch); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(perObject.Verdicts, bulk.Verdicts); diff != "" {
		t.Errorf("verdicts differ (-per-object +bulk):\n%s", diff)
	}
	if diff := cmp.Diff(reconciletest.Findings(t, one, ""), reconciletest.Findings(t, many, ""), ignoreRequestIDs); diff != "" {
		t.Errorf("findings differ (-per-object +bulk):\n%s", diff)
	}
	if diff := cmp.Diff(one.Commands(), many.Commands()); diff != "" {
		t.Errorf("commands differ (-per-object +bulk):\n%s", diff)
	}
	if len(reconciletest.Findings(t, many, "")) == 0 || len(many.Commands()) == 0 {
		t.Fatal("the data produced no findings or no commands; the comparison proves nothing")
	}
	// The engine counts a call per wait; the server counts what arrived.
	if arrived := w.srv.Requests(stripetest.ListPaymentIntents) + w.srv.Requests(stripetest.RetrievePaymentIntent); arrived != bulk.GatewayCalls {
		t.Errorf("the engine counted %d calls, stripetest received %d", bulk.GatewayCalls, arrived)
	}
	return perObject, bulk
}

// ignoreRequestIDs compares findings' details without the ids of the requests they quote (a
// missing_externally finding's names the 404's).
var ignoreRequestIDs = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Detail" },
	cmp.Transformer("withoutRequestIDs", func(s string) string { return requestID.ReplaceAllString(s, "req_…") }))

var requestID = regexp.MustCompile(`req_[A-Za-z0-9]+`)

func TestBulkFetchWithAlignedCreatedTimesCostsAboutOneCallPerHundredRows(t *testing.T) {
	t.Parallel()
	w := newWorld(t, worldOptions{rows: 3000})
	perObject, bulk := compareRuns(t, w, 1000)
	ratio := float64(bulk.GatewayCalls) / float64(verified(bulk))
	t.Logf("per-object %d calls, bulk %d calls for %d verified rows: %.4f calls per row", perObject.GatewayCalls, bulk.GatewayCalls, verified(bulk), ratio)
	if ratio > 0.011 {
		t.Fatalf("%.4f calls per verified row, want at most 0.011", ratio)
	}
	if verified(bulk) != 3000 {
		t.Fatalf("%d rows verified, want all 3000", verified(bulk))
	}
}

func TestBulkFetchOfRowsASecondApartCostsAboutOneCallPerHundredRows(t *testing.T) {
	t.Parallel()
	// One payment a second: the 5-minute skew above a batch holds the next 300 intents, three
	// pages that match none of the batch's rows. They are not barren: the batch's intents lie
	// below them, and they are the next batch's.
	w := newWorld(t, worldOptions{rows: 3000, spacing: time.Second})
	_, bulk := compareRuns(t, w, 1000)
	ratio := float64(bulk.GatewayCalls) / float64(verified(bulk))
	if verified(bulk) != 3000 || ratio > 0.011 {
		t.Fatalf("%d rows verified at %.4f calls per row; want all 3000 at most 0.011", verified(bulk), ratio)
	}
}

func TestBulkFetchOfABurstCostsAboutOneCallPerHundredRows(t *testing.T) {
	t.Parallel()
	// 450 intents created within one second, as an import makes them: the list shows them
	// newest first, so a batch of the oldest rows sits behind every newer one.
	for _, tc := range []struct{ rows, batch int }{{450, 100}, {2500, 1000}, {3000, 100}} {
		t.Run(fmt.Sprintf("%d rows, batch %d", tc.rows, tc.batch), func(t *testing.T) {
			w := newWorld(t, worldOptions{rows: tc.rows, burst: true})
			perObject, bulk := compareRuns(t, w, tc.batch)
			ratio := float64(bulk.GatewayCalls) / float64(verified(bulk))
			t.Logf("per-object %d calls, bulk %d calls (%d lists, %d retrieves) for %d verified rows: %.4f calls per row",
				perObject.GatewayCalls, bulk.GatewayCalls, w.srv.Requests(stripetest.ListPaymentIntents),
				w.srv.Requests(stripetest.RetrievePaymentIntent), verified(bulk), ratio)
			if verified(bulk) != tc.rows || ratio > 0.02 {
				t.Fatalf("%d of %d rows verified at %.4f calls per row; want all at most 0.02", verified(bulk), tc.rows, ratio)
			}
		})
	}
	t.Run("a burst in a window crowded with other intents", func(t *testing.T) {
		// Every row's intent in the same second, and as many strangers: the list reads through
		// the burst and still costs far less than a call per row.
		w := newWorld(t, worldOptions{rows: 1000, burst: true, crowd: 1})
		_, bulk := compareRuns(t, w, 100)
		if ratio := float64(bulk.GatewayCalls) / float64(verified(bulk)); ratio > 0.04 {
			t.Fatalf("%.4f calls per verified row, want at most 0.04", ratio)
		}
	})
}

func TestBulkFetchOfRowsSpreadOutAroundAnImportCostsAboutOneCallPerHundredRows(t *testing.T) {
	t.Parallel()
	// As a new user tried it: 1,000 rows a minute apart and, in their middle, an import of
	// 1,500 created within one second. A batch holding the older rows and the import's oldest
	// meets the import's newer objects first, newest first, and must read through them (they
	// are the next batch's) rather than give up and ask a thousand rows one by one.
	for _, tc := range []struct {
		batch    int
		reversed bool
	}{{200, false}, {1000, false}, {200, true}, {1000, true}} {
		order := map[bool]string{false: "in the rows' order", true: "in the reverse order"}[tc.reversed]
		t.Run(fmt.Sprintf("batch %d, the import listed %s within its second", tc.batch, order), func(t *testing.T) {
			t.Parallel()
			batch := tc.batch
			w := newWorld(t, worldOptions{rows: 2500, imported: 1500, spacing: time.Minute, reversed: tc.reversed})
			_, bulk := compareRuns(t, w, batch)
			lists, retrieves := w.srv.Requests(stripetest.ListPaymentIntents), w.srv.Requests(stripetest.RetrievePaymentIntent)
			ratio := float64(bulk.GatewayCalls) / float64(verified(bulk))
			t.Logf("%d lists and %d retrieves for %d verified rows: %.4f calls per row", lists, retrieves, verified(bulk), ratio)
			if verified(bulk) != 2500 || ratio > 0.02 {
				t.Fatalf("%d of 2500 rows verified at %.4f calls per row (%d lists, %d retrieves); want all at most 0.02",
					verified(bulk), ratio, lists, retrieves)
			}
		})
	}
}

func TestBulkFetchSharedByTwoSweepsAtOnceJudgesAsPerObject(t *testing.T) {
	t.Parallel()
	// Two jobs sweep the same rows through one gateway at once: each may meet the other's
	// look-ahead and mark, which may cost calls but never change a verdict.
	w := newWorld(t, worldOptions{rows: 2500, imported: 1500, spacing: time.Minute})
	g := w.gateway(t)
	one := w.newStore()
	if _, err := runCycle(t, one, reconcile.PerObject[*stripe.PaymentIntent](g), 200); err != nil {
		t.Fatal(err)
	}
	want := reconciletest.Findings(t, one, "")
	stores := []*memstore.Store[int64, string]{w.newStore(), w.newStore()}
	var wg sync.WaitGroup
	reps := make([]reconcile.Report, len(stores))
	errs := make([]error, len(stores))
	for i, s := range stores {
		wg.Go(func() { reps[i], errs[i] = runCycle(t, s, g, 200) })
	}
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if diff := cmp.Diff(want, reconciletest.Findings(t, s, "")); diff != "" || verified(reps[i]) != 2500 {
			t.Errorf("sweep %d: %d verified, findings differ from per-object (-want +got):\n%s", i, verified(reps[i]), diff)
		}
	}
}

func TestBulkFetchVerifiesNothingOnAListingOlderThanTheTTL(t *testing.T) {
	t.Parallel()
	const rows = 300
	w := newWorld(t, worldOptions{rows: rows, spacing: time.Second, aligned: true})
	g, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: w.srv.Key(), BaseURL: w.srv.URL(), ListCacheTTL: time.Hour}, stripeadapter.PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	// The look-ahead's own clock, moved past the TTL by hand: a race-instrumented run on a
	// busy machine may take long between two batches. It runs with the engine's, which asks for
	// answers since its cycle started.
	var mu sync.Mutex
	var ahead time.Duration
	g.SetListCacheClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(ahead) })
	s := w.newStore()
	r, err := reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{
		Job: "sweep", Source: s, Sink: s, Gateway: g, Classifier: stripepolicy.PaymentIntentPolicy(),
		BatchSize: 100, ExternalState: stripepolicy.PaymentIntentState,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The first batch (the oldest rows) lists the skew's margin above its rows, the next
	// batches' intents, and keeps them.
	if _, err := r.RunBatch(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls := w.srv.Requests(stripetest.ListPaymentIntents) + w.srv.Requests(stripetest.RetrievePaymentIntent)
	// Row 104 (local paid, intent succeeded) has its intent canceled meanwhile.
	if err := w.srv.SetStatus(w.rows[103].ExternalID, stripe.PaymentIntentStatusCanceled); err != nil {
		t.Fatal(err)
	}
	// Within the TTL the next batch is answered from the listing, without a call.
	if _, err := r.RunBatch(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := w.srv.Requests(stripetest.ListPaymentIntents) + w.srv.Requests(stripetest.RetrievePaymentIntent); got != calls {
		t.Fatalf("the second batch made %d calls, want none", got-calls)
	}
	// Past the TTL nothing listed earlier is used: the last batch asks again, and sees the
	// cancellation of row 204's intent.
	if err := w.srv.SetStatus(w.rows[203].ExternalID, stripe.PaymentIntentStatusCanceled); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	ahead = 2 * time.Hour
	mu.Unlock()
	if _, err := r.RunBatch(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := w.srv.Requests(stripetest.ListPaymentIntents) + w.srv.Requests(stripetest.RetrievePaymentIntent); got == calls {
		t.Fatal("the third batch, past the TTL, made no call")
	}
	var kinds []string
	for _, f := range reconciletest.Findings(t, s, "") {
		if f.RecordID == "204" {
			kinds = append(kinds, f.Kind)
		}
	}
	if len(kinds) != 1 || kinds[0] != stripepolicy.KindPaidLocallyNotExternally {
		t.Fatalf("findings of row 204: %v; want %s, from the state after the TTL", kinds, stripepolicy.KindPaidLocallyNotExternally)
	}
}

func TestBulkFetchWithUselessHintsCostsAtMostTwoPercentMoreThanPerObject(t *testing.T) {
	t.Parallel()
	for _, o := range []worldOptions{
		{rows: 2000, shift: 200 * 24 * time.Hour},           // nothing in the window at all
		{rows: 2000, shift: 200 * 24 * time.Hour, crowd: 5}, // a window full of other objects
		{rows: 2000, crowd: 20},                             // ours drowned among others
	} {
		t.Run(fmt.Sprintf("shift %v crowd %d", o.shift, o.crowd), func(t *testing.T) {
			w := newWorld(t, o)
			_, bulk := compareRuns(t, w, 1000)
			ratio := float64(bulk.GatewayCalls) / float64(verified(bulk))
			t.Logf("bulk %d calls for %d verified rows: %.4f calls per row", bulk.GatewayCalls, verified(bulk), ratio)
			if ratio > 1.02 {
				t.Fatalf("%.4f calls per verified row, want at most 1.02", ratio)
			}
		})
	}
}

func TestBulkFetchFallsBackForObjectsOutsideTheWindowAndMissingOnes(t *testing.T) {
	t.Parallel()
	w := newWorld(t, worldOptions{rows: 1000, missing: 50})
	_, bulk := compareRuns(t, w, 500)
	if got := w.srv.Requests(stripetest.RetrievePaymentIntent); got != 20 {
		t.Fatalf("%d per-object calls, want one for each of the 20 rows Stripe does not have", got)
	}
	if bulk.Verdicts[reconcile.NeedsReview] == 0 {
		t.Fatal("no NeedsReview for the missing objects")
	}
}

func TestBulkFetchFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault stripetest.Fault
		check func(t *testing.T, w *world, rep reconcile.Report, err error)
	}{
		{
			name: "a 429 on the list asks no more and tells the scheduler when to come back",
			fault: stripetest.Fault{Status: http.StatusTooManyRequests, Code: "rate_limit",
				Header: http.Header{"Retry-After": {"9"}, "Stripe-Rate-Limited-Reason": {"endpoint-rate"}}, Times: 1},
			check: func(t *testing.T, w *world, rep reconcile.Report, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if !rep.RateLimited || rep.RetryAfter != 9*time.Second || w.srv.Requests(stripetest.RetrievePaymentIntent) != 0 {
					t.Fatalf("report %+v, %d retrieves; want rate limited, retry after 9s, no per-object calls", rep, w.srv.Requests(stripetest.RetrievePaymentIntent))
				}
			},
		},
		{
			name:  "a 503 on the list falls back to per-object calls",
			fault: stripetest.Fault{Status: http.StatusServiceUnavailable, Times: 1},
			check: func(t *testing.T, w *world, rep reconcile.Report, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if verified(rep) != 300 || w.srv.Requests(stripetest.RetrievePaymentIntent) != 100 {
					t.Fatalf("report %+v, %d retrieves; want all verified, the first batch's 100 rows one by one", rep, w.srv.Requests(stripetest.RetrievePaymentIntent))
				}
			},
		},
		{
			name:  "a 401 on the list aborts the batch",
			fault: stripetest.Fault{Status: http.StatusUnauthorized, Message: "Invalid API Key provided: sk_test_****test"},
			check: func(t *testing.T, w *world, _ reconcile.Report, err error) {
				if !errors.Is(err, reconcile.ErrAbortBatch) {
					t.Fatalf("err = %v, want ErrAbortBatch", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, worldOptions{rows: 300})
			w.srv.Inject(stripetest.ListPaymentIntents, tt.fault)
			rep, err := runCycle(t, w.newStore(), w.gateway(t), 100)
			tt.check(t, w, rep, err)
		})
	}
}

// splitCycle runs one cycle at batch 1000, through a gateway with maxPages as MaxListPages, over
// 1000 rows a second apart, 300 recent and 700 from three years earlier, with their
// PaymentIntents, and 20,000 unrelated PaymentIntents created at stranger(i).
func splitCycle(t *testing.T, stranger func(old time.Time, i int) time.Time, maxPages int) (*stripetest.Server, reconcile.Report) {
	t.Helper()
	srv := stripetest.NewServer(stripetest.Options{Now: func() time.Time { return now }})
	t.Cleanup(srv.Close)
	recent, old := now.Add(-24*time.Hour), now.Add(-3*365*24*time.Hour)
	var pis []stripetest.PaymentIntent
	created := func(i int) time.Time {
		if i < 700 {
			return old.Add(time.Duration(i) * time.Second)
		}
		return recent.Add(time.Duration(i) * time.Second)
	}
	for i := range 1000 {
		pis = append(pis, stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Created: created(i)})
	}
	for i := range 20000 {
		pis = append(pis, stripetest.PaymentIntent{Status: stripe.PaymentIntentStatusSucceeded, Created: stranger(old, i)})
	}
	ids := srv.AddPaymentIntents(pis)
	s := memstore.New[int64, string](memstore.Options{Now: func() time.Time { return now }})
	for i := range 1000 {
		s.Put(memstore.Row[int64, string]{Key: int64(i), ExternalID: ids[i], Local: stripepolicy.LocalPaid, CreatedAt: created(i), UpdatedAt: created(i)})
	}
	g, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: srv.Key(), BaseURL: srv.URL(), MaxListPages: maxPages}, stripeadapter.PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := runCycle(t, s, g, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return srv, rep
}

func TestBulkFetchStopsOnceTheListStopsMatching(t *testing.T) {
	t.Parallel()
	// The 700 older rows' intents are drowned among the 20,000 strangers, created within the
	// same 700 seconds: the list finds the 300 recent ones in three pages, then meets mostly
	// strangers: it must give up after two barren pages, not read through the crowd.
	srv, rep := splitCycle(t, func(old time.Time, i int) time.Time { return old.Add(time.Duration(i) * 35 * time.Millisecond) }, 0)
	lists := srv.Requests(stripetest.ListPaymentIntents)
	if verified(rep) != 1000 || lists > 5 || rep.GatewayCalls > 705 {
		t.Fatalf("%d list calls, %d calls in all, %d verified; want all verified with at most 5 list calls and 705 calls", lists, rep.GatewayCalls, verified(rep))
	}
}

func TestBulkFetchNeverListsTheTimeBetweenTwoGroupsOfRows(t *testing.T) {
	t.Parallel()
	// The strangers are created between the two groups, one an hour over three years: each
	// group is listed in a window of its own, and none of the strangers is read.
	srv, rep := splitCycle(t, func(old time.Time, i int) time.Time { return old.Add(time.Hour + time.Duration(i)*time.Hour) }, 0)
	lists, retrieves := srv.Requests(stripetest.ListPaymentIntents), srv.Requests(stripetest.RetrievePaymentIntent)
	if verified(rep) != 1000 || lists > 11 || retrieves > 0 {
		t.Fatalf("%d list calls and %d retrieves, %d verified; want all verified with at most 11 list calls and no retrieve", lists, retrieves, verified(rep))
	}
	for _, r := range srv.Log() {
		gte, _ := strconv.ParseInt(r.Query.Get("created[gte]"), 10, 64)
		lte, _ := strconv.ParseInt(r.Query.Get("created[lte]"), 10, 64)
		if lte-gte > 3600 {
			t.Errorf("list call %v spans %v", r.Query, time.Duration(lte-gte)*time.Second)
		}
	}
}

func TestBulkFetchMakesAtMostMaxListPagesListCalls(t *testing.T) {
	t.Parallel()
	// The batch's two groups of rows need ten pages; MaxListPages caps the list calls of the
	// whole fetch, all its windows together, and the rest are asked one by one.
	srv, rep := splitCycle(t, func(old time.Time, i int) time.Time { return old.Add(time.Hour + time.Duration(i)*time.Hour) }, 4)
	lists, retrieves := srv.Requests(stripetest.ListPaymentIntents), srv.Requests(stripetest.RetrievePaymentIntent)
	if verified(rep) != 1000 || lists != 4 || lists+retrieves != rep.GatewayCalls {
		t.Fatalf("%d list calls and %d retrieves, %d verified; want all verified with 4 list calls", lists, retrieves, verified(rep))
	}
}

func TestBulkFetchNeverSendsAnInvalidID(t *testing.T) {
	t.Parallel()
	w := newWorld(t, worldOptions{rows: 50})
	w.rows[10].ExternalID = "ch_3MtwBwLkdIwHu7ix"
	w.rows[20].ExternalID = "pi_../../v1/customers"
	s := w.newStore()
	rep, err := runCycle(t, s, w.gateway(t), 100)
	if err != nil {
		t.Fatal(err)
	}
	invalid := 0
	for _, f := range reconciletest.Findings(t, s, "") {
		if f.Kind == reconcile.KindInvalidExternalID {
			invalid++
		}
	}
	if invalid != 2 || rep.GatewayCalls != w.srv.Requests(stripetest.ListPaymentIntents)+w.srv.Requests(stripetest.RetrievePaymentIntent) {
		t.Fatalf("%d invalid-id findings, report %+v; want 2, and calls counted as made", invalid, rep)
	}
	for _, r := range w.srv.Log() {
		if strings.Contains(r.Path, "ch_") || strings.Contains(r.Path, "customers") {
			t.Fatalf("request %s reached Stripe", r.Path)
		}
	}
}
