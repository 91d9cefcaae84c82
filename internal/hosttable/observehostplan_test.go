package hosttable_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/hosttable"
	"github.com/reconcilekit/reconcile/internal/shardtest"
)

// hashOrMergeSemiJoin is a semi-join by hash (either side hashed) or by merge.
var hashOrMergeSemiJoin = regexp.MustCompile(`(Hash (Right )?|Merge )Semi Join`)

// A host may set planner settings on its role or database (ALTER ROLE ... SET), which every
// session of the store then starts with. Under each, a sweep's observations statement still
// joins one index scan of the batch's range to the batch by hash or by merge: not a nested loop
// comparing every row of the batch with every row of the range, nor a scan of the whole table.
// With a key that is the id and with a composite key, whose range is not in the id's order.
func TestTheObservationsOfASweepScanTheRangeOnceUnderTheHostsPlannerSettings(t *testing.T) {
	t.Parallel()
	for _, k := range []struct {
		name  string
		cfg   pgstore.Config
		ddl   []string
		index string
		rng   [2]string
	}{
		{"id key", pgstore.Config{}, nil, "payments_pkey", [2]string{"[0]", "[10]"}},
		{"created_at and id key", pgstore.Config{KeyColumns: []string{"created_at", "id"}},
			[]string{shardtest.PaymentsDDL, `CREATE UNIQUE INDEX payments_created_id ON payments (created_at, id)`}, "payments_created_id",
			[2]string{`["2020-01-01T00:00:00+00:00", 0]`, `["2020-01-01T00:00:10+00:00", 10]`}},
	} {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			testObserveRangePlans(t, k.cfg, k.ddl, k.index, k.rng)
		})
	}
}

func testObserveRangePlans(t *testing.T, cfg pgstore.Config, ddl []string, index string, rng [2]string) {
	pool, s := shardtest.NewStore(t, cfg, ddl...)
	ctx := context.Background()
	spec, err := s.HostTable(hosttable.Key{}).Spec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, created_at)
		SELECT i, 'pi_' || i, 'paid', '2020-01-01'::timestamptz + make_interval(secs => i) FROM generate_series(1, 20000) i`); err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{`SET enable_hashjoin = off`, `SET work_mem = '64kB'`, `SET enable_mergejoin = off`,
		`SET plan_cache_mode = force_custom_plan`} {
		t.Run(host, func(t *testing.T) {
			conn, err := pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Release()
			// The host's setting, as a session starts with it; reset before the connection goes back.
			if _, err := conn.Exec(ctx, host); err != nil {
				t.Fatal(err)
			}
			defer conn.Exec(ctx, `RESET ALL`) //nolint:errcheck // the pool's next user gets the defaults back
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck // read only
			for _, set := range [][]any{{hosttable.SetTimeZone, "UTC"}, {hosttable.JoinByHash}} {
				if _, err := tx.Exec(ctx, set[0].(string), set[1:]...); err != nil {
					t.Fatal(err)
				}
			}
			rows, err := tx.Query(ctx, `EXPLAIN `+spec.ObserveInRange[1], "sweep", "{1,2,3,4,5,6,7,8,9,10}", "{a,a,a,a,a,a,a,a,a,a}",
				"{1,1,1,1,1,1,1,1,1,1}", "{NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL}", rng[0], rng[1])
			if err != nil {
				t.Fatal(err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			p := strings.Join(lines, "\n")
			if !hashOrMergeSemiJoin.MatchString(p) || !strings.Contains(p, "Index Scan using "+index+" on payments h") ||
				strings.Contains(p, "Nested Loop") || strings.Contains(p, "Seq Scan") {
				t.Fatalf("under %q, ObserveInRange planned as\n%s\nwant a hash or merge semi-join to one index scan of the range", host, p)
			}
		})
	}
}
