package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// The churn subcommand runs the engine on a fixed schedule, in simulated time, over a payments
// table that grows, shrinks and changes between batches, behind a gateway that fails 5% of its
// answers and rate-limits in bursts, and checks what PlanSchedule and the health checks say
// against what happened to every row.
//
// # Simulated time
//
// The engine's times (grace, lag, verified_at, cycle_started_at, findings) are the database's
// now(). The benchmark replaces that clock for its own connections only: its schema holds a
// function now() returning current_setting('bench.now'), and its pool's connections have
// search_path = <schema>, pg_catalog, so that the unqualified now() of pgstore's statements
// (and of the reconciler tables' column defaults, created through that pool) is the schema's,
// not pg_catalog's. Every connection is given the simulated time (set_config) when it is
// acquired from the pool. Nothing else is shifted or converted: the database computes grace,
// lag and cycle times itself, in simulated time.
//
// Time starts at 2026-01-01 00:00 UTC, when every loaded row was created. Batch k runs at
// k/R hours (R = -per-hour), so the first at 1/R: a scheduler that starts with the job. After
// each batch, at the batch's time, the store's Status is judged by reconcile.EvaluateHealth,
// and then rows are inserted, deleted and updated (G, -deletes and -updates rows per simulated
// hour, R-th parts of them each time, fractions carried over). The next batch runs 1/R later;
// 1/R must exceed the grace period, so that no changed row is still in grace at its batch.
//
// # What is measured
//
// The gateway (in-process, no HTTP, one call at a time) logs every call: the row and the
// simulated time. A call answered 429 is not an ask; any other answer is (an Unavailable one
// included), and a row answered with a PaymentIntent is verified at that time. From that log:
//   - a cycle starts when the previous one wrapped (at 0 for the first) and ends at the batch
//     that wraps; its N is the rows present at its first committed read (the cycle's
//     high-water mark: ids up to the largest present then);
//   - a row present for a whole cycle (in N and not deleted before the cycle ended) that the
//     gateway was not asked about in that cycle is skipped_unasked; one asked but only ever
//     answered Unavailable in it is an unverified_row (not verified: reported, not hidden);
//     for the others, time to verify is its verification time minus the cycle's start;
//   - predicted is PlanSchedule's CycleTime for the cycle's N, B, R and G; ratio is the
//     cycle's longest time to verify over it, and the JSON's top-level figures are those of
//     the cycle with the highest ratio (every cycle is listed under "cycles");
//   - after each batch, the lag is also computed from the log (max over present rows of now
//     minus the last verification, else creation); a health check that said OK while that lag
//     exceeded the SLO is false_healthy. The stale_findings check is off: no dispatcher runs,
//     so repair findings stay open and would fail every check whatever the lag. max_lag_s is
//     the longest lag the log saw, beside PlanSchedule's MaxLag (plan_max_lag_s): the plan
//     does not count rows answered Unavailable, which wait for the next cycle.
//
// At the end the observations table is compared with the log: every present row's verified_at
// must be its last verification in the log (observation_mismatches).

// churnEpoch is simulated time zero: the loaded rows' created_at (paymentsDDL's default).
var churnEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// churnOptions configures one churn run.
type churnOptions struct {
	Rows, Batch int
	// PerHour is R, batches per simulated hour.
	PerHour float64
	// Growth (G), Deletes and Updates are rows per simulated hour.
	Growth, Deletes, Updates float64
	// Unavailable is the share of asks answered with an error wrapping ErrUnavailable.
	Unavailable float64
	// BurstEvery is the mean simulated time between 429 bursts, at the schedule's call rate
	// (B×R calls an hour); zero means none. A burst starts at a random call and answers 429
	// to every call for BurstLen of simulated time.
	BurstEvery, BurstLen time.Duration
	LagSLO, Grace        time.Duration
	// Cycles is the number of cycles to complete.
	Cycles   int
	Seed     uint64
	Progress io.Writer
}

// churnCycle is one completed cycle.
type churnCycle struct {
	Cycle            int     `json:"cycle"`
	Rows             int     `json:"rows"` // N: present at the cycle's first committed read
	Batches          int     `json:"batches"`
	Deferred         int     `json:"deferred"`
	PredictedS       float64 `json:"predicted_s"`
	PlanMaxLagS      float64 `json:"plan_max_lag_s"`
	MeasuredS        float64 `json:"measured_s"` // from the previous wrap to this one
	MaxTimeToVerifyS float64 `json:"max_time_to_verify_s"`
	Ratio            float64 `json:"ratio"`
	Unverified       int     `json:"unverified_rows"`
	Skipped          int     `json:"skipped_unasked"`
}

// churnResult is the churn subcommand's JSON line.
type churnResult struct {
	Clock          string  `json:"clock"`
	Rows           int     `json:"rows"`
	Batch          int     `json:"batch"`
	BatchesPerHour float64 `json:"batches_per_hour"`
	GrowthPerHour  float64 `json:"growth_per_hour"`
	DeletesPerHour float64 `json:"deletes_per_hour"`
	UpdatesPerHour float64 `json:"updates_per_hour"`
	Unavailable    float64 `json:"unavailable_share"`
	BurstEveryH    float64 `json:"burst_every_h"`
	BurstLenH      float64 `json:"burst_len_h"`
	LagSLOH        float64 `json:"lag_slo_h"`
	Seed           uint64  `json:"seed"`

	// The cycle with the highest ratio.
	PredictedCycleS  float64 `json:"predicted_cycle_s"`
	MaxTimeToVerifyS float64 `json:"max_time_to_verify_s"`
	Ratio            float64 `json:"ratio"`
	WorstCycle       int     `json:"worst_cycle"`
	// Summed over the cycles.
	UnverifiedRows int `json:"unverified_rows"`
	// NeverVerified counts the loaded rows, still present at the end, that no cycle
	// verified: every ask about them was answered Unavailable.
	NeverVerified  int `json:"never_verified_rows"`
	SkippedUnasked int `json:"skipped_unasked"`
	// AskedBeyondEnd counts asks about rows that arrived after their cycle's first read.
	AskedBeyondEnd int `json:"asked_beyond_end"`

	HealthChecks  int `json:"health_checks"`
	HealthFailing int `json:"health_failing"`
	// LagPastSLO counts the checks at which, by the gateway's log, some row was past the SLO;
	// MaxLagS is the longest lag the log saw at a check. PlanMaxLagS is the longest MaxLag
	// PlanSchedule gave for a cycle, PlanMeetsSLO whether it met the SLO for every cycle.
	LagPastSLO   int     `json:"lag_past_slo"`
	MaxLagS      float64 `json:"max_lag_s"`
	PlanMaxLagS  float64 `json:"plan_max_lag_s"`
	PlanMeetsSLO bool    `json:"plan_meets_slo"`
	FalseHealthy int     `json:"false_healthy"`
	// LagMismatches counts the checks at which the store's lag and the log's differ by more
	// than a second; ObservationMismatches the rows whose verified_at differs from the log.
	LagMismatches         int `json:"lag_mismatches"`
	ObservationMismatches int `json:"observation_mismatches"`

	CyclesCompleted    int     `json:"cycles_completed"`
	Batches            int     `json:"batches"`
	DeferredBatches    int     `json:"deferred_batches"`
	RateLimitedBatches int     `json:"rate_limited_batches"`
	UnavailableBatches int     `json:"unavailable_batches"`
	GatewayCalls       int64   `json:"gateway_calls"`
	Calls429           int64   `json:"calls_429"`
	UnavailableAnswers int64   `json:"unavailable_answers"`
	Asks               int64   `json:"asks"`
	CallsPerRow        float64 `json:"calls_per_row"`
	Inserted           int     `json:"inserted"`
	Deleted            int     `json:"deleted"`
	Updated            int     `json:"updated"`
	FinalRows          int     `json:"final_rows"`
	SimulatedHours     float64 `json:"simulated_h"`
	Seconds            float64 `json:"seconds"`

	Cycles []churnCycle `json:"cycles"`
}

// churnCommand is the churn subcommand.
func churnCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("churn", flag.ContinueOnError)
	o := churnFlags(fs)
	o.Progress = stderr
	schema := fs.String("schema", "bench_churn", "schema to drop, recreate and work in")
	if err := parseFlags(fs, args, stderr,
		"usage: go run ./tools/bench churn [flags]",
		"Runs batches on a fixed schedule in simulated time (the schema's now()) over a payments table",
		"with inserts, deletes and updates between batches, behind an in-process gateway with Unavailable",
		"answers and 429 bursts; compares the measured time to verify each row with PlanSchedule and",
		"the health checks with the lag per row. Database: $DATABASE_URL.",
	); err != nil {
		return err
	}
	pool, drop, err := benchSchema(ctx, *schema, stderr)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer drop()
	res, err := runChurn(ctx, pool, *schema, *o)
	if err != nil {
		return err
	}
	return emit(stdout, res)
}

// churnFlags registers the churn options' flags, with their defaults, on fs.
func churnFlags(fs *flag.FlagSet) *churnOptions {
	o := &churnOptions{}
	fs.IntVar(&o.Rows, "rows", 100000, "payments rows loaded at the start")
	fs.IntVar(&o.Batch, "batch", 2500, "engine batch size (B)")
	fs.Float64Var(&o.PerHour, "per-hour", 4, "batches per simulated hour (R)")
	fs.Float64Var(&o.Growth, "growth", 1000, "rows inserted per simulated hour (G)")
	fs.Float64Var(&o.Deletes, "deletes", 100, "rows deleted per simulated hour")
	fs.Float64Var(&o.Updates, "updates", 500, "rows updated (status and updated_at) per simulated hour")
	fs.Float64Var(&o.Unavailable, "unavailable", 0.05, "share of asks answered Unavailable")
	fs.DurationVar(&o.BurstEvery, "burst-every", 12*time.Hour, "mean simulated time between 429 bursts (0: none)")
	fs.DurationVar(&o.BurstLen, "burst-len", 20*time.Minute, "simulated time a 429 burst lasts")
	fs.DurationVar(&o.LagSLO, "slo", 30*time.Hour, "lag SLO of the health checks")
	fs.DurationVar(&o.Grace, "grace", reconcile.DefaultGrace, "engine grace period (must be shorter than 1/R)")
	fs.IntVar(&o.Cycles, "cycles", 4, "cycles to complete")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the gateway's faults and of the rows changed")
	return o
}

func (o churnOptions) check() error {
	step := time.Duration(float64(time.Hour) / o.PerHour)
	switch {
	case o.Rows <= 0 || o.Batch <= 0 || o.Cycles <= 0:
		return errors.New("bench: churn: -rows, -batch and -cycles must be positive")
	case !(o.PerHour > 0) || math.IsInf(o.PerHour, 0):
		return errors.New("bench: churn: -per-hour must be positive")
	case o.Growth < 0 || o.Deletes < 0 || o.Updates < 0 || o.BurstEvery < 0 || o.BurstLen < 0:
		return errors.New("bench: churn: -growth, -deletes, -updates, -burst-every and -burst-len must not be negative")
	case o.Unavailable < 0 || o.Unavailable >= 1:
		return errors.New("bench: churn: -unavailable must be in [0, 1)")
	case o.Grace >= step:
		return fmt.Errorf("bench: churn: -grace %s must be shorter than the time between batches, %s", o.Grace, step)
	case o.LagSLO <= 0:
		return errors.New("bench: churn: -slo must be positive")
	}
	return nil
}

// simClock is the simulated time, given to every connection of the clocked pool.
type simClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *simClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// clockedPool returns a pool like pool whose connections' now() is clock's: schema must hold
// the function now() that clockFunction creates.
func clockedPool(ctx context.Context, pool *pgxpool.Pool, schema string, clock *simClock) (*pgxpool.Pool, error) {
	cfg := pool.Config() // a copy
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize() + ", pg_catalog"
	cfg.MaxConns = 4
	prev := cfg.PrepareConn
	cfg.PrepareConn = func(ctx context.Context, c *pgx.Conn) (bool, error) {
		if prev != nil {
			if ok, err := prev(ctx, c); !ok || err != nil {
				return ok, err
			}
		}
		if _, err := c.Exec(ctx, "SELECT set_config('bench.now', $1, false)", clock.Now().Format(time.RFC3339Nano)); err != nil {
			return false, fmt.Errorf("bench: set the simulated clock: %w", err)
		}
		return true, nil
	}
	cp, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: clocked pool: %w", err)
	}
	return cp, nil
}

// clockFunction is the schema's now(): the simulated time. STABLE and a single expression, so
// the planner inlines it as pg_catalog.now() would be evaluated: cheaply, per statement.
const clockFunction = `CREATE FUNCTION %s.now() RETURNS timestamptz LANGUAGE sql STABLE
	AS $$ SELECT current_setting('bench.now')::timestamptz $$`

// churnRows is the benchmark's own account of the rows, indexed by id.
type churnRows struct {
	created    []float64 // simulated hours
	verifiedAt []float64 // last verification, NaN if never
	askedIn    []int32   // the last cycle that asked about the row
	verifiedIn []int32   // the last cycle that verified it
	deleted    []bool
	live       []int64 // present ids, in no order
	pos        []int32 // index in live, -1 if deleted
}

func (r *churnRows) add(id int64, at float64) {
	for int64(len(r.created)) <= id {
		r.created = append(r.created, 0)
		r.verifiedAt = append(r.verifiedAt, math.NaN())
		r.askedIn = append(r.askedIn, 0)
		r.verifiedIn = append(r.verifiedIn, 0)
		r.deleted = append(r.deleted, true)
		r.pos = append(r.pos, -1)
	}
	r.created[id], r.deleted[id] = at, false
	r.pos[id] = int32(len(r.live))
	r.live = append(r.live, id)
}

func (r *churnRows) remove(id int64) {
	i := r.pos[id]
	last := r.live[len(r.live)-1]
	r.live[i], r.pos[last] = last, i
	r.live = r.live[:len(r.live)-1]
	r.pos[id], r.deleted[id] = -1, true
}

// lag is the longest a present row has gone unverified at now (simulated hours).
func (r *churnRows) lag(now float64) float64 {
	worst := 0.0
	for _, id := range r.live {
		since := r.created[id]
		if v := r.verifiedAt[id]; !math.IsNaN(v) {
			since = v
		}
		worst = max(worst, now-since)
	}
	return worst
}

// churnGateway is an in-process PaymentIntent gateway answering per stripeMix, with faults:
// Unavailable answers and 429 bursts. It logs every ask into rows.
type churnGateway struct {
	clock       *simClock
	rows        *churnRows
	faults      *rand.Rand // Unavailable answers
	bursts      *rand.Rand // burst starts
	unavailable float64
	meanCalls   float64 // between bursts; 0: none
	burstLen    time.Duration

	cycle      int32 // the cycle under way
	end        int64 // its high-water mark (or the candidate, before its first committed read)
	nextBurst  int64 // the call that starts the next burst
	burstUntil time.Time

	calls, c429, unavail, asks int64
	beyondEnd                  int
}

func (g *churnGateway) scheduleBurst() {
	if g.meanCalls > 0 {
		g.nextBurst = g.calls + 1 + int64(g.bursts.ExpFloat64()*g.meanCalls)
	}
}

func (g *churnGateway) fetch(_ context.Context, extID string) (*stripe.PaymentIntent, error) {
	g.calls++
	num, ok := strings.CutPrefix(extID, "pi_")
	id, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || id <= 0 || id >= int64(len(g.rows.created)) || g.rows.deleted[id] {
		return nil, fmt.Errorf("bench: churn: gateway asked about unexpected id %q: %w", extID, reconcile.ErrAbortBatch)
	}
	now := g.clock.Now()
	if g.meanCalls > 0 && g.calls >= g.nextBurst && !now.Before(g.burstUntil) {
		g.burstUntil = now.Add(g.burstLen)
		g.scheduleBurst()
	}
	if now.Before(g.burstUntil) {
		g.c429++
		return nil, &reconcile.RateLimitError{RetryAfter: g.burstUntil.Sub(now), Reason: "bench: churn: 429 burst"}
	}
	g.asks++
	g.rows.askedIn[id] = g.cycle
	if id > g.end {
		g.beyondEnd++
	}
	if g.faults.Float64() < g.unavailable {
		g.unavail++
		return nil, fmt.Errorf("bench: churn: 503 for %s: %w", extID, reconcile.ErrUnavailable)
	}
	g.rows.verifiedAt[id], g.rows.verifiedIn[id] = now.Sub(churnEpoch).Hours(), g.cycle
	_, status := stripeMix(int(id))
	return &stripe.PaymentIntent{ID: extID, Status: status}, nil
}

// runChurn loads opts.Rows rows into schema (which must exist and be empty) and runs batches
// on the schedule until opts.Cycles cycles complete; see the comment at the top of this file.
func runChurn(ctx context.Context, pool *pgxpool.Pool, schema string, opts churnOptions) (churnResult, error) {
	res := churnResult{Clock: "the schema's now() = current_setting('bench.now'), ahead of pg_catalog in search_path",
		Rows: opts.Rows, Batch: opts.Batch, BatchesPerHour: opts.PerHour, GrowthPerHour: opts.Growth,
		DeletesPerHour: opts.Deletes, UpdatesPerHour: opts.Updates, Unavailable: opts.Unavailable,
		BurstEveryH: opts.BurstEvery.Hours(), BurstLenH: opts.BurstLen.Hours(), LagSLOH: opts.LagSLO.Hours(), Seed: opts.Seed,
		PlanMeetsSLO: true, Cycles: []churnCycle{}}
	if err := opts.check(); err != nil {
		return res, err
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	wallStart := time.Now()
	clock := &simClock{now: churnEpoch}
	if _, err := pool.Exec(ctx, fmt.Sprintf(clockFunction, pgx.Identifier{schema}.Sanitize())); err != nil {
		return res, fmt.Errorf("bench: churn: create the clock: %w", err)
	}
	db, err := clockedPool(ctx, pool, schema, clock)
	if err != nil {
		return res, err
	}
	defer db.Close()
	tables := pgstore.Tables{Prefix: "reconcile_", Schema: schema}
	if err := pgstore.Migrate(ctx, db, tables); err != nil {
		return res, err
	}
	if err := loadPayments(ctx, db, schema, opts.Rows, true); err != nil {
		return res, err
	}
	rows := &churnRows{}
	for id := int64(1); id <= int64(opts.Rows); id++ {
		rows.add(id, 0)
	}
	maxID := int64(opts.Rows)
	store, err := pgstore.New(db, pgstore.Config{Table: paymentsTable, Schema: schema, KeyColumns: []string{"id"},
		ExternalIDColumn: "stripe_payment_intent_id", StateColumn: "status", Tables: tables})
	if err != nil {
		return res, err
	}
	if err := store.Check(ctx); err != nil {
		return res, err
	}
	step := time.Duration(float64(time.Hour) / opts.PerHour)
	gw := &churnGateway{clock: clock, rows: rows, unavailable: opts.Unavailable, burstLen: opts.BurstLen,
		faults: rand.New(rand.NewPCG(opts.Seed, 1)), bursts: rand.New(rand.NewPCG(opts.Seed, 2)), cycle: 1}
	if opts.BurstEvery > 0 {
		gw.meanCalls = opts.BurstEvery.Hours() * float64(opts.Batch) * opts.PerHour
		gw.scheduleBurst()
	}
	grace := opts.Grace
	if grace == 0 {
		grace = -1 // no grace period
	}
	rec, err := reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{
		Job: "churn", Source: store, Sink: store, Gateway: reconcile.GatewayFunc[*stripe.PaymentIntent](gw.fetch),
		Classifier: stripepolicy.PaymentIntentPolicy(), ExternalState: stripepolicy.PaymentIntentState,
		BatchSize: opts.Batch, Grace: grace, Concurrency: 1,
	})
	if err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "churn: loaded %d rows; batch %d, %.4g batches/h, +%.4g -%.4g ~%.4g rows/h, until %d cycles\n",
		opts.Rows, opts.Batch, opts.PerHour, opts.Growth, opts.Deletes, opts.Updates, opts.Cycles)

	changes := rand.New(rand.NewPCG(opts.Seed, 3))
	policy := reconcile.HealthPolicy{LagSLO: opts.LagSLO, MaxStaleFindings: -1}
	var (
		cycleStart float64 // simulated hours: the previous wrap
		started    bool    // the cycle's first read committed
		cur        churnCycle
		owed       [3]float64 // fractions of inserts, deletes, updates carried over
		worstRatio = -1.0
	)
	// A generous cap: ten times the batches the cycles need, the table growing by G/(B×R) a
	// cycle at most.
	final := float64(opts.Rows) * math.Pow(1+opts.Growth/(float64(opts.Batch)*opts.PerHour), float64(opts.Cycles+1))
	maxBatches := 10 * opts.Cycles * (int(math.Min(final, 1e9))/opts.Batch + 2)
	cur.Cycle = 1
	for k := 1; res.CyclesCompleted < opts.Cycles; k++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if k > maxBatches {
			return res, fmt.Errorf("bench: churn: %d batches and only %d cycles of %d completed", k-1, res.CyclesCompleted, opts.Cycles)
		}
		now := churnEpoch.Add(time.Duration(k) * step)
		clock.set(now)
		hours := now.Sub(churnEpoch).Hours()
		n := len(rows.live)
		if !started {
			gw.end = maxID // the high-water mark the read will fix, if it commits
		}
		rep, err := rec.RunBatch(ctx)
		if err != nil {
			return res, err
		}
		res.Batches++
		cur.Batches++
		switch {
		case rep.Deferred:
			res.DeferredBatches++
			cur.Deferred++
		case !started:
			started, cur.Rows = true, n
		}
		if rep.RateLimited {
			res.RateLimitedBatches++
		}
		if rep.Unavailable {
			res.UnavailableBatches++
		}
		if rep.Wrapped {
			if !started {
				return res, errors.New("bench: churn: a cycle wrapped without a committed read")
			}
			plan, err := reconcile.PlanSchedule(reconcile.PlanInput{Rows: int64(cur.Rows), BatchSize: opts.Batch,
				BatchesPerHour: opts.PerHour, NewRowsPerHour: opts.Growth, LagSLO: opts.LagSLO})
			if err != nil {
				return res, err
			}
			closeCycle(&cur, rows, gw.end, cycleStart, hours, plan)
			res.PlanMaxLagS = max(res.PlanMaxLagS, cur.PlanMaxLagS)
			res.PlanMeetsSLO = res.PlanMeetsSLO && plan.MeetsSLO
			res.Cycles = append(res.Cycles, cur)
			res.UnverifiedRows += cur.Unverified
			res.SkippedUnasked += cur.Skipped
			if cur.Ratio > worstRatio {
				worstRatio = cur.Ratio
				res.WorstCycle, res.PredictedCycleS, res.MaxTimeToVerifyS, res.Ratio = cur.Cycle, cur.PredictedS, cur.MaxTimeToVerifyS, cur.Ratio
			}
			res.CyclesCompleted++
			fmt.Fprintf(progress, "churn: cycle %d: %d rows, %d batches (%d deferred), %.2fh (planned %.2fh), verified within %.2fh, %d unverified, %d skipped; %.1fs\n",
				cur.Cycle, cur.Rows, cur.Batches, cur.Deferred, cur.MeasuredS/3600, cur.PredictedS/3600, cur.MaxTimeToVerifyS/3600,
				cur.Unverified, cur.Skipped, time.Since(wallStart).Seconds())
			cycleStart, started = hours, false
			cur = churnCycle{Cycle: cur.Cycle + 1}
			gw.cycle++
		}

		// Health, judged by the store, against the lag by the gateway's log.
		st, err := store.Status(ctx, "churn")
		if err != nil {
			return res, err
		}
		h := reconcile.EvaluateHealth(st, policy)
		truth := time.Duration(rows.lag(hours) * float64(time.Hour))
		res.HealthChecks++
		res.MaxLagS = max(res.MaxLagS, round(truth.Seconds(), 3))
		if !h.OK {
			res.HealthFailing++
		}
		if truth > opts.LagSLO {
			res.LagPastSLO++
			if h.OK {
				res.FalseHealthy++
			}
		}
		if d := st.Lag - truth; d > time.Second || d < -time.Second {
			res.LagMismatches++
		}
		if res.CyclesCompleted >= opts.Cycles {
			break
		}

		// Changes between batches, at the batch's time.
		var todo [3]int
		for i, perHour := range []float64{opts.Growth, opts.Deletes, opts.Updates} {
			owed[i] += perHour / opts.PerHour
			todo[i] = int(owed[i])
			owed[i] -= float64(todo[i])
		}
		if todo[0] > 0 {
			ids, statuses := make([]int64, todo[0]), make([]string, todo[0])
			for i := range ids {
				ids[i] = maxID + 1 + int64(i)
				statuses[i], _ = stripeMix(int(ids[i]))
			}
			if _, err := db.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (id, order_id, stripe_payment_intent_id, status, created_at, updated_at)
				OVERRIDING SYSTEM VALUE SELECT i, 'o_' || i, 'pi_' || i, s, now(), now() FROM unnest($1::bigint[], $2::text[]) AS t(i, s)`,
				pgx.Identifier{schema, paymentsTable}.Sanitize()), ids, statuses); err != nil {
				return res, fmt.Errorf("bench: churn: insert: %w", err)
			}
			for _, id := range ids {
				rows.add(id, hours)
			}
			maxID += int64(todo[0])
			res.Inserted += todo[0]
		}
		for i, q := range []string{"", `DELETE FROM %s WHERE id = ANY($1)`,
			`UPDATE %s SET status = CASE status WHEN 'paid' THEN 'pending' ELSE 'paid' END, version = version + 1, updated_at = now() WHERE id = ANY($1)`} {
			if i == 0 || todo[i] == 0 {
				continue
			}
			ids := make([]int64, 0, todo[i])
			for range min(todo[i], len(rows.live)) {
				ids = append(ids, rows.live[changes.IntN(len(rows.live))])
			}
			if i == 1 {
				for _, id := range ids {
					if !rows.deleted[id] {
						rows.remove(id)
						res.Deleted++
					}
				}
			} else {
				res.Updated += len(ids)
			}
			if _, err := db.Exec(ctx, fmt.Sprintf(q, pgx.Identifier{schema, paymentsTable}.Sanitize()), ids); err != nil {
				return res, fmt.Errorf("bench: churn: change rows: %w", err)
			}
		}
	}

	res.GatewayCalls, res.Calls429, res.UnavailableAnswers, res.Asks, res.AskedBeyondEnd = gw.calls, gw.c429, gw.unavail, gw.asks, gw.beyondEnd
	if gw.asks > 0 {
		res.CallsPerRow = round(float64(gw.calls)/float64(gw.asks), 4)
	}
	res.FinalRows = len(rows.live)
	for _, id := range rows.live {
		if id <= int64(opts.Rows) && math.IsNaN(rows.verifiedAt[id]) {
			res.NeverVerified++
		}
	}
	res.SimulatedHours = round(clock.Now().Sub(churnEpoch).Hours(), 3)
	if res.ObservationMismatches, err = churnObservations(ctx, db, tables, rows); err != nil {
		return res, err
	}
	res.Seconds = round(time.Since(wallStart).Seconds(), 2)
	return res, nil
}

// closeCycle computes a completed cycle's figures from the gateway's log: end is its
// high-water mark, start and now its start and wrap in simulated hours.
func closeCycle(c *churnCycle, rows *churnRows, end int64, start, now float64, plan reconcile.Plan) {
	c.MeasuredS = round((now-start)*3600, 3)
	c.PredictedS, c.PlanMaxLagS = plan.CycleTime.Seconds(), plan.MaxLag.Seconds()
	worst := 0.0
	for id := int64(1); id <= end; id++ {
		switch {
		case rows.deleted[id]:
		case rows.askedIn[id] != int32(c.Cycle):
			c.Skipped++
		case rows.verifiedIn[id] != int32(c.Cycle):
			c.Unverified++
		default:
			worst = max(worst, rows.verifiedAt[id]-start)
		}
	}
	c.MaxTimeToVerifyS = round(worst*3600, 3)
	if c.PredictedS > 0 {
		c.Ratio = round(c.MaxTimeToVerifyS/c.PredictedS, 4)
	}
}

// churnObservations counts the present rows whose verified_at in the observations table is not
// their last verification in the gateway's log (or that only one of them has).
func churnObservations(ctx context.Context, db *pgxpool.Pool, tables pgstore.Tables, rows *churnRows) (int, error) {
	got := make(map[int64]float64, len(rows.live))
	r, err := db.Query(ctx, `SELECT record_id::bigint, extract(epoch FROM verified_at - $2::timestamptz) / 3600
		FROM `+pgx.Identifier{tables.Schema, tables.Prefix + "observations"}.Sanitize()+` WHERE job = $1`, "churn", churnEpoch)
	if err != nil {
		return 0, fmt.Errorf("bench: churn: read observations: %w", err)
	}
	var id int64
	var at float64
	if _, err := pgx.ForEachRow(r, []any{&id, &at}, func() error { got[id] = at; return nil }); err != nil {
		return 0, fmt.Errorf("bench: churn: read observations: %w", err)
	}
	bad := 0
	for _, id := range rows.live {
		want := rows.verifiedAt[id]
		at, ok := got[id]
		if ok != !math.IsNaN(want) || ok && math.Abs(at-want) > 1e-6 {
			bad++
		}
	}
	return bad, nil
}
