package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	tests := []struct {
		name string
		cfg  pgstore.Config
		want string
	}{
		{"an empty table name", pgstore.Config{}, "Table is empty"},
		{"a table name with a quote", pgstore.Config{Table: `pay"ments`}, "not a plain SQL identifier"},
		{"a table name with a space", pgstore.Config{Table: "pay ments"}, "not a plain SQL identifier"},
		{"an injection attempt in a column", pgstore.Config{Table: "payments", StateColumn: "status; DROP TABLE payments"}, "StateColumn"},
		{"a key column with a dot", pgstore.Config{Table: "payments", KeyColumns: []string{"p.id"}}, "KeyColumns[0]"},
		{"a key column listed twice", pgstore.Config{Table: "payments", KeyColumns: []string{"id", "id"}}, "listed twice"},
		{"a prefix with a dash", pgstore.Config{Table: "payments", Tables: pgstore.Tables{Prefix: "re-"}}, "Prefix"},
		{"a schema with a quote", pgstore.Config{Table: "payments", Schema: `x"y`}, "Schema"},
		{"an identifier longer than 63 bytes", pgstore.Config{Table: strings.Repeat("p", 64)}, "at most 63"},
		{"an unknown observations mode", pgstore.Config{Table: "payments", Observations: 7}, "Observations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pgstore.New(pool, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New(%+v) = %v, want an error mentioning %q", tt.cfg, err, tt.want)
			}
		})
	}
	if _, err := pgstore.New(nil, pgstore.Config{Table: "payments"}); err == nil {
		t.Fatal("New(nil DB) succeeded")
	}
}

func TestCheckNamesTheMissingTableOrColumn(t *testing.T) {
	t.Parallel()
	pool, _ := newStore(t, pgstore.Config{}, paymentsDDL, `ALTER TABLE payments ADD COLUMN maybe bigint`)
	ctx := context.Background()
	tests := []struct {
		name string
		cfg  pgstore.Config
		want string
	}{
		{"an unknown table", pgstore.Config{Table: "paymentz"}, `"paymentz" does not exist`},
		{"an unknown state column", pgstore.Config{Table: "payments", StateColumn: "state"}, `no column "state"`},
		{"an unknown key column", pgstore.Config{Table: "payments", KeyColumns: []string{"created_at", "uuid"}}, `no column "uuid"`},
		{"a key that is not unique", pgstore.Config{Table: "payments", KeyColumns: []string{"created_at"}}, "not unique"},
		{"a nullable key column", pgstore.Config{Table: "payments", KeyColumns: []string{"maybe", "id"}}, `"maybe" of "payments" is nullable`},
		{"host observation columns that are missing", pgstore.Config{Table: "payments", Observations: pgstore.ObserveInHostColumns}, `no column "observed_external_status"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := pgstore.New(pool, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Check(ctx)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v, want an error mentioning %s", err, tt.want)
			}
			_, err = s.Read(ctx, reconcile.ReadRequest{Job: "j", Limit: 10})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read = %v, want the same error", err)
			}
		})
	}
}

func TestEngineRejectsEmptyJobAndBadBatch(t *testing.T) {
	t.Parallel()
	_, s := newStore(t, pgstore.Config{})
	gw := reconciletest.NewGateway(map[string]string{})
	for _, cfg := range []reconcile.Config[string, string]{
		{Job: "", Source: s, Sink: s, Gateway: gw, Classifier: reconciletest.Classifier()},
		{Job: "j", Source: s, Sink: s, Gateway: gw, Classifier: reconciletest.Classifier(), BatchSize: -1},
	} {
		if _, err := reconcile.RunBatch(context.Background(), cfg); err == nil {
			t.Errorf("RunBatch(job %q, batch %d) succeeded", cfg.Job, cfg.BatchSize)
		}
	}
	if _, err := s.Read(context.Background(), reconcile.ReadRequest{Job: "j", Limit: 0}); err == nil {
		t.Error("Read with limit 0 succeeded")
	}
}

func TestMigrateTwiceIsANoOpAndHonoursPrefixAndSchema(t *testing.T) {
	t.Parallel()
	pool, schema := pgtest.PoolSchema(t)
	ctx := context.Background()
	recon := schema + "_recon" // a second schema of this test's own
	if _, err := pool.Exec(ctx, `CREATE SCHEMA `+recon+`; `+paymentsDDL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Exec(context.Background(), `DROP SCHEMA `+recon+` CASCADE`) })
	tables := pgstore.Tables{Prefix: "rk_", Schema: recon}
	for range 2 {
		if err := pgstore.Migrate(ctx, pool, tables); err != nil {
			t.Fatal(err)
		}
	}
	files, err := pgstore.Migrations(tables)
	if err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+recon+`.rk_migrations`).Scan(&n); err != nil || n != len(names) {
		t.Fatalf("migrations recorded: %d, %v; want each of the %d once", n, err, len(names))
	}
	sql, err := fs.ReadFile(files, "001_init.sql")
	if err != nil || !strings.Contains(string(sql), `CREATE TABLE "`+recon+`"."rk_findings"`) {
		t.Fatalf("rendered migration lacks the prefixed table: %v\n%s", err, sql)
	}
	s, err := pgstore.New(pool, pgstore.Config{Table: "payments", Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{pool, s}
	f.Insert(t, reconciletest.Row{ID: 1, ExternalID: "pi_1", Local: "pending"})
	reconciletest.Cycle(t, reconciletest.Config(f, "j", reconciletest.NewGateway(map[string]string{"pi_1": "succeeded"}), 10), 3)
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+recon+`.rk_outbox`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("commands in the prefixed outbox: %d, %v; want 1", n, err)
	}
}

func TestCompositeKeyCoversAUUIDTableWithTiedTimestamps(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{KeyColumns: []string{"created_at", "id"}}, `CREATE TABLE payments (
		id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
		external_id text NOT NULL, status text NOT NULL,
		created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL DEFAULT now() - interval '1 hour')`,
		`CREATE INDEX ON payments (created_at, id)`)
	ctx := context.Background()
	// 1000 rows over only 7 distinct creation times (microsecond-precise ones included), so
	// batches end in the middle of ties.
	if _, err := pool.Exec(ctx, `INSERT INTO payments (external_id, status, created_at)
		SELECT 'pi_' || i, 'paid', timestamptz '2026-01-01 00:00:00.123456+00' + (i % 7) * interval '1.000001 second'
		FROM generate_series(1, 1000) i`); err != nil {
		t.Fatal(err)
	}
	gw := reconciletest.NewGateway(states(1000, "succeeded"))
	reps := reconciletest.Cycle(t, reconcile.Config[string, string]{Job: "uuid", Source: s, Sink: s, Gateway: gw,
		Classifier: reconciletest.Classifier(), BatchSize: 37}, 100)
	if len(reps) != 28 { // 27 full batches, then one of 1 that wraps
		t.Errorf("%d batches, want 28", len(reps))
	}
	for i := 1; i <= 1000; i++ {
		if n := gw.Calls(fmt.Sprintf("pi_%d", i)); n != 1 {
			t.Fatalf("pi_%d asked %d times in one cycle, want 1", i, n)
		}
	}
	var verified int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_observations o JOIN payments p ON p.id::text = o.record_id`).Scan(&verified); err != nil || verified != 1000 {
		t.Fatalf("%d rows verified (%v), want 1000", verified, err)
	}
}

func states(n int, state string) map[string]string {
	m := make(map[string]string, n)
	for i := 1; i <= n; i++ {
		m[fmt.Sprintf("pi_%d", i)] = state
	}
	return m
}

// dropBeforeCommit is a DB whose transactions lose their connection just before COMMIT.
type dropBeforeCommit struct {
	*pgxpool.Pool
	drops atomic.Int32
}

type droppingTx struct {
	pgx.Tx
	db *dropBeforeCommit
}

func (d *dropBeforeCommit) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := d.Pool.Begin(ctx)
	return droppingTx{tx, d}, err
}

func (tx droppingTx) Commit(ctx context.Context) error {
	if tx.db.drops.Add(-1) >= 0 {
		pid := tx.Conn().PgConn().PID()
		if _, err := tx.db.Pool.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
			return err
		}
	}
	return tx.Tx.Commit(ctx)
}

func TestConnectionDroppedBeforeCommitRedoesTheBatchWithoutDuplicates(t *testing.T) {
	t.Parallel()
	pool, _ := newStore(t, pgstore.Config{})
	db := &dropBeforeCommit{Pool: pool}
	db.drops.Store(1)
	s, err := pgstore.New(db, pgstore.Config{Table: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{pool, s}
	f.Insert(t, reconciletest.Row{ID: 1, ExternalID: "pi_1", Local: "pending"}, reconciletest.Row{ID: 2, ExternalID: "pi_2", Local: "paid"})
	gw := reconciletest.NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "canceled"})
	cfg := reconciletest.Config(f, "sweep", gw, 10)
	if _, err := reconcile.RunBatch(context.Background(), cfg); err == nil {
		t.Fatal("the commit on a dropped connection succeeded")
	}
	if fs := f.Findings(t, "sweep"); len(fs) != 0 {
		t.Fatalf("the failed commit left findings: %+v", fs)
	}
	reconciletest.Cycle(t, cfg, 3)
	if fs, cmds := f.Findings(t, "sweep"), f.Commands(t, "sweep"); len(fs) != 2 || len(cmds) != 1 {
		t.Fatalf("after the redo: %d findings and %d commands, want 2 and 1", len(fs), len(cmds))
	}
	if gw.Calls("pi_1") != 2 {
		t.Fatalf("pi_1 asked %d times, want 2 (the batch was redone)", gw.Calls("pi_1"))
	}
}

// touchTrigger is the usual updated_at trigger: any update of a row bumps its updated_at.
var touchTrigger = []string{`CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS
		$$BEGIN NEW.updated_at := clock_timestamp(); RETURN NEW; END$$`,
	`CREATE TRIGGER touch BEFORE UPDATE ON payments FOR EACH ROW EXECUTE FUNCTION touch()`}

// cyclesStayInSync inserts two paid rows and runs three cycles, each of which must find both
// rows in sync: none turns InFlight because of the reconciler's own writes.
func cyclesStayInSync(t *testing.T, f fixture) reconcile.Config[string, string] {
	t.Helper()
	f.Insert(t, reconciletest.Row{ID: 1, ExternalID: "pi_1", Local: "paid"}, reconciletest.Row{ID: 2, ExternalID: "pi_2", Local: "paid"})
	cfg := reconciletest.Config(f, "sweep", reconciletest.NewGateway(states(2, "succeeded")), 10)
	for cycle := range 3 {
		reps := reconciletest.Cycle(t, cfg, 3)
		if reps[0].Verdicts[reconcile.InSync] != 2 {
			t.Fatalf("cycle %d: verdicts %v, want both rows in sync despite the trigger", cycle, reps[0].Verdicts)
		}
	}
	return cfg
}

func TestOwnTableObservationsNeverTouchTheHostTable(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{}, append([]string{paymentsDDL}, touchTrigger...)...)
	cyclesStayInSync(t, fixture{pool, s})
	var touched int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM payments WHERE updated_at > now() - interval '10 minutes'`).Scan(&touched); err != nil || touched != 0 {
		t.Fatalf("%d host rows were updated by the reconciler (%v), want 0", touched, err)
	}
}

func TestHostColumnObservationsWithAnUpdatedAtTriggerDoNotStayInFlight(t *testing.T) {
	t.Parallel()
	cfg := pgstore.Config{Observations: pgstore.ObserveInHostColumns, OwnWriteTolerance: 200 * time.Millisecond}
	pool, s := newStore(t, cfg, append([]string{`CREATE TABLE payments (
		id bigint PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
		created_at timestamptz NOT NULL DEFAULT now() - interval '1 day', updated_at timestamptz NOT NULL DEFAULT now(),
		observed_external_status text, last_reconciled_at timestamptz)`}, touchTrigger...)...)
	ctx := context.Background()
	jc := cyclesStayInSync(t, fixture{pool, s})
	var observed string
	var at *time.Time
	if err := pool.QueryRow(ctx, `SELECT observed_external_status, last_reconciled_at FROM payments WHERE id = 1`).Scan(&observed, &at); err != nil || observed != "succeeded" || at == nil {
		t.Fatalf("host columns: %q, %v, %v; want succeeded and a time", observed, at, err)
	}
	// A real change after our write is still recent.
	time.Sleep(300 * time.Millisecond)
	if _, err := pool.Exec(ctx, `UPDATE payments SET status = 'pending' WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	reps := reconciletest.Cycle(t, jc, 3)
	if reps[0].Verdicts[reconcile.InFlight] != 1 || reps[0].Verdicts[reconcile.InSync] != 1 {
		t.Fatalf("after a real change: verdicts %v, want 1 in flight and 1 in sync", reps[0].Verdicts)
	}
}

func TestRowsExistingForTheWholeCycleAreVerifiedExactlyOnceDespiteConcurrentChurn(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	const n = 10000
	if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, updated_at)
		SELECT i * 10, 'pi_' || i * 10, 'paid', now() - interval '1 hour' FROM generate_series(1, $1) i`, n); err != nil {
		t.Fatal(err)
	}
	gw := reconcile.GatewayFunc[string](nil)
	var mu sync.Mutex
	calls := map[string]int{}
	gw = func(_ context.Context, id string) (string, error) {
		mu.Lock()
		calls[id]++
		mu.Unlock()
		return "succeeded", nil
	}
	// While the cycle runs: insert rows between and after existing keys and delete some.
	stop := make(chan struct{})
	deleted := make(chan int64, n)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := int64(1); i <= 3000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := i*37%(n*10)*10 + 5
			if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, updated_at)
				VALUES ($1, $2, 'paid', now() - interval '1 hour')`, id, fmt.Sprintf("pi_%d", id)); err != nil && !strings.Contains(err.Error(), "duplicate") {
				t.Error(err)
				return
			}
			if i%3 == 0 {
				id := (i * 7919 % n) * 10
				if _, err := pool.Exec(ctx, `DELETE FROM payments WHERE id = $1`, id); err != nil {
					t.Error(err)
					return
				}
				deleted <- id
			}
		}
	}()
	reconciletest.Cycle(t, reconcile.Config[string, string]{Job: "churn", Source: s, Sink: s, Gateway: gw,
		Classifier: reconciletest.Classifier(), BatchSize: 200}, 1000)
	close(stop)
	wg.Wait()
	close(deleted)
	gone := map[string]bool{}
	for id := range deleted {
		gone[fmt.Sprintf("pi_%d", id)] = true
	}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("pi_%d", i*10)
		if gone[id] {
			if calls[id] > 1 {
				t.Fatalf("deleted row %s asked %d times", id, calls[id])
			}
			continue
		}
		if calls[id] != 1 {
			t.Fatalf("row %s existed for the whole cycle and was asked %d times, want 1", id, calls[id])
		}
	}
	for id, c := range calls {
		if c != 1 {
			t.Fatalf("%s asked %d times in one cycle", id, c)
		}
	}
	t.Logf("%d rows asked, %d deleted during the cycle", len(calls), len(gone))
}

func TestTwoReconcilersRacingOnOneJobNeverDuplicate(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	// Every 10th row drifts: pending locally, succeeded externally.
	if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, updated_at)
		SELECT i, 'pi_' || i, CASE WHEN i % 10 = 0 THEN 'pending' ELSE 'paid' END, now() - interval '1 hour'
		FROM generate_series(1, 2000) i`); err != nil {
		t.Fatal(err)
	}
	gw := reconciletest.NewGateway(states(2000, "succeeded"))
	cfg := reconcile.Config[string, string]{Job: "race", Source: s, Sink: s, Gateway: gw, Classifier: reconciletest.Classifier(), BatchSize: 50}
	var lost atomic.Int32
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _ := reconcile.New(cfg)
			for cycles := 0; cycles < 2; {
				rep, err := r.RunBatch(ctx)
				if errors.Is(err, reconcile.ErrConcurrentRun) {
					lost.Add(1)
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				if rep.Wrapped {
					cycles++
				}
			}
		}()
	}
	wg.Wait()
	f := fixture{pool, s}
	if fs, cmds := f.Findings(t, "race"), f.Commands(t, "race"); len(fs) != 200 || len(cmds) != 200 {
		t.Fatalf("%d findings and %d commands, want 200 of each", len(fs), len(cmds))
	}
	t.Logf("%d batches lost the cursor race", lost.Load())
}

func TestStatusReportsLagCyclesAndOpenFindings(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	f := fixture{pool, s}
	f.Insert(t, reconciletest.Row{ID: 1, ExternalID: "pi_1", Local: "pending"}, reconciletest.Row{ID: 2, ExternalID: "pi_2", Local: "paid"},
		reconciletest.Row{ID: 3, ExternalID: "pi_3", Local: "paid"})
	gw := reconciletest.NewGateway(map[string]string{"pi_1": "succeeded", "pi_2": "canceled", "pi_3": "succeeded"})
	st, err := s.Status(ctx, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	// Rows were created a day ago (the table default) and never verified.
	if st.Lag < 23*time.Hour || st.Rows != 3 || st.CyclesCompleted != 0 || !st.CycleStartedAt.IsZero() {
		t.Fatalf("before any batch: %+v; want a lag of about a day, 3 rows, no cycle", st)
	}
	cfg := reconciletest.Config(f, "sweep", gw, 2)
	reconciletest.Cycle(t, cfg, 5)
	st, err = s.Status(ctx, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	if since, ok := st.SinceLastCycle(); st.Lag > time.Minute || st.CyclesCompleted != 1 || !ok || since > time.Minute {
		t.Fatalf("after a cycle: %+v; want a small lag and one completed cycle", st)
	}
	if st.OpenFindings["missed_success"] != 1 || st.OpenFindings["paid_locally_not_externally"] != 1 || st.OldestOpenFinding.IsZero() {
		t.Fatalf("open findings %v (oldest %v), want one of each kind", st.OpenFindings, st.OldestOpenFinding)
	}
	// An outage: nothing can be verified, the lag keeps growing, the ratio says why.
	for _, id := range []string{"pi_1", "pi_2", "pi_3"} {
		gw.Set(id, "!unavailable")
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := reconcile.RunBatch(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	st2, err := s.Status(ctx, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	if st2.Lag <= st.Lag || st2.UnverifiableRatio() != 1 || st2.LastBatchScanned != 2 {
		t.Fatalf("during the outage: lag %v (was %v), unverifiable ratio %v; want a growing lag and ratio 1", st2.Lag, st.Lag, st2.UnverifiableRatio())
	}
}
