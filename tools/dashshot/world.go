package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/prommetrics"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// The world is one external account (a fake gateway with latency, a 429 burst and an outage)
// called by two jobs over two regional tables, through one shared limiter; an events lane on
// the first; a dispatcher that applies repairs, with a pause and a repair that can never apply;
// and a host that keeps writing rows, missing a webhook now and then.
const (
	rowsPerTable = 1500
	batchSize    = 100
	grace        = 90 * time.Second
	lagSLO       = 5 * time.Minute
	staleAfter   = 4 * time.Minute
)

var jobs = []string{"payments-eu", "payments-us"}

// phases of the run, as fractions of its duration.
type phases struct{ burst, burstEnd, pause, pauseEnd, review, outage, outageEnd, review2 float64 }

var timeline = phases{burst: 0.18, burstEnd: 0.26, pause: 0.30, pauseEnd: 0.42, review: 0.45, outage: 0.52, outageEnd: 0.62, review2: 0.85}

// table is one job's host table and its store.
type table struct {
	job, name string
	store     *pgstore.Store[string]
	next      atomic.Int64 // the next row id
}

type world struct {
	pool     *pgxpool.Pool
	tables   []*table
	gw       *chaosGateway
	events   *eventLog
	metrics  *prommetrics.Metrics
	limiter  *reconcile.AdaptiveLimiter
	paused   atomic.Bool // the dispatcher, during a "deploy"
	dispatch *pgoutbox.Dispatcher
	log      *slog.Logger
	rng      *rand.Rand
	rngMu    sync.Mutex
	duration time.Duration
}

func newWorld(ctx context.Context, pool *pgxpool.Pool, duration time.Duration, log *slog.Logger) (*world, error) {
	w := &world{pool: pool, gw: &chaosGateway{inner: reconciletest.NewGateway(map[string]string{}), latency: 20 * time.Millisecond},
		events: &eventLog{}, log: log, rng: rand.New(rand.NewPCG(19, 2)), duration: duration}
	var err error
	w.limiter, err = reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{Rate: 60, Burst: 6, RecoverEvery: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	var monitored []reconcile.MonitorJob
	for _, job := range jobs {
		t := &table{job: job, name: "payments_" + job[len("payments-"):]}
		ident := pgx.Identifier{t.name}.Sanitize()
		if _, err := pool.Exec(ctx, `CREATE TABLE `+ident+` (
			id bigint PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
			created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return nil, err
		}
		t.store, err = pgstore.New(pool, pgstore.Config{Table: t.name, StaleAfter: staleAfter})
		if err != nil {
			return nil, err
		}
		if err := pgstore.Migrate(ctx, pool, t.store.Tables()); err != nil {
			return nil, err
		}
		// The backlog: rows written before the reconciler first ran, most of them settled.
		for range rowsPerTable {
			local, external := "paid", "succeeded"
			switch r := w.rand(); {
			case r < 0.02:
				local = "pending" // a webhook missed before the run: a repair
			case r < 0.03:
				external = "canceled" // paid here, not at the processor: a review
			}
			if err := w.insert(ctx, t, local, external, 3*time.Minute); err != nil {
				return nil, err
			}
		}
		w.tables = append(w.tables, t)
		monitored = append(monitored, reconcile.MonitorJob{Name: job, Status: t.store, Policy: reconcile.HealthPolicy{LagSLO: lagSLO}})
	}
	monitor, err := reconcile.NewMonitor(reconcile.MonitorConfig{Jobs: monitored})
	if err != nil {
		return nil, err
	}
	w.metrics, err = prommetrics.New(prommetrics.Options{Monitor: monitor,
		Kinds:   []string{"missed_success", "paid_locally_not_externally"}, // reconciletest.Classifier's
		Outbox:  pgoutbox.Outbox{DB: pool, Tables: w.tables[0].store.Tables()},
		Limiter: w.limiter})
	return w, err
}

func (w *world) rand() float64 {
	w.rngMu.Lock()
	defer w.rngMu.Unlock()
	return w.rng.Float64()
}

// insert writes a local row, created and last changed age ago by the database's clock, and the
// external object it refers to.
func (w *world) insert(ctx context.Context, t *table, local, external string, age time.Duration) error {
	id := t.next.Add(1)
	ext := fmt.Sprintf("pi_%s_%d", t.name[len("payments_"):], id)
	_, err := w.pool.Exec(ctx, `INSERT INTO `+pgx.Identifier{t.name}.Sanitize()+
		` (id, external_id, status, created_at, updated_at) VALUES ($1, $2, $3, now() - make_interval(secs => $4), now() - make_interval(secs => $4))`,
		id, ext, local, age.Seconds())
	w.gw.inner.Set(ext, external)
	return err
}

// run runs the jobs, the lane, the dispatcher and the host until ctx is done.
func (w *world) run(ctx context.Context) error {
	var runnerJobs []reconcile.RunnerJob
	for _, t := range w.tables {
		r, err := reconcile.New(reconcile.Config[string, string]{Job: t.job, Source: t.store, Sink: t.store,
			Gateway: w.gw, Classifier: reconciletest.Classifier(), BatchSize: batchSize, Grace: grace,
			Limiter: w.limiter, Concurrency: 4, Observer: w.metrics})
		if err != nil {
			return err
		}
		runnerJobs = append(runnerJobs, reconcile.RunnerJob{Name: t.job, Batches: r, Interval: 3 * time.Second,
			IdleAfterWrap: 30 * time.Second})
	}
	lane, err := reconcile.NewLane(reconcile.LaneConfig[string, string]{Job: w.tables[0].job, Lane: "events",
		Feed: w.events, Matcher: w.tables[0].store, Sink: w.tables[0].store, Classifier: reconciletest.Classifier(),
		Observer: w.metrics})
	if err != nil {
		return err
	}
	runnerJobs = append(runnerJobs, reconcile.RunnerJob{Name: "payments-eu events", Batches: lane, Interval: 5 * time.Second,
		IdleAfterWrap: 5 * time.Second})
	runner, err := reconcile.NewRunner(reconcile.RunnerConfig{Jobs: runnerJobs, Logger: w.log})
	if err != nil {
		return err
	}
	d, err := w.dispatcher()
	if err != nil {
		return err
	}
	w.dispatch = d
	// Stop, below, is the graceful end: batches run on a context that ctx does not cancel.
	if err := runner.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { w.work(ctx, d) })
	wg.Go(func() { w.host(ctx) })
	wg.Go(func() { w.script(ctx) })
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = runner.Stop(stopCtx)
	wg.Wait()
	return err
}

// script plays the timeline: a 429 burst, a dispatcher paused, a review, an outage.
func (w *world) script(ctx context.Context) {
	start := time.Now()
	at := func(f float64) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Until(start.Add(time.Duration(f * float64(w.duration))))):
			return true
		}
	}
	steps := []struct {
		at   float64
		what string
		do   func()
	}{
		{timeline.burst, "429 burst", func() { w.gw.mode.Store(modeThrottled) }},
		{timeline.burstEnd, "429 burst over", func() { w.gw.mode.Store(modeNormal) }},
		{timeline.pause, "dispatcher paused", func() { w.paused.Store(true) }},
		{timeline.pauseEnd, "dispatcher resumed", func() { w.paused.Store(false) }},
		{timeline.review, "reviewer resolves payments-eu", func() { w.review(ctx, w.tables[0]) }},
		{timeline.outage, "outage", func() { w.gw.mode.Store(modeDown); w.events.down.Store(true) }},
		{timeline.outageEnd, "outage over", func() { w.gw.mode.Store(modeNormal); w.events.down.Store(false) }},
		{timeline.review2, "reviewer resolves payments-eu again", func() { w.review(ctx, w.tables[0]) }},
	}
	for _, s := range steps {
		if !at(s.at) {
			return
		}
		w.log.Info("dashshot: "+s.what, "at", time.Since(start).Round(time.Second))
		s.do()
	}
}

// host writes new payments, settles most of them by webhook, and misses a few webhooks, which
// the events lane or the sweep finds.
func (w *world) host(ctx context.Context) {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, t := range w.tables {
			for range 15 {
				if err := w.insert(ctx, t, "pending", "processing", 0); err != nil && ctx.Err() == nil {
					w.log.Error("dashshot: insert", "err", err)
				}
			}
			// The payments of a minute ago succeed; the host hears of most of them.
			rows, err := w.pool.Query(ctx, `SELECT id, external_id FROM `+pgx.Identifier{t.name}.Sanitize()+
				` WHERE status = 'pending' AND created_at < now() - interval '50 seconds' AND created_at > now() - interval '65 seconds'`)
			if err != nil {
				continue
			}
			type row struct {
				id  int64
				ext string
			}
			settled, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
				var x row
				return x, r.Scan(&x.id, &x.ext)
			})
			if err != nil {
				continue
			}
			for _, r := range settled {
				w.gw.inner.Set(r.ext, "succeeded")
				if t == w.tables[0] {
					w.events.add(r.ext, "succeeded")
				}
				if w.rand() < 0.12 {
					continue // the webhook never came
				}
				_, _ = w.pool.Exec(ctx, `UPDATE `+pgx.Identifier{t.name}.Sanitize()+` SET status = 'paid', updated_at = now() WHERE id = $1`, r.id)
			}
			// Now and then a refund or dispute the host never recorded.
			if w.rand() < 0.1 {
				var ext string
				if err := w.pool.QueryRow(ctx, `SELECT external_id FROM `+pgx.Identifier{t.name}.Sanitize()+
					` WHERE status = 'paid' ORDER BY random() LIMIT 1`).Scan(&ext); err == nil {
					w.gw.inner.Set(ext, "canceled")
				}
			}
		}
	}
}

// review is a person's sitting in the console: every open finding of t for review is
// resolved, and every repair that went dead is applied by hand and its finding resolved (the
// dead command stays until someone discards it).
func (w *world) review(ctx context.Context, t *table) {
	open, err := t.store.ListFindings(ctx, reconcile.FindingQuery{Job: t.job, Limit: 1000})
	if err != nil {
		w.log.Error("dashshot: review", "err", err)
		return
	}
	for _, f := range open {
		if f.Kind == "paid_locally_not_externally" {
			_ = t.store.ResolveFinding(ctx, f.ID, reconcile.Resolution{As: "fixed", By: "ada", Note: "refunded by hand"})
		}
	}
	dead, err := w.dispatch.DeadCommands(ctx, 0, 1000)
	if err != nil {
		w.log.Error("dashshot: review", "err", err)
		return
	}
	for _, c := range dead {
		id, err := strconv.ParseInt(c.AggregateID, 10, 64)
		if c.AggregateType != t.name || c.FindingID == 0 || err != nil {
			continue
		}
		if _, err := w.pool.Exec(ctx, `UPDATE `+pgx.Identifier{t.name}.Sanitize()+
			` SET status = 'paid', updated_at = now() WHERE id = $1 AND status = 'pending'`, id); err != nil {
			w.log.Error("dashshot: review", "err", err)
			continue
		}
		_ = t.store.ResolveFinding(ctx, c.FindingID, reconcile.Resolution{As: "fixed", By: "ada", Note: "applied by hand"})
	}
}

// errDisputed is the repair that can never apply: the payment is disputed.
var errDisputed = errors.New("payment is disputed: apply by hand")

func (w *world) dispatcher() (*pgoutbox.Dispatcher, error) {
	d, err := pgoutbox.NewDispatcher(w.pool, pgoutbox.Config{Tables: w.tables[0].store.Tables(), Observer: w.metrics, MaxAttempts: 3})
	if err != nil {
		return nil, err
	}
	byName := map[string]*table{}
	for _, t := range w.tables {
		byName[t.name] = t
	}
	return d, d.Handle("ApplyPaymentSucceeded", func(ctx context.Context, tx pgx.Tx, del pgoutbox.Delivery) error {
		t, ok := byName[del.AggregateType]
		if !ok {
			return pgoutbox.Permanent(fmt.Errorf("no table %q", del.AggregateType))
		}
		id, err := strconv.ParseInt(del.AggregateID, 10, 64)
		if err != nil {
			return pgoutbox.Permanent(err)
		}
		if id%23 == 0 {
			return pgoutbox.Permanent(errDisputed)
		}
		if id%5 == 0 && del.Failures == 0 {
			return errors.New("lock timeout") // retried
		}
		if _, err := tx.Exec(ctx, `UPDATE `+pgx.Identifier{t.name}.Sanitize()+
			` SET status = 'paid', updated_at = now() WHERE id = $1 AND status = 'pending'`, id); err != nil {
			return err
		}
		return t.store.ResolveFindingIn(ctx, tx, del.FindingID, reconcile.Resolution{As: "fixed", By: reconcile.ResolvedByReconciler})
	})
}

// work works the outbox every two seconds unless paused.
func (w *world) work(ctx context.Context, d *pgoutbox.Dispatcher) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if w.paused.Load() {
			continue
		}
		if _, err := d.Work(ctx); err != nil && ctx.Err() == nil {
			w.log.Error("dashshot: dispatch", "err", err)
		}
	}
}

const (
	modeNormal int32 = iota
	modeThrottled
	modeDown
)

// chaosGateway is the external account: the fake gateway with latency, answering 429 to one
// call in forty while throttled and 503 to every call while down.
type chaosGateway struct {
	inner   *reconciletest.Gateway
	latency time.Duration
	mode    atomic.Int32
	calls   atomic.Int64
}

func (g *chaosGateway) Fetch(ctx context.Context, id string) (string, error) {
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-time.After(g.latency):
	}
	n := g.calls.Add(1)
	switch g.mode.Load() {
	case modeThrottled:
		if n%40 == 0 {
			return "", &reconcile.RateLimitError{RetryAfter: 2 * time.Second}
		}
	case modeDown:
		return "", fmt.Errorf("dashshot: 503 from the processor: %w", reconcile.ErrUnavailable)
	}
	return g.inner.Fetch(ctx, id)
}

// eventLog is the account's event feed: the position is an index into it.
type eventLog struct {
	mu     sync.Mutex
	events []reconcile.FeedObject[string]
	down   atomic.Bool
}

func (l *eventLog) add(id, state string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, reconcile.FeedObject[string]{ExternalID: id, Object: state, ObservedAt: time.Now()})
}

func (l *eventLog) Next(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[string], error) {
	if err := wait(ctx); err != nil {
		return reconcile.FeedPage[string]{}, err
	}
	if l.down.Load() {
		return reconcile.FeedPage[string]{}, fmt.Errorf("dashshot: events: %w", reconcile.ErrUnavailable)
	}
	from := 0
	if pos != "" {
		var err error
		if from, err = strconv.Atoi(pos); err != nil {
			return reconcile.FeedPage[string]{}, err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	to := min(from+50, len(l.events))
	// One object per external id in a page, as the Feed contract asks: the latest wins.
	seen := map[string]int{}
	var objs []reconcile.FeedObject[string]
	for _, e := range l.events[from:to] {
		if i, ok := seen[e.ExternalID]; ok {
			objs[i] = e
			continue
		}
		seen[e.ExternalID] = len(objs)
		objs = append(objs, e)
	}
	return reconcile.FeedPage[string]{Objects: objs, Next: strconv.Itoa(to), End: to == len(l.events)}, nil
}
