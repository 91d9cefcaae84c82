package stripeadapter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// laneWorld is a payments table in PostgreSQL, its PaymentIntents in a stripetest server, and
// the sweep and both lanes over them. Its clock is the wall clock plus an offset the test
// moves, shared by the fake Stripe (event times) and the feeds (settle, grace, age).
type laneWorld struct {
	t      *testing.T
	srv    *stripetest.Server
	pool   *pgxpool.Pool
	store  *pgstore.Store[string]
	gw     *stripeadapter.ObjectGateway[*stripe.PaymentIntent]
	offset atomic.Int64
	pis    []string // pis[i] is row i+1's PaymentIntent
}

const laneJob = "payments"

func (w *laneWorld) now() time.Time { return time.Now().Add(time.Duration(w.offset.Load())) }

// later moves the world's clock forward.
func (w *laneWorld) later(d time.Duration) { w.offset.Add(int64(d)) }

// newLaneWorld makes rows pending payments, created and last changed an hour ago, whose intents
// (created two hours ago) await a payment method: all in sync.
func newLaneWorld(t *testing.T, rows int) *laneWorld {
	t.Helper()
	w := &laneWorld{t: t}
	w.srv = stripetest.NewServer(stripetest.Options{Now: w.now})
	t.Cleanup(w.srv.Close)
	pool, _ := pgtest.PoolSchema(t)
	w.pool = pool
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE payments (
		id bigint PRIMARY KEY, external_id text, status text NOT NULL,
		created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL);
		CREATE INDEX ON payments (external_id)`); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	store, err := pgstore.New(pool, pgstore.Config{Table: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	w.store = store
	pis := make([]stripetest.PaymentIntent, rows)
	for i := range pis {
		pis[i] = stripetest.PaymentIntent{Created: time.Now().Add(-2*time.Hour + time.Duration(i)*time.Second), Amount: int64(100 + i)}
	}
	w.pis = w.srv.AddPaymentIntents(pis)
	if _, err := pool.Exec(ctx, `INSERT INTO payments
		SELECT i, ($1::text[])[i], 'pending', now() - interval '1 hour', now() - interval '1 hour'
		FROM generate_series(1, $2::int) AS i`, w.pis, rows); err != nil {
		t.Fatal(err)
	}
	w.gw, err = stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: w.srv.Key(), BaseURL: w.srv.URL()}, stripeadapter.PaymentIntents())
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *laneWorld) sweep() *reconcile.Reconciler[string, *stripe.PaymentIntent] {
	w.t.Helper()
	r, err := reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{
		Job: laneJob, Source: w.store, Sink: w.store, Gateway: w.gw,
		Classifier: stripepolicy.PaymentIntentPolicy(), BatchSize: 100,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func (w *laneWorld) eventsLane(sink reconcile.LaneSink, perStep int) *reconcile.Lane[string, *stripe.PaymentIntent] {
	w.t.Helper()
	feed, err := w.gw.EventsFeed(stripeadapter.EventsOptions{Now: w.now, PerStep: perStep})
	if err != nil {
		w.t.Fatal(err)
	}
	return w.lane("events", feed, sink, false)
}

func (w *laneWorld) reverseLane() *reconcile.Lane[string, *stripe.PaymentIntent] {
	w.t.Helper()
	feed, err := w.gw.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.PaymentIntent]{Now: w.now})
	if err != nil {
		w.t.Fatal(err)
	}
	return w.lane("reverse", feed, w.store, true)
}

func (w *laneWorld) lane(name string, feed reconcile.Feed[*stripe.PaymentIntent], sink reconcile.LaneSink, missing bool) *reconcile.Lane[string, *stripe.PaymentIntent] {
	w.t.Helper()
	if sink == nil {
		sink = w.store
	}
	l, err := reconcile.NewLane(reconcile.LaneConfig[string, *stripe.PaymentIntent]{
		Job: laneJob, Lane: name, Feed: feed, Matcher: w.store, Sink: sink,
		Classifier: stripepolicy.PaymentIntentPolicy(), ReportMissing: missing,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return l
}

// untilEnd runs b until it reports Wrapped (a cycle, a pass, a catch-up) and sums the reports.
func untilEnd(t *testing.T, b reconcile.BatchRunner) reconcile.TickReport {
	t.Helper()
	tr, err := reconcile.RunTick(context.Background(), b, reconcile.TickBudget{MaxRows: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Wrapped {
		t.Fatalf("tick ended without wrapping: %+v", tr)
	}
	return tr
}

func (w *laneWorld) count(sql string, args ...any) int {
	w.t.Helper()
	var n int
	if err := w.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

// noDuplicates checks that no (record, kind) has two findings, open or not, and that no finding
// has two commands.
func (w *laneWorld) noDuplicates() {
	w.t.Helper()
	if n := w.count(`SELECT count(*) FROM (SELECT 1 FROM reconcile_findings GROUP BY job, record_id, kind HAVING count(*) > 1) d`); n != 0 {
		w.t.Errorf("%d (record, kind) pairs have more than one finding", n)
	}
	if n := w.count(`SELECT count(*) FROM (SELECT 1 FROM reconcile_outbox GROUP BY finding_id HAVING count(*) > 1) d`); n != 0 {
		w.t.Errorf("%d findings have more than one command", n)
	}
}

func (w *laneWorld) laneStatus(lane string) reconcile.LaneStatus {
	w.t.Helper()
	st, err := w.store.Status(context.Background(), laneJob)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, l := range st.Lanes {
		if l.Lane == lane {
			return l
		}
	}
	w.t.Fatalf("no lane %s in status %+v", lane, st.Lanes)
	return reconcile.LaneStatus{}
}

func (w *laneWorld) position(lane string) reconcile.Cursor {
	w.t.Helper()
	c, err := w.store.ReadLane(context.Background(), laneJob, lane)
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

func TestReverseScanReportsStripeOnlyIntentsOnce(t *testing.T) {
	t.Parallel()
	w := newLaneWorld(t, 250)
	ctx := context.Background()
	orphans := w.srv.AddPaymentIntents([]stripetest.PaymentIntent{
		{Created: time.Now().Add(-48 * time.Hour), Status: stripe.PaymentIntentStatusSucceeded},
		{Created: time.Now().Add(-30 * time.Hour)},
		{Created: time.Now().Add(-3 * time.Hour), Status: stripe.PaymentIntentStatusCanceled},
	})
	young := w.srv.AddPaymentIntent(stripetest.PaymentIntent{Created: time.Now().Add(-2 * time.Minute), Status: stripe.PaymentIntentStatusSucceeded})
	w.srv.AddPaymentIntent(stripetest.PaymentIntent{Created: time.Now().Add(-10 * 24 * time.Hour)}) // outside the window
	if err := w.srv.SetStatus(w.pis[10], stripe.PaymentIntentStatusSucceeded); err != nil {
		t.Fatal(err)
	}
	reverse := w.reverseLane()

	missing := func() []string {
		rows, err := w.pool.Query(ctx, `SELECT record_id FROM reconcile_findings WHERE kind = 'missing_locally' ORDER BY record_id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	sorted := func(ids ...string) string {
		s := append([]string(nil), ids...)
		for i := range s {
			for j := i + 1; j < len(s); j++ {
				if s[j] < s[i] {
					s[i], s[j] = s[j], s[i]
				}
			}
		}
		return strings.Join(s, ",")
	}

	w.srv.ResetLog()
	tr := untilEnd(t, reverse)
	calls := w.srv.Requests(stripetest.ListPaymentIntents)
	if got, want := strings.Join(missing(), ","), sorted(orphans...); got != want {
		t.Fatalf("missing_locally findings after one pass = %s, want %s (the young one is within the grace window)", got, want)
	}
	// 253 intents in the window: three pages.
	if calls != 3 || tr.GatewayCalls != 3 {
		t.Errorf("one pass made %d list calls (report: %d), want 3", calls, tr.GatewayCalls)
	}
	if tr.NewCommands != 1 {
		t.Errorf("the pass queued %d commands, want 1 (row 11's missed success)", tr.NewCommands)
	}
	if n := w.count(`SELECT count(*) FROM reconcile_observations WHERE job = $1`, laneJob); n != 250 {
		t.Errorf("the pass verified %d rows, want all 250", n)
	}
	if l := w.laneStatus("reverse"); l.PassesCompleted != 1 || l.LastEndAt.IsZero() {
		t.Errorf("lane status after one pass: %+v", l)
	}

	// A second pass finds the same orphans already open: still one finding each.
	tr = untilEnd(t, reverse)
	if tr.NewFindings != 0 || tr.NewCommands != 0 {
		t.Errorf("the second pass opened %d findings and %d commands, want none", tr.NewFindings, tr.NewCommands)
	}
	if got, want := strings.Join(missing(), ","), sorted(orphans...); got != want {
		t.Fatalf("missing_locally findings after two passes = %s, want %s", got, want)
	}

	// Past the grace window the young intent is reported too.
	w.later(15 * time.Minute)
	untilEnd(t, reverse)
	if got, want := strings.Join(missing(), ","), sorted(append(orphans, young)...); got != want {
		t.Fatalf("missing_locally findings after the grace window = %s, want %s", got, want)
	}
	if l := w.laneStatus("reverse"); l.PassesCompleted != 3 {
		t.Errorf("passes completed = %d, want 3", l.PassesCompleted)
	}
	w.noDuplicates()
}

// A reverse lane configured with no Grace must give its rows the sweep's grace (10 minutes),
// not the events lane's minute: the scan verifies what it lists as the sweep does, and a row
// changed minutes ago (a webhook being applied) is the sweep's to leave in flight too.
func TestAReverseLaneBuiltFromDefaultsLeavesInFlightTheRowsTheSweepDoes(t *testing.T) {
	t.Parallel()
	w := newLaneWorld(t, 3)
	ctx := context.Background()
	for _, pi := range w.pis[:2] {
		if err := w.srv.SetStatus(pi, stripe.PaymentIntentStatusSucceeded); err != nil {
			t.Fatal(err)
		}
	}
	// Row 1 changed five minutes ago: past the events lane's minute, within the sweep's grace.
	if _, err := w.pool.Exec(ctx, `UPDATE payments SET updated_at = now() - interval '5 minutes' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	tr := untilEnd(t, w.reverseLane())
	if tr.Verdicts[reconcile.InFlight] != 1 || tr.Verdicts[reconcile.Repairable] != 1 {
		t.Errorf("verdicts %v, want row 1 in flight and row 2's missed success repairable", tr.Verdicts)
	}
	if n := w.count(`SELECT count(*) FROM reconcile_findings WHERE record_id = '1'`); n != 0 {
		t.Errorf("row 1, changed five minutes ago, has %d findings; want none: the sweep's grace holds it in flight", n)
	}
	if n := w.count(`SELECT count(*) FROM reconcile_findings WHERE record_id = '2' AND kind = $1`, stripepolicy.KindMissedSuccess); n != 1 {
		t.Errorf("row 2 has %d missed_success findings, want 1", n)
	}
}

func TestEventsLaneFindsAMissedWebhookInOneRun(t *testing.T) {
	t.Parallel()
	w := newLaneWorld(t, 60)
	ctx := context.Background()
	events := w.eventsLane(nil, 0)

	// The first run anchors at the newest event: older ones are the sweep's to find.
	rep, err := events.RunBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Wrapped || rep.Scanned != 0 || rep.GatewayCalls != 1 {
		t.Fatalf("first run = %+v, want an anchor: one call, nothing judged", rep)
	}

	// Webhooks that never arrived: Stripe changed, our rows did not.
	for i, st := range map[int]stripe.PaymentIntentStatus{3: stripe.PaymentIntentStatusSucceeded, 7: stripe.PaymentIntentStatusCanceled, 20: stripe.PaymentIntentStatusProcessing} {
		if err := w.srv.SetStatus(w.pis[i], st); err != nil {
			t.Fatal(err)
		}
	}
	// An intent of another system: events about it are not ours to judge.
	other := w.srv.AddPaymentIntent(stripetest.PaymentIntent{})
	if err := w.srv.SetStatus(other, stripe.PaymentIntentStatusSucceeded); err != nil {
		t.Fatal(err)
	}

	// Within the settle time nothing is read yet.
	rep, err = events.RunBatch(ctx)
	if err != nil || rep.Scanned != 0 {
		t.Fatalf("run within the settle time = %+v, %v; want nothing judged", rep, err)
	}
	w.later(stripeadapter.DefaultEventSettle + time.Second)
	rep, err = events.RunBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.NewFindings != 2 || rep.NewCommands != 2 || rep.Verdicts[reconcile.InFlight] != 1 || !rep.Wrapped {
		t.Fatalf("run after the settle time = %+v, want 2 findings, 2 commands, 1 in flight, caught up", rep)
	}
	if rep.GatewayCalls != 1 {
		t.Errorf("the run made %d calls for 5 events, want 1", rep.GatewayCalls)
	}
	kinds := w.count(`SELECT count(*) FROM reconcile_findings f JOIN reconcile_outbox o ON o.finding_id = f.id
		WHERE (f.record_id, f.kind, o.event_type) IN (('4', 'missed_success', 'ApplyPaymentSucceeded'), ('8', 'missed_cancel', 'ApplyPaymentCanceled'))`)
	if kinds != 2 {
		t.Errorf("found %d of the 2 expected findings with their commands", kinds)
	}

	// The sweep reaches the same rows later and adds nothing.
	tr := untilEnd(t, w.sweep())
	if tr.Verdicts[reconcile.Repairable] != 2 || tr.NewFindings != 0 || tr.NewCommands != 0 {
		t.Errorf("sweep after the lane = %+v, want the 2 drifts seen, nothing new", tr)
	}
	if n := w.count(`SELECT count(*) FROM reconcile_outbox`); n != 2 {
		t.Errorf("outbox holds %d commands, want 2", n)
	}
	w.noDuplicates()
}

func TestLanesAndSweepTogetherRecordEachDriftOnce(t *testing.T) {
	t.Parallel()
	w := newLaneWorld(t, 400)
	ctx := context.Background()
	if _, err := w.eventsLane(nil, 0).RunBatch(ctx); err != nil { // anchor
		t.Fatal(err)
	}
	want := 0
	for i := 0; i < 400; i += 9 {
		st := stripe.PaymentIntentStatusSucceeded
		if i%2 == 1 {
			st = stripe.PaymentIntentStatusCanceled
		}
		if err := w.srv.SetStatus(w.pis[i], st); err != nil {
			t.Fatal(err)
		}
		want++
	}
	w.srv.AddPaymentIntents([]stripetest.PaymentIntent{{Created: time.Now().Add(-5 * time.Hour)}, {Created: time.Now().Add(-6 * time.Hour)}})
	w.later(2 * time.Minute)

	// Two instances of each lane and two of the sweep, all at once, several rounds.
	runners := []reconcile.BatchRunner{w.sweep(), w.sweep(), w.eventsLane(nil, 50), w.eventsLane(nil, 50), w.reverseLane(), w.reverseLane()}
	var wg sync.WaitGroup
	errs := make(chan error, len(runners))
	for _, r := range runners {
		wg.Go(func() {
			for range 3 {
				for lost := 0; ; {
					rep, err := r.RunBatch(ctx)
					if errors.Is(err, reconcile.ErrConcurrentRun) && lost < 1000 {
						lost++ // the twin committed this step: go on from its position
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					if rep.Wrapped {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := w.count(`SELECT count(*) FROM reconcile_outbox`); n != want {
		t.Errorf("%d commands queued, want %d: one per drift", n, want)
	}
	if n := w.count(`SELECT count(*) FROM reconcile_findings WHERE kind = 'missing_locally'`); n != 2 {
		t.Errorf("%d missing_locally findings, want 2", n)
	}
	if n := w.count(`SELECT count(*) FROM reconcile_findings WHERE kind <> 'missing_locally'`); n != want {
		t.Errorf("%d drift findings, want %d", n, want)
	}
	w.noDuplicates()
}

// crashingSink fails a lane commit the way a crash would: before it (nothing written) or after
// it (written, but the caller never heard).
type crashingSink struct {
	*pgstore.Store[string]
	before, after atomic.Int32 // commits left to fail
}

func (s *crashingSink) CommitLane(ctx context.Context, c reconcile.LaneCommit) (reconcile.CommitResult, error) {
	if s.before.Add(-1) >= 0 {
		return reconcile.CommitResult{}, errors.New("crash before commit")
	}
	res, err := s.Store.CommitLane(ctx, c)
	if err == nil && s.after.Add(-1) >= 0 {
		return reconcile.CommitResult{}, errors.New("crash after commit")
	}
	return res, err
}

func TestEventsLaneCrashRedoesTheStepAndSkipsNothing(t *testing.T) {
	t.Parallel()
	w := newLaneWorld(t, 300)
	ctx := context.Background()
	sink := &crashingSink{Store: w.store}
	events := w.eventsLane(sink, 120)
	if _, err := events.RunBatch(ctx); err != nil { // anchor
		t.Fatal(err)
	}
	for i := range 300 {
		if err := w.srv.SetStatus(w.pis[i], stripe.PaymentIntentStatusSucceeded); err != nil {
			t.Fatal(err)
		}
	}
	w.later(2 * time.Minute)
	anchor := w.position("events")

	// A step cut off mid-feed writes nothing.
	w.srv.Inject(stripetest.ListEvents, stripetest.Fault{Latency: 2 * time.Second, Times: 1})
	cut, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := events.RunBatch(cut)
	cancel()
	if err == nil {
		t.Fatal("a step whose feed call was cut off succeeded")
	}
	// A crash before the commit writes nothing either.
	sink.before.Store(1)
	if _, err := events.RunBatch(ctx); err == nil || !strings.Contains(err.Error(), "crash before commit") {
		t.Fatalf("step with a crash before commit = %v", err)
	}
	if got := w.position("events"); got != anchor {
		t.Fatalf("position after failed steps = %+v, want the anchor %+v", got, anchor)
	}
	if n := w.count(`SELECT count(*) FROM reconcile_findings`); n != 0 {
		t.Fatalf("failed steps left %d findings", n)
	}
	// A crash after a commit: the step is recorded, and the next one goes on from it.
	sink.after.Store(1)
	if _, err := events.RunBatch(ctx); err == nil {
		t.Fatal("step with a crash after commit reported success")
	}
	if n := w.count(`SELECT count(*) FROM reconcile_findings`); n != 120 {
		t.Fatalf("after the first committed step: %d findings, want 120", n)
	}
	untilEnd(t, events)
	if n := w.count(`SELECT count(*) FROM reconcile_findings WHERE kind = 'missed_success'`); n != 300 {
		t.Errorf("%d of 300 missed successes found", n)
	}
	if n := w.count(`SELECT count(*) FROM reconcile_outbox`); n != 300 {
		t.Errorf("%d commands for 300 drifts", n)
	}
	w.noDuplicates()
}

func TestEventsLaneGapsAndRateLimits(t *testing.T) {
	t.Parallel()
	w := newLaneWorld(t, 20)
	ctx := context.Background()
	events := w.eventsLane(nil, 0)

	// Stripe down at the very first step: the failure is recorded and health says so; it does
	// not stand in the way of the first step that succeeds.
	w.srv.Inject(stripetest.ListEvents, stripetest.Fault{Status: http.StatusServiceUnavailable, Times: 1})
	if _, err := events.RunBatch(ctx); err == nil {
		t.Fatal("a step against a 503 succeeded")
	}
	if l := w.laneStatus("events"); !l.Failing() || !strings.Contains(l.LastFailure, "503") {
		t.Fatalf("lane status after a failed step = %+v", l)
	}
	st, err := w.store.Status(ctx, laneJob)
	if err != nil {
		t.Fatal(err)
	}
	if h := reconcile.EvaluateHealth(st, reconcile.HealthPolicy{}); !strings.Contains(h.String(), "lane:events: the last step failed") {
		t.Errorf("health after a failed step = %s", h)
	}
	if _, err := events.RunBatch(ctx); err != nil { // anchor
		t.Fatal(err)
	}
	if l := w.laneStatus("events"); l.Failing() {
		t.Errorf("lane still failing after a step succeeded: %+v", l)
	}
	anchor := w.position("events")

	// A 429: the step is deferred for as long as Stripe asked, and writes nothing.
	w.srv.Inject(stripetest.ListEvents, stripetest.Fault{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"7"}}, Times: 1})
	rep, err := events.RunBatch(ctx)
	if err != nil || !rep.Deferred || rep.RetryAfter != 7*time.Second {
		t.Fatalf("rate-limited step = %+v, %v; want deferred for 7s", rep, err)
	}
	if got := w.position("events"); got != anchor {
		t.Fatalf("a deferred step moved the position from %+v to %+v", anchor, got)
	}
	if l := w.laneStatus("events"); l.GapOpen || !l.GapAt.IsZero() {
		t.Fatalf("a first start reported a gap: %+v", l)
	}

	// Down for 26 days: replaying a partial log would miss changes, so the lane starts again
	// and says so until the sweep has covered every row.
	if err := w.srv.SetStatus(w.pis[0], stripe.PaymentIntentStatusSucceeded); err != nil {
		t.Fatal(err)
	}
	w.later(26 * 24 * time.Hour)
	rep, err = events.RunBatch(ctx)
	if err != nil || rep.Scanned != 0 || !rep.Wrapped {
		t.Fatalf("step with a 26-day-old checkpoint = %+v, %v; want a restart that judges nothing", rep, err)
	}
	l := w.laneStatus("events")
	if !l.GapOpen || !strings.Contains(l.GapReason, "old") {
		t.Fatalf("lane status after the restart = %+v, want an open gap", l)
	}
	st, err = w.store.Status(ctx, laneJob)
	if err != nil {
		t.Fatal(err)
	}
	h := reconcile.EvaluateHealth(st, reconcile.HealthPolicy{})
	if h.OK || !strings.Contains(h.String(), "lane:events") || !strings.Contains(h.String(), "without replay") {
		t.Errorf("health with an open gap = %s", h)
	}
	sweep := w.sweep()
	untilEnd(t, sweep) // the cycle under way at the gap began before it
	if l := w.laneStatus("events"); !l.GapOpen {
		t.Errorf("gap closed after the cycle that was under way at the gap: %+v", l)
	}
	untilEnd(t, sweep)
	if l := w.laneStatus("events"); l.GapOpen {
		t.Errorf("gap still open after a full sweep cycle: %+v", l)
	}
	if n := w.count(`SELECT count(*) FROM reconcile_findings WHERE record_id = '1' AND kind = 'missed_success'`); n != 1 {
		t.Errorf("the sweep found the change made during the gap %d times, want once", n)
	}

	// A checkpoint event Stripe no longer has, on a quiet account whose checkpoint time is
	// recent: the lane reads by time from there, no gap and nothing skipped.
	gapAt := w.laneStatus("events").GapAt
	if _, err := w.pool.Exec(ctx, `UPDATE reconcile_lanes SET position = $1 WHERE lane = 'events'`,
		fmt.Sprintf(`{"after":"evt_gone","until":%d}`, w.now().Add(-time.Minute).Unix())); err != nil {
		t.Fatal(err)
	}
	if err := w.srv.SetStatus(w.pis[5], stripe.PaymentIntentStatusCanceled); err != nil {
		t.Fatal(err)
	}
	w.later(2 * time.Minute)
	rep, err = events.RunBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.NewCommands != 1 {
		t.Errorf("step after a lost checkpoint event = %+v, want row 6's missed cancel found", rep)
	}
	if l := w.laneStatus("events"); !l.GapAt.Equal(gapAt) {
		t.Errorf("a lost checkpoint event with a recent checkpoint time recorded a gap: %+v", l)
	}

	// A position that is not the feed's is an error, not a silent restart.
	if _, err := w.pool.Exec(ctx, `UPDATE reconcile_lanes SET position = 'garbage' WHERE lane = 'events'`); err != nil {
		t.Fatal(err)
	}
	if _, err := events.RunBatch(ctx); err == nil || !strings.Contains(err.Error(), "not one of this feed's") {
		t.Errorf("step from a garbage position = %v", err)
	}
}

func TestReverseScanOverATierAndResolvedOrphans(t *testing.T) {
	t.Parallel()
	w := newLaneWorld(t, 120)
	ctx := context.Background()
	// Half the rows are paid and in sync: they belong to the cold tier, not the hot store's.
	if _, err := w.pool.Exec(ctx, `UPDATE payments SET status = 'paid' WHERE id % 2 = 0`); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 120; i += 2 {
		if err := w.srv.SetStatusAt(w.pis[i], stripe.PaymentIntentStatusSucceeded, time.Now().Add(-90*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	hot, err := pgstore.New(w.pool, pgstore.Config{Table: "payments", Filter: pgstore.Filter{AnyOf: [][]pgstore.Cond{{{Column: "status", Op: pgstore.In, Value: []string{"pending"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	ours := w.srv.AddPaymentIntent(stripetest.PaymentIntent{Created: time.Now().Add(-3 * time.Hour)})
	w.srv.AddPaymentIntent(stripetest.PaymentIntent{Created: time.Now().Add(-3 * time.Hour), Metadata: map[string]string{"source": "invoice"}})
	feed, err := w.gw.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.PaymentIntent]{Now: w.now, Include: func(pi *stripe.PaymentIntent) bool { return pi.Metadata["source"] != "invoice" }})
	if err != nil {
		t.Fatal(err)
	}
	reverse, err := reconcile.NewLane(reconcile.LaneConfig[string, *stripe.PaymentIntent]{
		Job: laneJob, Lane: "reverse", Feed: feed, Matcher: hot, Sink: hot,
		Classifier: stripepolicy.PaymentIntentPolicy(), ReportMissing: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	tr := untilEnd(t, reverse)
	// The cold tier's rows exist, elsewhere: not missing. The invoice's intent is not ours.
	if tr.Scanned != 61 || tr.Verdicts[reconcile.NeedsReview] != 1 {
		t.Fatalf("pass over the hot tier = %+v, want the 60 hot rows judged and one orphan", tr)
	}
	var id int64
	if err := w.pool.QueryRow(ctx, `SELECT id FROM reconcile_findings WHERE kind = 'missing_locally' AND record_id = $1`, ours).Scan(&id); err != nil {
		t.Fatalf("the orphan's finding: %v", err)
	}
	if n := w.count(`SELECT count(*) FROM reconcile_findings`); n != 1 {
		t.Errorf("%d findings, want only the orphan's", n)
	}
	// Only the hot rows were verified.
	if n := w.count(`SELECT count(*) FROM reconcile_observations`); n != 60 {
		t.Errorf("%d rows verified, want the 60 hot ones", n)
	}

	// A person decides the orphan is fine: later passes leave it resolved.
	if err := hot.ResolveFinding(ctx, id, reconcile.Resolution{As: reconcile.ResolutionAccepted, By: "alice", Note: "test order"}); err != nil {
		t.Fatalf("resolve the orphan's finding: %v", err)
	}
	tr = untilEnd(t, reverse)
	if tr.NewFindings != 0 {
		t.Errorf("a pass after the orphan was resolved opened %d findings", tr.NewFindings)
	}
	if n := w.count(`SELECT count(*) FROM reconcile_findings WHERE resolved_at IS NULL`); n != 0 {
		t.Errorf("%d findings open after the orphan was resolved", n)
	}
}

func TestEventsLaneDoesNotCountSnapshotsAsVerifications(t *testing.T) {
	t.Parallel()
	w := newLaneWorld(t, 30)
	ctx := context.Background()
	events := w.eventsLane(nil, 0)
	if _, err := events.RunBatch(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := w.srv.SetStatus(w.pis[i], stripe.PaymentIntentStatusProcessing); err != nil {
			t.Fatal(err)
		}
	}
	w.later(2 * time.Minute)
	rep, err := events.RunBatch(ctx)
	if err != nil || rep.Scanned != 10 {
		t.Fatalf("step = %+v, %v; want 10 intents judged", rep, err)
	}
	if n := w.count(`SELECT count(*) FROM reconcile_observations`); n != 0 {
		t.Errorf("an event's snapshot was recorded as %d verifications", n)
	}
}

func TestEventsLaneJudgesARowTouchedAfterTheEventAgainstThePresent(t *testing.T) {
	t.Parallel()
	w := newLaneWorld(t, 10)
	ctx := context.Background()
	feed, err := w.gw.EventsFeed(stripeadapter.EventsOptions{Now: w.now})
	if err != nil {
		t.Fatal(err)
	}
	lane := func(current bool) *reconcile.Lane[string, *stripe.PaymentIntent] {
		cfg := reconcile.LaneConfig[string, *stripe.PaymentIntent]{Job: laneJob, Lane: "events", Feed: feed, Matcher: w.store, Sink: w.store,
			Classifier: stripepolicy.PaymentIntentPolicy()}
		if current {
			cfg.Current = w.gw
		}
		l, err := reconcile.NewLane(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if _, err := lane(false).RunBatch(ctx); err != nil { // anchor
		t.Fatal(err)
	}
	// The success webhook of rows 1 and 2 is lost; a moment later something unrelated touches
	// both rows (a receipt number, say), two minutes before the lane runs.
	for _, i := range []int{0, 1} {
		if err := w.srv.SetStatusAt(w.pis[i], stripe.PaymentIntentStatusSucceeded, time.Now().Add(-3*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.pool.Exec(ctx, `UPDATE payments SET updated_at = now() - interval '2 minutes' WHERE id IN (1, 2)`); err != nil {
		t.Fatal(err)
	}
	// Row 3's webhook arrived and was applied: it agrees with its event, and costs no call.
	if err := w.srv.SetStatusAt(w.pis[2], stripe.PaymentIntentStatusSucceeded, time.Now().Add(-3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.pool.Exec(ctx, `UPDATE payments SET status = 'paid', updated_at = now() - interval '2 minutes' WHERE id = 3`); err != nil {
		t.Fatal(err)
	}
	// Without Current the event's state says nothing about a row changed since: in flight.
	// (The step is not committed, so the next one reads the same events.)
	crashing := &crashingSink{Store: w.store}
	crashing.before.Store(1)
	without, err := reconcile.NewLane(reconcile.LaneConfig[string, *stripe.PaymentIntent]{Job: laneJob, Lane: "events", Feed: feed,
		Matcher: w.store, Sink: crashing, Classifier: stripepolicy.PaymentIntentPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := without.RunBatch(ctx); err == nil || rep.Verdicts[reconcile.InFlight] != 3 {
		t.Fatalf("step without Current = %+v, %v; want the three rows in flight (and the crash)", rep, err)
	}
	rep, err := lane(true).RunBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.NewCommands != 2 || rep.Verdicts[reconcile.InFlight] != 1 {
		t.Fatalf("step with Current = %+v, want rows 1 and 2 judged against the present (2 commands), row 3 left alone", rep)
	}
	if rep.GatewayCalls != 3 {
		t.Errorf("the step made %d calls, want 1 list and 2 retrieves (none for row 3)", rep.GatewayCalls)
	}
	if n := w.count(`SELECT count(*) FROM reconcile_observations`); n != 2 {
		t.Errorf("%d rows recorded as verified, want the 2 judged against their present state", n)
	}
}
