package pgledger_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgledger"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/tieout"
)

// A timestamp without time zone within a day of either end of PostgreSQL's calendar, cast to
// timestamptz in a session zone whose offset takes it past the end (New York at the top, Tokyo
// at the bottom), failed every Booked and Unpaid call ("timestamp out of range") and stopped
// the tie-out for good. Such a time is read as UTC: at the top it is settled in the future, at
// the bottom long past (never paid out, as '-infinity'). date columns, whose calendar runs on
// to 5874897, the same.
func TestTimesAtTheCalendarsEndsStopNoCall(t *testing.T) {
	t.Parallel()
	for _, zone := range []string{"America/New_York", "Asia/Tokyo"} {
		for _, typ := range []string{"timestamp without time zone", "timestamptz", "date"} {
			t.Run(zone+"/"+typ, func(t *testing.T) {
				t.Parallel()
				base := pgtest.Pool(t)
				cfg := base.Config()
				cfg.ConnConfig.RuntimeParams["timezone"] = zone
				pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(pool.Close)
				ctx := context.Background()
				ddl := `CREATE TABLE payments (id bigint PRIMARY KEY, intent text, amount bigint, currency text,
					paid_at ` + typ + `, available_on ` + typ + `, payout text);
					INSERT INTO payments VALUES
						(1, 'pi_old', 100, 'usd', '2026-04-01', NULL, NULL),
						(2, 'pi_top', 200, 'usd', '294276-12-31 23:00:00', NULL, NULL),
						(3, 'pi_avail_top', 300, 'usd', '2026-04-01', '294276-12-31 23:00:00', NULL),
						(4, 'pi_4713bc', 400, 'usd', '4713-01-01 01:00:00 BC', NULL, NULL),
						(5, 'pi_bottom', 500, 'usd', '4714-11-24 01:00:00 BC', NULL, NULL),
						(6, 'pi_avail_bottom', 600, 'usd', '4714-11-24 01:00:00 BC', '4714-11-24 01:00:00 BC', NULL),
						(7, 'pi_after', 700, 'usd', '2026-04-01', NULL, NULL)`
				if typ == "timestamptz" { // the same instants, in UTC: the session's zone would take them out of range
					ddl = strings.NewReplacer("23:00:00'", "23:00:00+00'", "01:00:00 BC'", "01:00:00+00 BC'").Replace(ddl)
				}
				if typ == "date" {
					ddl += `, (8, 'pi_date_top', 800, 'usd', '5874897-12-31', NULL, NULL)`
				}
				if _, err := pool.Exec(ctx, ddl); err != nil {
					t.Fatal(err)
				}
				l, err := pgledger.New(pool, pgledger.Config{Tables: []pgledger.Table{{Name: "payments", Kind: tieout.KindPayment,
					IDColumn: "intent", SettledAtColumn: "paid_at", AvailableOnColumn: "available_on", GroupColumn: "payout"}}})
				if err != nil {
					t.Fatal(err)
				}
				ahead := t0.Add(reconcile.MaxClockSkew)
				var found []string
				pos := ""
				for range 10 {
					p, err := l.Unpaid(ctx, tieout.UnpaidRequest{After: pos, Before: t0.Add(-7 * day), Ahead: ahead, Limit: 2})
					if err != nil {
						t.Fatalf("Unpaid: %v", err)
					}
					for _, f := range tieout.ClassifyUnpaid(p.Records, ahead) {
						found = append(found, f.Record+" "+f.Decision.Kind)
					}
					if len(p.Records) < 2 {
						break
					}
					pos = p.Next
				}
				want := []string{"pi_old never_paid_out", "pi_top settled_in_future", "pi_avail_top settled_in_future",
					"pi_4713bc never_paid_out", "pi_bottom never_paid_out", "pi_avail_bottom never_paid_out", "pi_after never_paid_out"}
				if typ == "date" {
					want = append(want, "pi_date_top settled_in_future")
				}
				if diff := cmp.Diff(want, found); diff != "" {
					t.Errorf("findings (-want +got):\n%s", diff)
				}
				keys := []tieout.Key{key(tieout.KindPayment, "pi_top"), key(tieout.KindPayment, "pi_avail_top"),
					key(tieout.KindPayment, "pi_bottom"), key(tieout.KindPayment, "pi_date_top")}
				got, err := l.Booked(ctx, keys)
				if err != nil {
					t.Fatalf("Booked: %v", err)
				}
				n := 3
				if typ == "date" {
					n = 4
				}
				if len(got) != n {
					t.Errorf("Booked returned %d records, want %d", len(got), n)
				}
				for _, b := range got {
					switch b.ID {
					case "pi_top", "pi_date_top":
						if !b.SettledAt.After(ahead) {
							t.Errorf("%s settled at %v", b.ID, b.SettledAt)
						}
					case "pi_avail_top":
						if !b.AvailableOn.After(ahead) {
							t.Errorf("%s available on %v", b.ID, b.AvailableOn)
						}
					case "pi_bottom":
						if b.SettledAt.IsZero() || b.SettledAt.Year() > -4712 {
							t.Errorf("%s settled at %v", b.ID, b.SettledAt)
						}
					}
				}
			})
		}
	}
}
