package pgstore

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// itemsDDL has a nullable column of each kind a filter compares: text, bigint, timestamptz,
// timestamp without time zone (written in UTC) and date.
const itemsDDL = `CREATE TABLE items (
	id            bigint PRIMARY KEY,
	external_id   text NOT NULL,
	status        text,
	amount        bigint,
	created_at    timestamptz,
	updated_at    timestamptz NOT NULL DEFAULT now() - interval '1 hour',
	created_naive timestamp,
	created_day   date
)`

// filterItems makes the items table, with rows 30 days old give or take 6 hours on either side
// of a Within 30 days boundary, in a pool whose sessions are 14 hours east of UTC: a naive
// timestamp read in the session's zone instead of Config.TimeZone lands on the wrong side.
func filterItems(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(ctx, itemsDDL); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, pool, Tables{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO items (id, external_id, status, amount, created_at, created_naive, created_day)
		SELECT id, 'pi_' || id, status, amount, now() - age, (now() AT TIME ZONE 'UTC') - age, ((now() AT TIME ZONE 'UTC') - age)::date
		FROM (VALUES
			(1, 'paid', 100, interval '10 days'),
			(2, 'pending', 200, interval '30 days' - interval '6 hours'),
			(3, 'failed', 300, interval '30 days' + interval '6 hours'),
			(4, NULL, NULL, NULL),
			(5, 'paid', 500, interval '400 days')
		) AS v(id, status, amount, age)`); err != nil {
		t.Fatal(err)
	}
	cfg := pool.Config()
	cfg.ConnConfig.RuntimeParams["TimeZone"] = "Pacific/Kiritimati"
	east, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(east.Close)
	return east
}

func TestFilterRendersEveryOpWithBoundParameters(t *testing.T) {
	t.Parallel()
	pool := filterItems(t)
	ctx := context.Background()
	month := 30 * 24 * time.Hour
	one := func(c Cond) Filter { return Filter{AnyOf: [][]Cond{{c}}} }
	hot := [][]Cond{{{Column: "created_at", Op: Within, Value: month}}, {{Column: "status", Op: In, Value: []string{"pending"}}}}
	tests := []struct {
		name   string
		filter Filter
		sql    string // rendered from $3, as in the first read
		ids    []int64
	}{
		{"the zero filter adds no condition", Filter{}, "", []int64{1, 2, 3, 4, 5}},
		{"Eq", one(Cond{"status", Eq, "paid"}), `coalesce((h."status" = $3), false)`, []int64{1, 5}},
		{"Ne", one(Cond{"status", Ne, "paid"}), `coalesce((h."status" <> $3), false)`, []int64{2, 3}},
		{"Lt", one(Cond{"amount", Lt, 200}), `coalesce((h."amount" < $3), false)`, []int64{1}},
		{"Le", one(Cond{"amount", Le, 200}), `coalesce((h."amount" <= $3), false)`, []int64{1, 2}},
		{"Gt", one(Cond{"amount", Gt, int64(200)}), `coalesce((h."amount" > $3), false)`, []int64{3, 5}},
		{"Ge", one(Cond{"amount", Ge, 300}), `coalesce((h."amount" >= $3), false)`, []int64{3, 5}},
		{"In", one(Cond{"status", In, []string{"pending", "failed"}}), `coalesce((h."status" = ANY($3)), false)`, []int64{2, 3}},
		{"NotIn", one(Cond{"status", NotIn, []string{"pending"}}), `coalesce((h."status" <> ALL($3)), false)`, []int64{1, 3, 5}},
		{"NotIn with values of any type", one(Cond{"amount", NotIn, []any{100, int64(200)}}), `coalesce((h."amount" <> ALL($3)), false)`, []int64{3, 5}},
		{"IsNull", one(Cond{"status", IsNull, nil}), `coalesce((h."status" IS NULL), false)`, []int64{4}},
		{"NotNull", one(Cond{"status", NotNull, nil}), `coalesce((h."status" IS NOT NULL), false)`, []int64{1, 2, 3, 5}},
		{"Within on a timestamptz", one(Cond{"created_at", Within, month}), `coalesce((h."created_at" >= now() - $3::interval), false)`, []int64{1, 2}},
		{"OlderThan on a timestamptz", one(Cond{"created_at", OlderThan, month}), `coalesce((h."created_at" < now() - $3::interval), false)`, []int64{3, 5}},
		{"Within on a timestamp without time zone, in Config.TimeZone whatever the session's",
			one(Cond{"created_naive", Within, month}), `coalesce((h."created_naive" >= (now() - $3::interval) AT TIME ZONE 'UTC'), false)`, []int64{1, 2}},
		{"OlderThan on a timestamp without time zone",
			one(Cond{"created_naive", OlderThan, month}), `coalesce((h."created_naive" < (now() - $3::interval) AT TIME ZONE 'UTC'), false)`, []int64{3, 5}},
		{"Within on a date", one(Cond{"created_day", Within, 100 * 24 * time.Hour}),
			`coalesce((h."created_day" >= (now() - $3::interval) AT TIME ZONE 'UTC'), false)`, []int64{1, 2, 3}},
		{"groups are ORed and their conditions ANDed",
			Filter{AnyOf: [][]Cond{{{"status", Eq, "paid"}, {"amount", Gt, 100}}, {{"status", IsNull, nil}}}},
			`coalesce((h."status" = $3 AND h."amount" > $4) OR (h."status" IS NULL), false)`, []int64{4, 5}},
		{"Not is the complement",
			Filter{AnyOf: [][]Cond{{{"status", Eq, "paid"}, {"amount", Gt, 100}}, {{"status", IsNull, nil}}}, Not: true},
			`NOT coalesce((h."status" = $3 AND h."amount" > $4) OR (h."status" IS NULL), false)`, []int64{1, 2, 3}},
		{"a hot tier", Filter{AnyOf: hot},
			`coalesce((h."created_at" >= now() - $3::interval) OR (h."status" = ANY($4)), false)`, []int64{1, 2}},
		{"its cold complement takes the rows whose conditions are NULL", Filter{AnyOf: hot, Not: true},
			`NOT coalesce((h."created_at" >= now() - $3::interval) OR (h."status" = ANY($4)), false)`, []int64{3, 4, 5}},
		{"Not of an equality takes NULLs", Filter{AnyOf: [][]Cond{{{"status", Eq, "paid"}}}, Not: true},
			`NOT coalesce((h."status" = $3), false)`, []int64{2, 3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(pool, Config{Table: "items", Filter: tt.filter})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Check(ctx); err != nil {
				t.Fatal(err)
			}
			types, err := s.columnTypes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sql, args := renderFilter(s.cfg, types, 3)
			if sql != tt.sql {
				t.Errorf("rendered\n%s\nwant\n%s", sql, tt.sql)
			}
			if strings.Contains(sql, "paid") || strings.Contains(sql, "pending") {
				t.Fatalf("a value was spliced into the SQL: %s", sql)
			}
			// The same text, run after two parameters of its own as the first read has.
			query := `SELECT h.id FROM items AS h WHERE $1::int = $2::int`
			if sql != "" {
				query += " AND " + sql
			}
			rows, err := pool.Query(ctx, query+" ORDER BY h.id", append([]any{1, 1}, args...)...)
			if err != nil {
				t.Fatal(err)
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			if !slices.Equal(ids, tt.ids) {
				t.Fatalf("rows %v, want %v", ids, tt.ids)
			}
		})
	}
}

func TestEveryStatementOverTheJobsRowsAppliesTheFilterAfterItsOwnParameters(t *testing.T) {
	t.Parallel()
	pool := filterItems(t)
	for _, mode := range []Observations{ObserveInOwnTable, ObserveInHostColumns} {
		cfg := Config{Table: "items", Filter: Filter{AnyOf: [][]Cond{{{"status", Eq, "paid"}}}}, Observations: mode,
			ObservedColumn: "status", VerifiedAtColumn: "created_at"}
		s, err := New(pool, cfg)
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.statements(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ name, sql, want string }{
			{"first read", st.spec.KeysetRead(false, false, false, true), `::bigint) AND coalesce((h."status" = $4), false) ORDER BY`},
			{"read after the cursor", st.spec.KeysetRead(true, false, false, true), `::bigint) AND coalesce((h."status" = $5), false) ORDER BY`},
			{"the cycle's last key", st.spec.HighWater(false, false), ` WHERE coalesce((h."status" = $1), false) ORDER BY`},
			{"lag", st.lag, `coalesce((h."status" = $2), false)`},
		} {
			if !strings.Contains(c.sql, c.want) {
				t.Errorf("mode %d: %s statement lacks %q:\n%s", mode, c.name, c.want, c.sql)
			}
		}
		if !slices.Equal(st.filterArgs, []any{"paid"}) {
			t.Errorf("filter arguments %v, want [paid]", st.filterArgs)
		}
	}
}

func TestNewRejectsBadFilters(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	one := func(c Cond) Filter { return Filter{AnyOf: [][]Cond{{c}}} }
	tests := []struct {
		name   string
		filter Filter
		want   string
	}{
		{"an unknown op", one(Cond{"status", "like", "p%"}), `Filter.AnyOf[0][0]: unknown Op "like" on "status"`},
		{"an empty op", one(Cond{"status", "", "paid"}), `Filter.AnyOf[0][0]: unknown Op ""`},
		{"an empty column", one(Cond{"", Eq, "paid"}), "Filter.AnyOf[0][0].Column is empty"},
		{"a column with a quote", one(Cond{`sta"tus`, Eq, "paid"}), `Filter.AnyOf[0][0].Column "sta\"tus" is not a plain SQL identifier`},
		{"a column with a space", one(Cond{"created at", Within, time.Hour}), `Filter.AnyOf[0][0].Column "created at" is not a plain SQL identifier`},
		{"an injection attempt in a column", one(Cond{"status = status; DROP TABLE payments; --", Eq, "x"}), "is not a plain SQL identifier"},
		{"a comparison with no value", one(Cond{"status", Eq, nil}), `"=" on "status" needs a Value (use IsNull or NotNull for NULL)`},
		{"a comparison with a nil pointer", one(Cond{"status", Ne, (*string)(nil)}), `"<>" on "status" needs a Value`},
		{"In with a single value", one(Cond{"status", In, "pending"}), `"in" on "status" needs a slice Value, not string`},
		{"In with no value", one(Cond{"status", In, nil}), `"in" on "status" needs a slice Value, not <nil>`},
		{"NotIn with a []byte", one(Cond{"status", NotIn, []byte("paid")}), "not a []byte"},
		{"In with an empty list", one(Cond{"status", In, []string{}}), `"in" on "status" has an empty list`},
		{"NotIn with a nil slice", one(Cond{"status", NotIn, []string(nil)}), `"not in" on "status" has an empty list`},
		{"IsNull with a value", one(Cond{"status", IsNull, "x"}), `"is null" on "status" takes no Value, got string`},
		{"Within with a number of days", one(Cond{"created_at", Within, 90}), `"within" on "created_at" needs a time.Duration Value, not int`},
		{"Within with a zero duration", one(Cond{"created_at", Within, time.Duration(0)}), `"within" on "created_at" needs a positive duration, not 0s`},
		{"OlderThan with a negative duration", one(Cond{"created_at", OlderThan, -time.Hour}), `needs a positive duration, not -1h0m0s`},
		{"an empty group", Filter{AnyOf: [][]Cond{{{"status", Eq, "paid"}}, {}}}, "Filter.AnyOf[1] is empty"},
		{"a bad condition deep in a group", Filter{AnyOf: [][]Cond{{{"status", Eq, "paid"}}, {{"status", Eq, "x"}, {"amount", Gt, 1}, {"amount", "!=", 2}}}},
			`Filter.AnyOf[1][2]: unknown Op "!="`},
		{"Not of nothing", Filter{Not: true}, "Filter.Not with no AnyOf would select no row"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(pool, Config{Table: "payments", Filter: tt.filter})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "pgstore: config: ") {
				t.Fatalf("New = %v, want a pgstore config error mentioning %s", err, tt.want)
			}
		})
	}
	if _, err := New(pool, Config{Table: "payments", LagJobs: []string{"hot", ""}}); err == nil || !strings.Contains(err.Error(), "LagJobs[1] is empty") {
		t.Fatalf("New with an empty lag job = %v", err)
	}
}

func TestCheckRejectsFiltersTheTableCannotTake(t *testing.T) {
	t.Parallel()
	pool := filterItems(t)
	ctx := context.Background()
	one := func(c Cond) Filter { return Filter{AnyOf: [][]Cond{{c}}} }
	tests := []struct {
		name   string
		filter Filter
		want   string
	}{
		{"an unknown column", Filter{AnyOf: [][]Cond{{{"status", Eq, "paid"}}, {{"crated_at", Within, time.Hour}}}},
			`Filter.AnyOf[1][0]: table "items" has no column "crated_at"`},
		{"Within on a text column", one(Cond{"status", Within, time.Hour}), `"within" needs a timestamp or date column; "status" of "items" is text`},
		{"OlderThan on a bigint column", one(Cond{"amount", OlderThan, time.Hour}), `"older than" needs a timestamp or date column; "amount" of "items" is bigint`},
		{"a value the column cannot take", one(Cond{"amount", Eq, "a lot"}), `pgstore: config: Filter on "items"`},
		{"a list the column cannot take", one(Cond{"created_at", In, []string{"yesterday-ish"}}), `pgstore: config: Filter on "items"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(pool, Config{Table: "items", Filter: tt.filter})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Check(ctx); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v, want an error mentioning %s", err, tt.want)
			}
			if _, err := s.Status(ctx, "j"); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Status = %v, want the same error", err)
			}
		})
	}
}
