package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// hostColumnsDDL is a host table with the seed's observation columns and an updated_at trigger
// that sets updated_at to the given SQL expression; typ is the type of its time columns.
func hostColumnsDDL(typ, touch string) []string {
	return []string{fmt.Sprintf(`CREATE TABLE payments (
		id bigint PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
		created_at %[1]s NOT NULL, updated_at %[1]s NOT NULL,
		observed_external_status text, last_reconciled_at %[1]s)`, typ),
		`CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.updated_at := ` + touch + `; RETURN NEW; END$$`,
		`CREATE TRIGGER touch BEFORE UPDATE ON payments FOR EACH ROW EXECUTE FUNCTION touch()`}
}

func TestHostColumnsWithANaiveUpdatedAtTriggerKeepTheHostsTimesInItsZone(t *testing.T) {
	t.Parallel()
	for _, touch := range []string{"now()", "clock_timestamp()"} {
		t.Run(touch, func(t *testing.T) {
			t.Parallel()
			cfg := pgstore.Config{Observations: pgstore.ObserveInHostColumns, TimeZone: "UTC"}
			pool, _ := newStore(t, cfg, hostColumnsDDL("timestamp", touch)...)
			ctx := context.Background()
			if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, created_at, updated_at)
				SELECT i, 'pi_' || i, 'paid', (now() AT TIME ZONE 'UTC') - interval '1 day', (now() AT TIME ZONE 'UTC') - interval '1 hour'
				FROM generate_series(1, 3) i`); err != nil {
				t.Fatal(err)
			}
			// The reconciler's pool has sessions in Tokyo; the host's times are in UTC.
			cfg.Table = "payments"
			s, err := pgstore.New(variant(t, pool, map[string]string{"timezone": "Asia/Tokyo"}, nil), cfg)
			if err != nil {
				t.Fatal(err)
			}
			jc := reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Gateway: reconciletest.NewGateway(states(3, "succeeded")),
				Classifier: reconciletest.Classifier(), BatchSize: 10}
			for cycle := range 3 {
				reps := reconciletest.Cycle(t, jc, 3)
				if reps[0].Verdicts[reconcile.InSync] != 3 {
					t.Fatalf("cycle %d: verdicts %v; want every row in sync, none in flight from the reconciler's own write", cycle, reps[0].Verdicts)
				}
				var future int
				if err := pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE updated_at > (now() AT TIME ZONE 'UTC') + interval '1 minute'`).Scan(&future); err != nil || future != 0 {
					t.Fatalf("cycle %d: %d rows with an updated_at in the future (%v); the trigger wrote the reconciler's session zone", cycle, future, err)
				}
			}
		})
	}
}

func TestHostColumnsOwnWriteIsRecognisedAfterALockWait(t *testing.T) {
	t.Parallel()
	for _, touch := range []string{"now()", "clock_timestamp()"} {
		t.Run(touch, func(t *testing.T) {
			t.Parallel()
			pool, s := newStore(t, pgstore.Config{Observations: pgstore.ObserveInHostColumns}, hostColumnsDDL("timestamptz", touch)...)
			ctx := context.Background()
			const n = 40
			if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, created_at, updated_at)
				SELECT i, 'pi_' || i, 'paid', now() - interval '1 day', now() - interval '1 hour' FROM generate_series(1, $1) i`, n); err != nil {
				t.Fatal(err)
			}
			// While the batch asks the gateway, a host transaction takes row 10's lock and holds
			// it for 2 s: the batch's commit waits for it.
			var once sync.Once
			var wg sync.WaitGroup
			locked := make(chan error, 1)
			gw := reconcile.GatewayFunc[string](func(ctx context.Context, id string) (string, error) {
				once.Do(func() {
					wg.Add(1)
					go func() {
						defer wg.Done()
						tx, err := pool.Begin(context.Background())
						if err != nil {
							locked <- err
							return
						}
						defer tx.Rollback(context.Background())
						if _, err := tx.Exec(context.Background(), `SELECT 1 FROM payments WHERE id = 10 FOR UPDATE`); err != nil {
							locked <- err
							return
						}
						locked <- nil
						time.Sleep(2 * time.Second)
						tx.Commit(context.Background())
					}()
					if err := <-locked; err != nil {
						t.Error(err)
					}
				})
				return "succeeded", nil
			})
			jc := reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Gateway: gw,
				Classifier: reconciletest.Classifier(), BatchSize: 100}
			start := time.Now()
			reps := reconciletest.Cycle(t, jc, 3)
			wg.Wait()
			if waited := time.Since(start); waited < 2*time.Second || reps[0].Verdicts[reconcile.InSync] != n {
				t.Fatalf("first cycle: verdicts %v after %v; want all %d in sync after waiting for the lock", reps[0].Verdicts, waited, n)
			}
			for cycle := 1; cycle <= 2; cycle++ {
				reps = reconciletest.Cycle(t, jc, 3)
				if reps[0].Verdicts[reconcile.InSync] != n {
					t.Fatalf("cycle %d after the lock wait: verdicts %v; want all %d in sync, none in flight", cycle, reps[0].Verdicts, n)
				}
			}
		})
	}
}
