package pgshard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/leaktest"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// insertPayments inserts paid rows with the given ids, last changed an hour ago, each with
// external id pi_<id>.
func insertPayments(t testing.TB, pool *pgxpool.Pool, ids ...int64) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `INSERT INTO payments (id, external_id, status, updated_at)
		SELECT i, 'pi_' || i, 'paid', now() - interval '1 hour' FROM unnest($1::bigint[]) i`, ids); err != nil {
		t.Fatal(err)
	}
}

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// succeededFor answers "succeeded" for every id, counting calls.
func succeededFor(ids ...[]int64) *reconciletest.Gateway {
	m := map[string]string{}
	for _, set := range ids {
		for _, id := range set {
			m[fmt.Sprintf("pi_%d", id)] = "succeeded"
		}
	}
	return reconciletest.NewGateway(m)
}

// askedOnce fails the test unless every id was asked exactly once (calls counted from before).
func askedOnce(t testing.TB, gw *reconciletest.Gateway, before map[string]int, ids ...[]int64) {
	t.Helper()
	total := 0
	for _, set := range ids {
		for _, id := range set {
			key := fmt.Sprintf("pi_%d", id)
			if n := gw.Calls(key) - before[key]; n != 1 {
				t.Fatalf("%s asked %d times in the cycle, want 1", key, n)
			}
			total++
		}
	}
	prev := 0
	for _, n := range before {
		prev += n
	}
	if all := gw.Calls("") - prev; all != total {
		t.Fatalf("%d calls in the cycle, want %d (one per row)", all, total)
	}
}

// logVerifications records, in the table verifications, every verification the reconciler
// commits with the job's completed cycles at the time: the cycle the batch belongs to, since a
// batch read before the commit that completes a cycle cannot commit after it (the new shard set
// moves every cursor), and that commit cannot happen while a batch of an unwrapped shard is
// committing.
func logVerifications(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	for _, q := range []string{
		`CREATE TABLE verifications (record_id text NOT NULL, cycle bigint NOT NULL)`,
		`CREATE FUNCTION log_verification() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN
			INSERT INTO verifications SELECT NEW.record_id, c.cycles_completed FROM reconcile_cursors c WHERE c.job = NEW.job;
			RETURN NULL;
		END$$`,
		`CREATE TRIGGER log_verification AFTER INSERT OR UPDATE ON reconcile_observations FOR EACH ROW EXECUTE FUNCTION log_verification()`,
	} {
		if _, err := pool.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
}

// verifiedOnce fails the test unless every row of payments was verified exactly once in the
// cycle numbered cycle (from 0), and nothing else was.
func verifiedOnce(t testing.TB, pool *pgxpool.Pool, cycle int64) {
	t.Helper()
	var rows, verifications, distinct, missing int
	if err := pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM payments),
		(SELECT count(*) FROM verifications WHERE cycle = $1), (SELECT count(DISTINCT record_id) FROM verifications WHERE cycle = $1),
		(SELECT count(*) FROM payments p WHERE NOT EXISTS (SELECT 1 FROM verifications v WHERE v.cycle = $1 AND v.record_id = p.id::text))`,
		cycle).Scan(&rows, &verifications, &distinct, &missing); err != nil {
		t.Fatal(err)
	}
	if verifications != rows || distinct != rows || missing != 0 {
		t.Fatalf("cycle %d: %d verifications of %d distinct rows, %d rows never verified; want each of the %d rows once",
			cycle, verifications, distinct, missing, rows)
	}
}

func snapshotCalls(gw *reconciletest.Gateway, ids ...[]int64) map[string]int {
	m := map[string]int{}
	for _, set := range ids {
		for _, id := range set {
			key := fmt.Sprintf("pi_%d", id)
			m[key] = gw.Calls(key)
		}
	}
	return m
}

func TestShardsSplitTheKeysAtQuantilesAndCoverEveryRowOncePerCycle(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	ids := seq(1, 1000)
	insertPayments(t, pool, ids...)
	logVerifications(t, pool)
	ctx := context.Background()
	jobs := []*pgshard.Job[string]{
		shardtest.NewJob(t, s, pgshard.Config{Shards: 4, Owner: "w1"}),
		shardtest.NewJob(t, s, pgshard.Config{Shards: 4, Owner: "w2"}),
		shardtest.NewJob(t, s, pgshard.Config{Shards: 4, Owner: "w3"}),
	}
	if err := jobs[0].Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := jobs[0].ShardStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var bounds []string
	for _, sh := range st.Shards {
		bounds = append(bounds, sh.Lower+".."+sh.Upper)
		if sh.Rows < 240 || sh.Rows > 260 {
			t.Errorf("shard %d holds %d rows, want about 250", sh.Shard, sh.Rows)
		}
	}
	if got, want := strings.Join(bounds, " "), "..[250] [250]..[500] [500]..[750] [750].."; got != want {
		t.Fatalf("shards %s, want %s", got, want)
	}

	gw := succeededFor(ids)
	ticks := shardtest.RunCycle(t, s, jobs, shardtest.EngineConfig(gw, 64), 1, 1000)
	verifiedOnce(t, pool, 0)
	completed, owners := 0, map[int]bool{}
	for _, tk := range ticks {
		if tk.CycleCompleted {
			completed++
		}
		owners[tk.Shard] = true
	}
	st, err = jobs[1].ShardStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Workers already in a tick may go on into the next cycle.
	if int64(completed) != st.CyclesCompleted || len(owners) != 4 {
		t.Fatalf("%d ticks completed a cycle, %d cycles completed, %d shards worked on; want one tick per cycle and 4 shards",
			completed, st.CyclesCompleted, len(owners))
	}
	if since, ok := st.SinceLastCycle(); st.CyclesCompleted < 1 || !ok || since > time.Minute || st.Lag > time.Minute || st.Rows != 1000 {
		t.Fatalf("job status after a cycle: %+v", st.Status)
	}
	var rows int64
	for _, sh := range st.Shards {
		rows += sh.Rows
	}
	if len(st.Shards) != 4 || st.Slowest < 0 || rows != 1000 {
		t.Fatalf("%d shards holding %d rows, slowest %d after the cycle; want 4 holding 1000 and one named", len(st.Shards), rows, st.Slowest)
	}
}

func TestRowsInsertedBeyondEveryBoundaryAreCoveredInTheSameCycle(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	ids := seq(100, 199)
	insertPayments(t, pool, ids...)
	j := shardtest.NewJob(t, s, pgshard.Config{Shards: 4})
	if err := j.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	// After the boundaries were set: rows above the highest key and below the lowest.
	above, below := seq(1000, 1009), seq(-9, 0)
	insertPayments(t, pool, above...)
	insertPayments(t, pool, below...)
	gw := succeededFor(ids, above, below)
	shardtest.RunCycle(t, s, []*pgshard.Job[string]{j}, shardtest.EngineConfig(gw, 7), 1, 200)
	askedOnce(t, gw, nil, ids, above, below)
}

func TestAnEmptyTableHasOneOpenShardAndTheNextCycleSplitsWhatArrived(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	ctx := context.Background()
	j := shardtest.NewJob(t, s, pgshard.Config{Shards: 4})
	gw := succeededFor(seq(1, 400))
	shardtest.RunCycle(t, s, []*pgshard.Job[string]{j}, shardtest.EngineConfig(gw, 50), 1, 10)
	st, err := j.ShardStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Shards) != 1 || st.Shards[0].Lower != "" || st.Shards[0].Upper != "" {
		t.Fatalf("shards of an empty table: %+v, want one open both ways", st.Shards)
	}
	// Rows arrive; the one open shard covers them all in the next cycle.
	insertPayments(t, pool, seq(1, 400)...)
	shardtest.RunCycle(t, s, []*pgshard.Job[string]{j}, shardtest.EngineConfig(gw, 50), 2, 100)
	askedOnce(t, gw, nil, seq(1, 400))
	// The cycle after is split again, from the keys present.
	if st, err = j.ShardStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if len(st.Shards) != 4 {
		t.Fatalf("%d shards after rows arrived, want 4", len(st.Shards))
	}
	before := snapshotCalls(gw, seq(1, 400))
	shardtest.RunCycle(t, s, []*pgshard.Job[string]{j}, shardtest.EngineConfig(gw, 50), 3, 100)
	askedOnce(t, gw, before, seq(1, 400))
}

func TestFewerRowsThanShardsMakeFewerShardsAndCoverEveryRowOnce(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	insertPayments(t, pool, 5, 9)
	logVerifications(t, pool)
	j := shardtest.NewJob(t, s, pgshard.Config{Shards: 8})
	gw := succeededFor([]int64{5, 9})
	shardtest.RunCycle(t, s, []*pgshard.Job[string]{j, shardtest.NewJob(t, s, pgshard.Config{Shards: 8})}, shardtest.EngineConfig(gw, 10), 1, 50)
	verifiedOnce(t, pool, 0)
	st, err := j.ShardStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Quantiles of {5, 9}: 5 and 9, so shards below 5, [5, 9) and from 9.
	if len(st.Shards) != 3 || st.Shards[1].Lower != "[5]" || st.Shards[2].Lower != "[9]" {
		t.Fatalf("shards %+v, want three split at 5 and 9", st.Shards)
	}
}

func TestACompositeKeyIsShardedOnItsFirstColumn(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{KeyColumns: []string{"created_at", "id"}}, `CREATE TABLE payments (
		id uuid PRIMARY KEY DEFAULT gen_random_uuid(), external_id text NOT NULL, status text NOT NULL,
		created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour')`)
	ctx := context.Background()
	// 600 rows over 6 distinct creation times: boundaries fall on ties.
	if _, err := pool.Exec(ctx, `INSERT INTO payments (external_id, status, created_at)
		SELECT 'pi_' || i, 'paid', timestamptz '2026-01-01 00:00:00.123456+00' + (i % 6) * interval '1 second'
		FROM generate_series(1, 600) i`); err != nil {
		t.Fatal(err)
	}
	ids := seq(1, 600)
	gw := succeededFor(ids)
	logVerifications(t, pool)
	j := shardtest.NewJob(t, s, pgshard.Config{Shards: 4})
	shardtest.RunCycle(t, s, []*pgshard.Job[string]{j, shardtest.NewJob(t, s, pgshard.Config{Shards: 4})}, shardtest.EngineConfig(gw, 37), 1, 200)
	verifiedOnce(t, pool, 0)
	st, err := j.ShardStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Shards) != 4 {
		t.Fatalf("%d shards, want 4", len(st.Shards))
	}
}

// expireLease makes the shard's lease expire now, as if its holder had stopped renewing it.
func expireLease(t testing.TB, pool *pgxpool.Pool, shard int) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `UPDATE reconcile_shards SET lease_until = now() - interval '1 millisecond'
		WHERE job = 'sweep' AND shard = $1`, shard); err != nil {
		t.Fatal(err)
	}
}

func TestAnExpiredLeaseIsTakenOverWithANewTokenAndTheOldHolderLearnsItLostIt(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	insertPayments(t, pool, seq(1, 10)...)
	ctx := context.Background()
	a := shardtest.NewJob(t, s, pgshard.Config{Shards: 1, Owner: "a", Lease: time.Second})
	b := shardtest.NewJob(t, s, pgshard.Config{Shards: 1, Owner: "b", Lease: time.Second})
	la, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Release(ctx)
	if _, err := b.Acquire(ctx); !errors.Is(err, pgshard.ErrNoShardFree) {
		t.Fatalf("Acquire of a leased shard: %v, want ErrNoShardFree", err)
	}
	// The holder stalls: its renewer stops (else it could extend the lease again between its
	// expiry and the claim), and the lease expires.
	pgshard.StopRenewing(la)
	expireLease(t, pool, la.Shard())
	lb, err := b.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Release(ctx)
	took, prev := lb.TookOver()
	if lb.Shard() != la.Shard() || lb.Token() <= la.Token() || !took || prev != "a" {
		t.Fatalf("takeover: shard %d token %d (took over %v from %q); first lease shard %d token %d",
			lb.Shard(), lb.Token(), took, prev, la.Shard(), la.Token())
	}
	// The holder wakes up: its next renewal finds the lease lost.
	if pgshard.RenewOnce(la) {
		t.Fatal("renewing a lease taken over succeeded")
	}
	select {
	case <-la.Lost():
	default:
		t.Fatal("the first holder's renewal did not report its lease lost")
	}
	if !errors.Is(la.LostErr(), pgshard.ErrLeaseLost) || !errors.Is(la.LostErr(), reconcile.ErrConcurrentRun) {
		t.Fatalf("LostErr = %v, want ErrLeaseLost, a reconcile.ErrConcurrentRun", la.LostErr())
	}
	// Releasing the lost lease leaves the new holder's alone.
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := b.ShardStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sh := st.Shards[0]; !sh.Leased || sh.LeaseOwner != "b" || sh.Takeovers != 1 || sh.Leases != 2 {
		t.Fatalf("shard after the takeover: %+v; want leased by b, 2 leases, 1 takeover", sh)
	}
}

func TestACommitByAWorkerThatLostItsLeaseIsRejectedAndLeavesNoTrace(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	// Every row drifts: pending here, succeeded there, so each batch opens findings and
	// queues commands.
	if _, err := pool.Exec(context.Background(), `INSERT INTO payments (id, external_id, status, updated_at)
		SELECT i, 'pi_' || i, 'pending', now() - interval '1 hour' FROM generate_series(1, 20) i`); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a := shardtest.NewJob(t, s, pgshard.Config{Shards: 1, Owner: "a"})
	b := shardtest.NewJob(t, s, pgshard.Config{Shards: 1, Owner: "b"})
	la, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Release(ctx)
	// The late worker runs a whole batch through the engine, but its gateway stalls until its
	// lease has been taken over. The gateway's first call says that the batch has been read.
	taken, read := make(chan struct{}), make(chan struct{})
	var readOnce sync.Once
	gw := succeededFor(seq(1, 20))
	stalling := reconcile.GatewayFunc[string](func(ctx context.Context, id string) (string, error) {
		readOnce.Do(func() { close(read) })
		<-taken
		return gw.Fetch(ctx, id)
	})
	cfg := shardtest.EngineConfig(stalling, 10)
	cfg.Job, cfg.Source, cfg.Sink = "sweep", la, la
	late, err := reconcile.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := late.RunBatch(ctx)
		done <- err
	}()
	// Only once the late worker has read its batch does its lease expire (its renewer stopped,
	// as a stalled worker's would), so that the commit's fencing, not the read's, rejects it.
	select {
	case <-read:
	case err := <-done:
		t.Fatalf("the late worker's batch ended before its gateway was called: %v", err)
	}
	pgshard.StopRenewing(la)
	expireLease(t, pool, la.Shard())
	lb, err := b.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	close(taken)
	if err := <-done; !errors.Is(err, reconcile.ErrConcurrentRun) || !errors.Is(err, pgshard.ErrLeaseLost) {
		t.Fatalf("the late worker's batch: %v, want ErrLeaseLost (a reconcile.ErrConcurrentRun)", err)
	}
	if fs, obs := reconciletest.Findings(t, s, "sweep"), countRows(t, pool, "reconcile_observations"); len(fs) != 0 || obs != 0 {
		t.Fatalf("the rejected commit left %d findings and %d observations", len(fs), obs)
	}
	// The same stale lease cannot read either.
	if _, err := la.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 10}); !errors.Is(err, pgshard.ErrLeaseLost) {
		t.Fatalf("Read under a lost lease: %v, want ErrLeaseLost", err)
	}
	// The new holder redoes the batch from where the shard stood.
	cfg = shardtest.EngineConfig(gw, 10)
	cfg.Job, cfg.Source, cfg.Sink = "sweep", lb, lb
	reps := reconciletest.Cycle(t, cfg, 5)
	if reps[0].Scanned != 10 || reps[0].NewFindings != 10 || reps[0].NewCommands != 10 {
		t.Fatalf("the new holder's first batch: %+v, want the 10 rows the late worker read, with their findings", reps[0])
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if fs, cmds := reconciletest.Findings(t, s, "sweep"), countRows(t, pool, "reconcile_outbox"); len(fs) != 20 || cmds != 20 {
		t.Fatalf("%d findings and %d commands, want 20 of each", len(fs), cmds)
	}
}

func TestASecondCommitOnTheSameCursorIsRejected(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	insertPayments(t, pool, seq(1, 5)...)
	ctx := context.Background()
	l, err := shardtest.NewJob(t, s, pgshard.Config{Shards: 1}).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	b, err := l.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Next: b.Records[1].Key}
	if _, err := l.Commit(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Commit(ctx, c); !errors.Is(err, reconcile.ErrConcurrentRun) {
		t.Fatalf("a second commit on the same cursor: %v, want a reconcile.ErrConcurrentRun", err)
	}
	if _, err := l.Commit(ctx, reconcile.Commit{Job: "other", Cursor: b.Cursor, Next: b.Records[1].Key}); err == nil {
		t.Fatal("a commit for another job succeeded")
	}
}

func countRows(t testing.TB, pool *pgxpool.Pool, table string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestShardSweepsDriveAShardedJobThroughRunTick(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	ids := seq(1, 500)
	insertPayments(t, pool, ids...)
	logVerifications(t, pool)
	gw := succeededFor(ids)
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	wraps := 0
	for w := range 3 {
		r, err := pgshard.NewSweep(shardtest.NewJob(t, s, pgshard.Config{Shards: 5, Owner: fmt.Sprint("w", w)}), shardtest.EngineConfig(gw, 30))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if st, err := s.Status(ctx, "sweep"); err != nil || st.CyclesCompleted > 0 {
					return
				}
				tick, err := reconcile.RunTick(ctx, r, reconcile.TickBudget{})
				if err != nil {
					t.Error(err)
					return
				}
				if tick.Wrapped {
					mu.Lock()
					wraps++
					mu.Unlock()
				}
				if tick.After == reconcile.AfterIdle {
					time.Sleep(5 * time.Millisecond) // no shard free: as a Runner would, wait a little
				}
			}
		}()
	}
	wg.Wait()
	// Runners already in a tick go on into the next cycles; every completed one counts.
	st, err := s.Status(ctx, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	for c := range st.CyclesCompleted {
		verifiedOnce(t, pool, c)
	}
	if int64(wraps) != st.CyclesCompleted || wraps == 0 {
		t.Fatalf("%d ticks reported the job wrapped, %d cycles completed; want one per cycle", wraps, st.CyclesCompleted)
	}
}

func TestNewShardedJobAndSweepRejectBadConfig(t *testing.T) {
	t.Parallel()
	_, s := shardtest.NewStore(t, pgstore.Config{})
	for _, cfg := range []pgshard.Config{
		{},
		{Job: "j", Shards: -1},
		{Job: "j", Lease: 10 * time.Millisecond},
		{Job: "j", Lease: time.Minute, MaxHold: time.Minute},
	} {
		if _, err := pgshard.NewJob(s, cfg); err == nil {
			t.Errorf("NewShardedJob(%+v) succeeded", cfg)
		}
	}
	j := shardtest.NewJob(t, s, pgshard.Config{})
	bad := shardtest.EngineConfig(reconciletest.NewGateway(nil), 10)
	bad.Job = "other"
	if _, err := pgshard.NewSweep(j, bad); err == nil {
		t.Error("a sweep for another job's config was made")
	}
	bad = shardtest.EngineConfig(reconciletest.NewGateway(nil), 10)
	bad.Source = s
	if _, err := pgshard.NewSweep(j, bad); err == nil {
		t.Error("a sweep with its own Source was made")
	}
	if _, err := pgshard.RunShard(context.Background(), j, reconcile.Config[string, string]{}, reconcile.TickBudget{}); err == nil {
		t.Error("RunShard without a gateway succeeded")
	}
}

func TestShardHealthNamesAStalledShard(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	insertPayments(t, pool, seq(1, 100)...)
	ctx := context.Background()
	j := shardtest.NewJob(t, s, pgshard.Config{Shards: 4})
	gw := succeededFor(seq(1, 100))
	shardtest.RunCycle(t, s, []*pgshard.Job[string]{j}, shardtest.EngineConfig(gw, 10), 1, 100)
	// Shards 0, 1 and 3 progress in the new cycle; shard 2's worker hangs holding its lease.
	for _, shard := range []int{0, 1, 3} {
		if _, err := pool.Exec(ctx, `UPDATE reconcile_shards SET last_batch_at = now() WHERE job = 'sweep' AND shard = $1`, shard); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE reconcile_shards SET cycle_started_at = now() - interval '2 hours',
		last_batch_at = now() - interval '3 hours', lease_owner = 'hung', lease_until = now() + interval '1 minute' WHERE job = 'sweep' AND shard = 2`); err != nil {
		t.Fatal(err)
	}
	h, st, err := j.Health(ctx, reconcile.HealthPolicy{MaxSinceLastBatch: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if st.Slowest != 2 || h.OK {
		t.Fatalf("slowest %d, health %v; want shard 2 named and health failing", st.Slowest, h)
	}
	reasons := strings.Join(h.Reasons(), "; ")
	if !strings.Contains(reasons, "shard 2 has committed no batch for 2h") || !strings.Contains(reasons, "leased by hung") {
		t.Fatalf("reasons %q, want shard 2 named as stalled and its holder", reasons)
	}
	// Without the hang, the job is healthy and the check passes.
	if _, err := pool.Exec(ctx, `UPDATE reconcile_shards SET last_batch_at = now(), lease_owner = NULL, lease_until = NULL WHERE job = 'sweep'`); err != nil {
		t.Fatal(err)
	}
	if h, _, err = j.Health(ctx, reconcile.HealthPolicy{MaxSinceLastBatch: time.Hour}); err != nil || !h.OK {
		t.Fatalf("health after the hang: %v, %v; want OK", h, err)
	}
	var found bool
	for _, c := range h.Checks {
		found = found || c.Name == "slowest_shard"
	}
	if !found {
		t.Fatal("no slowest_shard check")
	}
}

func TestALeaseHeldPastMaxHoldIsGivenUpSoThatAHungWorkerLosesItsShard(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	insertPayments(t, pool, seq(1, 10)...)
	ctx := context.Background()
	hung := shardtest.NewJob(t, s, pgshard.Config{Shards: 1, Owner: "hung", Lease: time.Second, MaxHold: 1500 * time.Millisecond})
	l, err := hung.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	// The holder never returns (a call that ignores its context): its lease is renewed until
	// MaxHold, then given up and the work under it cancelled.
	lctx, cancel := l.Context(ctx)
	defer cancel()
	select {
	case <-lctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the lease was never given up")
	}
	if err := context.Cause(lctx); !errors.Is(err, pgshard.ErrLeaseLost) || !strings.Contains(err.Error(), "MaxHold") {
		t.Fatalf("cause %v, want the lease given up past MaxHold", err)
	}
	// Once its last renewal runs out, another worker takes the shard.
	other := shardtest.NewJob(t, s, pgshard.Config{Shards: 1, Owner: "other"})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		l2, err := other.Acquire(ctx)
		if err == nil {
			took, prev := l2.TookOver()
			if err := l2.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if !took || prev != "hung" {
				t.Fatalf("took over %v from %q, want from hung", took, prev)
			}
			return
		}
		if !errors.Is(err, pgshard.ErrNoShardFree) || time.Now().After(deadline) {
			t.Fatalf("Acquire after MaxHold: %v", err)
		}
	}
}

// Not parallel: it counts goroutines, which other tests' would disturb.
func TestLeasesSweepsAndShardRunsLeaveNoGoroutineBehind(t *testing.T) {
	pool, schema := pgtest.PoolSchema(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, shardtest.PaymentsDDL); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.Migrate(ctx, pool, pgstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	insertPayments(t, pool, seq(1, 50)...)
	ignore := leaktest.IgnoreCurrent()
	// A pool of the test's own, closed before the check.
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	own, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.New(own, pgstore.Config{Table: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	j := shardtest.NewJob(t, s, pgshard.Config{Shards: 3})
	gw := succeededFor(seq(1, 50))
	for range 4 {
		if _, err := pgshard.RunShard(ctx, j, shardtest.EngineConfig(gw, 10), reconcile.TickBudget{}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := pgshard.NewSweep(j, shardtest.EngineConfig(gw, 10))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reconcile.RunTick(ctx, r, reconcile.TickBudget{}); err != nil {
		t.Fatal(err)
	}
	l, err := j.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lctx, cancel := l.Context(ctx)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-lctx.Done()
	own.Close()
	leaktest.VerifyNone(t, ignore)
}

func TestMinCycleIntervalKeepsEveryShardUnleasedUntilItHasPassed(t *testing.T) {
	t.Parallel()
	pool, s := shardtest.NewStore(t, pgstore.Config{})
	ids := seq(1, 60)
	insertPayments(t, pool, ids...)
	ctx := context.Background()
	const interval = 2 * time.Second
	cfg := pgshard.Config{Shards: 3, MinCycleInterval: interval}
	jobs := []*pgshard.Job[string]{shardtest.NewJob(t, s, cfg), shardtest.NewJob(t, s, cfg)}
	gw := succeededFor(ids)
	// The first cycle starts at once: there was no cycle before it.
	shardtest.RunCycle(t, s, jobs, shardtest.EngineConfig(gw, 10), 1, 200)
	st, err := jobs[0].ShardStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.CyclesCompleted != 1 {
		t.Fatalf("%d cycles completed, want 1: the next must wait MinCycleInterval", st.CyclesCompleted)
	}
	// The interval runs from the commit that completed the cycle (the database's clock, on this
	// machine), not from when RunCycle returned: on a loaded machine that is much later.
	completed := st.LastCycleCompletedAt
	for _, sh := range st.Shards {
		if sh.Wrapped || sh.Leased || sh.ScannedThisCycle != 0 {
			t.Fatalf("shard after the cycle: %+v; want a fresh, unleased shard of the next cycle", sh)
		}
	}
	// No worker may lease a shard of the next cycle yet, and each learns when it may.
	_, err = jobs[1].Acquire(ctx)
	var nd *pgshard.CycleNotDueError
	if !errors.Is(err, pgshard.ErrNoShardFree) || !errors.As(err, &nd) || nd.StartsIn <= 0 || nd.StartsIn > interval+time.Millisecond {
		t.Fatalf("Acquire right after the cycle: %v, want a CycleNotDueError within %v", err, interval)
	}
	tick, err := pgshard.RunShard(ctx, jobs[0], shardtest.EngineConfig(gw, 10), reconcile.TickBudget{})
	if err != nil || tick.Leased || !tick.Tick.Deferred || tick.Tick.RetryAfter <= 0 || tick.Tick.RetryAfter > interval+time.Millisecond {
		t.Fatalf("RunShard right after the cycle: %+v, %v; want nothing leased, deferred with RetryAfter within %v", tick, err, interval)
	}
	r, err := pgshard.NewSweep(jobs[1], shardtest.EngineConfig(gw, 10))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := reconcile.RunTick(ctx, r, reconcile.TickBudget{})
	if err != nil || rt.Conflict || !rt.Deferred || rt.RetryAfter <= 0 || rt.RetryAfter > interval+time.Millisecond || rt.Scanned != 0 {
		t.Fatalf("a Sweep's tick right after the cycle: %+v, %v; want deferred with RetryAfter within %v", rt, err, interval)
	}
	calls := gw.Calls("")
	// Until the interval has passed, by the database clock, nothing is leased.
	for time.Since(completed) < interval-300*time.Millisecond {
		if l, err := jobs[0].Acquire(ctx); !errors.Is(err, pgshard.ErrNoShardFree) {
			if l != nil {
				l.Release(ctx)
			}
			t.Fatalf("Acquire %v after the cycle: %v, want ErrNoShardFree until %v", time.Since(completed), err, interval)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if gw.Calls("") != calls {
		t.Fatal("the gateway was called before the next cycle was due")
	}
	// Once it has passed, a shard is leased.
	time.Sleep(time.Until(completed.Add(tick.Tick.RetryAfter)))
	var l *pgshard.Lease[string]
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if l, err = jobs[0].Acquire(ctx); err == nil {
			break
		}
		if !errors.Is(err, pgshard.ErrNoShardFree) || time.Now().After(deadline) {
			t.Fatalf("Acquire after MinCycleInterval: %v", err)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// The next cycle runs in full, and is followed by the same wait.
	before := snapshotCalls(gw, ids)
	shardtest.RunCycle(t, s, jobs, shardtest.EngineConfig(gw, 10), 2, 200)
	askedOnce(t, gw, before, ids)
	if _, err := jobs[0].Acquire(ctx); !errors.As(err, &nd) {
		t.Fatalf("Acquire right after the second cycle: %v, want a CycleNotDueError", err)
	}
}
