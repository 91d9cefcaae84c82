package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// A webhook's canonical writer resolves a record's open findings (ResolveRecordFindings) while
// a sweep's commit opens a new finding of that record, which locks the record's open findings
// in the order of their kinds. Row 1 has two open findings, b_second opened before a_first. The
// webhook must lock them in the commits' order too, whatever order its update visits them in
// (here the table's, b_second first): else the sweep holds a_first and waits for b_second
// while the webhook holds b_second and waits for a_first, a deadlock, and one of them fails.
// A trigger holds the webhook's update at b_second, once it is locked, until the sweep waits.
func TestAWebhookResolvingARecordsFindingsTakesTurnsWithASweepOpeningOne(t *testing.T) {
	t.Parallel()
	base, _ := newStore(t, pgstore.Config{})
	ctx := context.Background()
	insertPayments(t, base, 1)
	app := func(who string) string { return fmt.Sprintf("webhookorder %s %p", who, t) }
	exec(t, base, `INSERT INTO reconcile_findings (job, record_id, kind, local_state) VALUES ('sweep', '1', 'b_second', 'paid'), ('sweep', '1', 'a_first', 'paid')`)
	// The advisory lock's key: this test's schema's, so that parallel tests do not share it.
	var key int64
	if err := base.QueryRow(ctx, `SELECT hashtext(current_schema())`).Scan(&key); err != nil {
		t.Fatal(err)
	}
	exec(t, base, fmt.Sprintf(`CREATE FUNCTION hold_webhook() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF current_setting('application_name') = %s AND OLD.kind = 'b_second' THEN
				PERFORM pg_advisory_lock(%d); PERFORM pg_advisory_unlock(%d);
			END IF;
			RETURN NEW;
		END $$`, quoteLiteral(app("webhook")), key, key))
	exec(t, base, `CREATE TRIGGER hold_webhook BEFORE UPDATE ON reconcile_findings FOR EACH ROW EXECUTE FUNCTION hold_webhook()`)
	storeAs := func(who string) (*pgxpool.Pool, *pgstore.Store[string]) {
		pc := base.Config()
		pc.ConnConfig.RuntimeParams["application_name"] = app(who)
		pc.ConnConfig.RuntimeParams["deadlock_timeout"] = "100ms"
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		s, err := pgstore.New(pool, pgstore.Config{Table: "payments"})
		if err != nil {
			t.Fatal(err)
		}
		return pool, s
	}
	_, sweep := storeAs("sweep")
	webhookPool, webhook := storeAs("webhook")

	b, err := sweep.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 10})
	if err != nil || len(b.Records) != 1 {
		t.Fatalf("read %d rows (%v); want 1", len(b.Records), err)
	}
	r := b.Records[0]
	drift := reconcile.Outcome{RecordID: r.ID, ExternalID: r.ExternalID, Local: "paid", External: "failed", Verified: true, Version: r.Version,
		Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "c_new"}}

	holder, err := base.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		t.Fatal(err)
	}
	waiting := func(who string) {
		t.Helper()
		for {
			var n int
			if err := base.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
				app(who)).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	webhookErr, sweepErr := make(chan error, 1), make(chan error, 1)
	go func() {
		tx, err := webhookPool.Begin(ctx)
		if err != nil {
			webhookErr <- err
			return
		}
		defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
		if _, err := webhook.ResolveRecordFindings(ctx, tx, "1", nil, reconcile.Resolution{As: reconcile.ResolutionFixed, By: "stripe-webhook"}); err != nil {
			webhookErr <- err
			return
		}
		webhookErr <- tx.Commit(ctx)
	}()
	waiting("webhook")
	go func() {
		_, err := sweep.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Next: r.Key, Outcomes: []reconcile.Outcome{drift}})
		sweepErr <- err
	}()
	waiting("sweep")
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
		t.Fatal(err)
	}
	for who, ch := range map[string]chan error{"webhook": webhookErr, "sweep": sweepErr} {
		if err := <-ch; err != nil {
			var pe *pgconn.PgError
			t.Errorf("the %s: %v (deadlock: %v); want both to commit in turn", who, err, errors.As(err, &pe) && pe.Code == "40P01")
		}
	}
	var open []string
	rows, err := base.Query(ctx, `SELECT kind FROM reconcile_findings WHERE resolved_at IS NULL ORDER BY kind`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		open = append(open, k)
	}
	if len(open) != 1 || open[0] != "c_new" {
		t.Fatalf("open findings %v; want the sweep's c_new alone, the webhook having resolved the others", open)
	}
}

// quoteLiteral is s as an SQL string literal.
func quoteLiteral(s string) string {
	out := "'"
	for _, c := range s {
		if c == '\'' {
			out += "'"
		}
		out += string(c)
	}
	return out + "'"
}
