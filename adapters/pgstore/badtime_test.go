package pgstore_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgshard"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// lagAbout fails the test unless lag is within a minute of want.
func lagAbout(t *testing.T, what string, lag, want time.Duration) {
	t.Helper()
	if d := lag - want; d < -time.Minute || d > time.Minute {
		t.Fatalf("%s: lag %v, want about %v", what, lag, want)
	}
}

func TestLagSurvivesAZeroTimeCreatedAtAndIsNeverNegative(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	// Row 1 has Go's zero time.Time as its creation, row 2 has gone 100 days unverified, row 3
	// was created in the future (a clock ahead).
	if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, created_at, updated_at) VALUES
		(1, 'pi_1', 'paid', '0001-01-01 00:00:00+00', now() - interval '1 hour'),
		(2, 'pi_2', 'paid', now() - interval '100 days', now() - interval '1 hour'),
		(3, 'pi_3', 'paid', now() + interval '1 day', now() - interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	st, err := s.Status(ctx, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	lagAbout(t, "a zero-time row beside a row 100 days old", st.Lag, 100*24*time.Hour)

	j := shardtest.NewJob(t, s, pgshard.Config{Job: "sharded", Shards: 3})
	if err := j.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	ss, err := j.ShardStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lagAbout(t, "sharded job", ss.Lag, 100*24*time.Hour)
	var worst time.Duration
	for _, sh := range ss.Shards {
		if sh.Lag < 0 {
			t.Fatalf("shard %d: lag %v is negative", sh.Shard, sh.Lag)
		}
		worst = max(worst, sh.Lag)
	}
	lagAbout(t, "slowest shard", worst, 100*24*time.Hour)

	// The zero-time row and the row created a day ahead (more than reconcile.MaxClockSkew: an
	// impossible time) are invalid rows to review; row 2 is verified.
	gw := reconciletest.NewGateway(states(3, "succeeded"))
	reconciletest.Cycle(t, reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Gateway: gw,
		Classifier: reconciletest.Classifier(), BatchSize: 2}, 5)
	if gw.Calls("pi_1") != 0 || gw.Calls("pi_2") != 1 || gw.Calls("pi_3") != 0 {
		t.Fatalf("calls %d, %d, %d; want 0, 1, 0", gw.Calls("pi_1"), gw.Calls("pi_2"), gw.Calls("pi_3"))
	}
	fs, err := s.ListFindings(ctx, reconcile.FindingQuery{Job: "sweep"})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 || fs[0].RecordID != "1" || fs[0].Kind != reconcile.KindInvalidRow ||
		fs[1].RecordID != "3" || fs[1].Kind != reconcile.KindInvalidRow || !strings.Contains(fs[1].Detail, "created_at") {
		t.Fatalf("findings %+v; want invalid_row findings for rows 1 and 3", fs)
	}
	if st, err = s.Status(ctx, "sweep"); err != nil || st.Lag < 0 || st.Lag > time.Minute {
		t.Fatalf("after the cycle: lag %v (%v), want under a minute: the zero-time row counts as its open finding, "+
			"the row created in the future has not waited yet", st.Lag, err)
	}

	// A table whose only row was created in the future has no lag, not a negative one.
	pool2, s2 := newStore(t, pgstore.Config{})
	if _, err := pool2.Exec(ctx, `INSERT INTO payments (id, external_id, status, created_at) VALUES (1, 'pi_1', 'paid', now() + interval '1 day')`); err != nil {
		t.Fatal(err)
	}
	if st, err := s2.Status(ctx, "sweep"); err != nil || st.Lag != 0 {
		t.Fatalf("a row created in the future: lag %v (%v), want 0", st.Lag, err)
	}
}

func TestAnInfiniteTimeBecomesAnInvalidRowFindingAndTheCycleGoesOn(t *testing.T) {
	t.Parallel()
	for _, naive := range []bool{false, true} {
		t.Run(fmt.Sprintf("naive=%v", naive), func(t *testing.T) {
			t.Parallel()
			typ := "timestamptz"
			if naive {
				typ = "timestamp"
			}
			pool, s := newStore(t, pgstore.Config{}, `CREATE TABLE payments (
				id bigint PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
				created_at `+typ+` NOT NULL DEFAULT now() - interval '1 day',
				updated_at `+typ+` NOT NULL DEFAULT now() - interval '1 hour')`)
			ctx := context.Background()
			if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status) SELECT i, 'pi_' || i, 'paid' FROM generate_series(1, 7) i;
				UPDATE payments SET created_at = 'infinity' WHERE id = 2;
				UPDATE payments SET created_at = '-infinity' WHERE id = 3;
				UPDATE payments SET updated_at = 'infinity' WHERE id = 4;
				UPDATE payments SET updated_at = '-infinity' WHERE id = 5`); err != nil {
				t.Fatal(err)
			}
			st, err := s.Status(ctx, "sweep")
			if err != nil {
				t.Fatalf("Status with infinite times: %v", err)
			}
			lagAbout(t, "before the cycle", st.Lag, 24*time.Hour)

			gw := reconciletest.NewGateway(states(7, "succeeded"))
			reconciletest.Cycle(t, reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Gateway: gw,
				Classifier: reconciletest.Classifier(), BatchSize: 2}, 10)
			for i, want := range []int{1, 0, 0, 0, 0, 1, 1} {
				if n := gw.Calls(fmt.Sprintf("pi_%d", i+1)); n != want {
					t.Fatalf("pi_%d asked %d times, want %d", i+1, n, want)
				}
			}
			fs, err := s.ListFindings(ctx, reconcile.FindingQuery{Job: "sweep"})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"2": "created_at is infinity", "3": "created_at is -infinity",
				"4": "updated_at is infinity", "5": "updated_at is -infinity"}
			if len(fs) != len(want) {
				t.Fatalf("findings %+v; want %d invalid_row findings", fs, len(want))
			}
			for _, f := range fs {
				if f.Kind != reconcile.KindInvalidRow || f.Detail != want[f.RecordID] {
					t.Fatalf("finding %+v; want invalid_row %q", f, want[f.RecordID])
				}
			}
			if st, err = s.Status(ctx, "sweep"); err != nil || st.Lag < 0 || st.Lag > time.Minute || st.OpenFindings[reconcile.KindInvalidRow] != 4 {
				t.Fatalf("after the cycle: %+v, %v; want lag under a minute and 4 open invalid_row findings", st, err)
			}

			// A lane's match says the same.
			recs := laneMatch(t, s, reconcile.MatchRequest{Job: "sweep", ExternalIDs: []string{"pi_1", "pi_2", "pi_4"}})
			if len(recs) != 3 || recs[0].Invalid != "" || recs[1].Invalid != want["2"] || recs[2].Invalid != want["4"] {
				t.Fatalf("Match: %+v; want row 1 valid, rows 2 and 4 invalid", recs)
			}

			// So does a sharded job.
			j := shardtest.NewJob(t, s, pgshard.Config{Job: "sharded", Shards: 2})
			shardtest.RunCycle(t, s, []*pgshard.Job[string]{j}, shardtest.EngineConfig(gw, 2), 1, 40)
			if _, err := j.ShardStatus(ctx); err != nil {
				t.Fatalf("ShardStatus: %v", err)
			}
		})
	}
}

func TestNegativeGraceTurnsGraceOffEvenForAFutureUpdatedAt(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t, pgstore.Config{})
	ctx := context.Background()
	// Row 1 was changed a minute ahead of the database's clock, within reconcile.MaxClockSkew.
	if _, err := pool.Exec(ctx, `INSERT INTO payments (id, external_id, status, updated_at) VALUES
		(1, 'pi_1', 'paid', now() + interval '1 minute'), (2, 'pi_2', 'paid', now())`); err != nil {
		t.Fatal(err)
	}
	gw := reconciletest.NewGateway(states(2, "succeeded"))
	rep, err := reconcile.RunBatch(ctx, reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Gateway: gw,
		Classifier: reconciletest.Classifier(), BatchSize: 10, Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdicts[reconcile.InSync] != 2 {
		t.Fatalf("verdicts %v with the grace period off; want both rows asked and in sync", rep.Verdicts)
	}
	recs := laneMatch(t, s, reconcile.MatchRequest{Job: "sweep", ExternalIDs: []string{"pi_1", "pi_2"}})
	if len(recs) != 2 || recs[0].Recent || recs[1].Recent {
		t.Fatalf("Match with no grace: %+v; want neither row recent", recs)
	}
	// With a grace period, both are recent.
	recs = laneMatch(t, s, reconcile.MatchRequest{Job: "sweep", ExternalIDs: []string{"pi_1", "pi_2"}, Grace: time.Minute})
	if len(recs) != 2 || !recs[0].Recent || !recs[1].Recent {
		t.Fatalf("Match with a grace: %+v; want both rows recent", recs)
	}
}

// A time more than reconcile.MaxClockSkew ahead of the database's clock is impossible: Read,
// Match and a sharded job's reads make its row an invalid_row finding, in either column type
// (a timestamp without time zone read in Config.TimeZone), where the row would otherwise be
// recent at every read and its drift never found. A time within the skew is as it always was.
// Such a row's lag can be computed, so Status keeps counting it while it goes unverified.
func TestAFutureTimeBecomesAnInvalidRowFinding(t *testing.T) {
	t.Parallel()
	// A naive time at the end of the calendar read in New York's time, or at its start in
	// Tokyo's, would overflow timestamptz and fail every read: each is read as UTC.
	for _, zone := range []string{"", "America/New_York", "Asia/Tokyo"} {
		t.Run(fmt.Sprintf("zone=%q", zone), func(t *testing.T) {
			t.Parallel()
			typ, cfg, now := "timestamptz", pgstore.Config{}, "now()"
			if zone != "" {
				typ, cfg.TimeZone, now = "timestamp", zone, fmt.Sprintf("(now() AT TIME ZONE '%s')", zone)
			}
			pool, s := newStore(t, cfg, `CREATE TABLE payments (
				id bigint PRIMARY KEY, external_id text NOT NULL, status text NOT NULL,
				created_at `+typ+` NOT NULL, updated_at `+typ+` NOT NULL)`)
			ctx := context.Background()
			// Rows 1 and 2 were changed or created a decade ahead, row 3 at infinity, row 4 a
			// minute ahead (within the skew), row 5 at the end of the calendar, row 6 an hour
			// ago, row 7 created at the calendar's start; all created a day ago unless said.
			if _, err := pool.Exec(ctx, fmt.Sprintf(`INSERT INTO payments VALUES
				(1, 'pi_1', 'paid', %[1]s - interval '1 day', %[1]s + interval '10 years'),
				(2, 'pi_2', 'paid', %[1]s + interval '10 years', %[1]s - interval '1 hour'),
				(3, 'pi_3', 'paid', %[1]s - interval '1 day', 'infinity'),
				(4, 'pi_4', 'paid', %[1]s - interval '1 day', %[1]s + interval '1 minute'),
				(5, 'pi_5', 'paid', %[1]s - interval '1 day', '294276-12-31 23:59:59'),
				(6, 'pi_6', 'paid', %[1]s - interval '1 day', %[1]s - interval '1 hour'),
				(7, 'pi_7', 'paid', '4714-11-24 00:00:00 BC', %[1]s - interval '1 hour')`, now)); err != nil {
				t.Fatal(err)
			}
			gw := reconciletest.NewGateway(states(7, "canceled"))
			reconciletest.Cycle(t, reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Gateway: gw,
				Classifier: reconciletest.Classifier(), BatchSize: 2}, 10)
			for i, want := range []int{0, 0, 0, 0, 0, 1, 0} {
				if n := gw.Calls(fmt.Sprintf("pi_%d", i+1)); n != want {
					t.Fatalf("pi_%d asked %d times, want %d", i+1, n, want)
				}
			}
			future := func(col string, year int) *regexp.Regexp {
				return regexp.MustCompile(fmt.Sprintf(`^%s %d-\d\d-\d\d \d\d:\d\d:\d\d UTC is in the future: more than 5m0s ahead of the database's clock$`, col, year))
			}
			decade := time.Now().Year() + 10
			want := map[string]*regexp.Regexp{"1": future("updated_at", decade), "2": future("created_at", decade),
				"3": regexp.MustCompile(`^updated_at is infinity$`), "5": future("updated_at", 294276),
				"6": regexp.MustCompile(`^$`), "7": regexp.MustCompile(`^created_at 4714-11-2\d \d\d:\d\d:\d\d UTC is before 1900$`)}
			fs, err := s.ListFindings(ctx, reconcile.FindingQuery{Job: "sweep"})
			if err != nil {
				t.Fatal(err)
			}
			if len(fs) != len(want) {
				t.Fatalf("findings %+v; want invalid_row findings of rows 1, 2, 3, 5 and 7, and row 6's drift", fs)
			}
			for _, f := range fs {
				if (f.RecordID == "6") != (f.Kind == "paid_locally_not_externally") || (f.RecordID != "6" && f.Kind != reconcile.KindInvalidRow) ||
					want[f.RecordID] == nil || !want[f.RecordID].MatchString(f.Detail) {
					t.Fatalf("finding %+v; want detail matching %v", f, want[f.RecordID])
				}
			}
			// Rows 1, 2, 4 and 5 are unverified; rows 1, 4 and 5 were created a day ago (rows 3
			// and 7 have times no lag is computed from).
			st, err := s.Status(ctx, "sweep")
			if err != nil || st.OpenFindings[reconcile.KindInvalidRow] != 5 {
				t.Fatalf("Status %+v, %v; want 5 open invalid_row findings", st, err)
			}
			lagAbout(t, "rows unverified for their impossible times", st.Lag, 24*time.Hour)

			recs := laneMatch(t, s, reconcile.MatchRequest{Job: "sweep", ExternalIDs: []string{"pi_1", "pi_4"}, Grace: time.Minute})
			if len(recs) != 2 || !want["1"].MatchString(recs[0].Invalid) || recs[1].Invalid != "" || !recs[1].Recent {
				t.Fatalf("Match: %+v; want row 1 invalid and row 4 valid and recent", recs)
			}

			j := shardtest.NewJob(t, s, pgshard.Config{Job: "sharded", Shards: 2})
			shardtest.RunCycle(t, s, []*pgshard.Job[string]{j}, shardtest.EngineConfig(gw, 2), 1, 40)
			if n, m := gw.Calls(""), gw.Calls("pi_6"); n != 2 || m != 2 {
				t.Fatalf("after a sharded cycle: %d calls, %d about pi_6; want only pi_6 asked again", n, m)
			}
			sfs, err := s.ListFindings(ctx, reconcile.FindingQuery{Job: "sharded", Kind: reconcile.KindInvalidRow})
			if err != nil || len(sfs) != 5 {
				t.Fatalf("sharded job's invalid_row findings %+v, %v; want 5", sfs, err)
			}
		})
	}
}
