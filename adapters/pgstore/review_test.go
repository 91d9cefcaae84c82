package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// reviewWorld runs one cycle over payments 1..6: 1–2 missed successes (Repairable, with a
// command), 3–4 paid locally but canceled at Stripe (NeedsReview), 5–6 in sync.
func reviewWorld(t *testing.T) (fixture, context.Context) {
	t.Helper()
	pool, s := newStore(t, pgstore.Config{StaleAfter: time.Hour}, paymentsDDL)
	f := fixture{pool, s}
	ext := map[string]string{}
	for i := int64(1); i <= 6; i++ {
		local, remote := "paid", "succeeded"
		switch {
		case i <= 2:
			local = "pending"
		case i <= 4:
			remote = "canceled"
		}
		f.Insert(t, reconciletest.Row{ID: i, ExternalID: extIDOf(i), Local: local})
		ext[extIDOf(i)] = remote
	}
	reconciletest.Cycle(t, reconciletest.Config(f, "sweep", reconciletest.NewGateway(ext), 10), 3)
	return f, context.Background()
}

func extIDOf(i int64) string { return "pi_" + string(rune('0'+i)) }

func TestResolvingAndReopeningAreRecordedInTheFindingsHistory(t *testing.T) {
	t.Parallel()
	f, ctx := reviewWorld(t)
	open, err := f.store.ListFindings(ctx, reconcile.FindingQuery{Job: "sweep", Kind: "paid_locally_not_externally"})
	if err != nil || len(open) != 2 {
		t.Fatalf("open NeedsReview findings: %+v, %v; want 2", open, err)
	}
	id := open[0].ID
	if err := f.store.ResolveFinding(ctx, id, reconcile.Resolution{As: reconcile.ResolutionAccepted, By: "alice", Note: "refunded by hand"}); err != nil {
		t.Fatalf("resolve: %v", err)
	}
	if err := f.store.ResolveFinding(ctx, id, reconcile.Resolution{As: reconcile.ResolutionFixed, By: "bob"}); !errors.Is(err, reconcile.ErrAlreadyResolved) {
		t.Fatalf("resolving again = %v; want ErrAlreadyResolved and no change", err)
	}
	if err := f.store.ReopenFinding(ctx, id, "carol", "the refund bounced"); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if err := f.store.ReopenFinding(ctx, id, "dave", ""); !errors.Is(err, reconcile.ErrAlreadyOpen) {
		t.Fatalf("reopening again = %v; want ErrAlreadyOpen", err)
	}
	d, err := f.store.Finding(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range d.History {
		actions = append(actions, e.Action+" by "+e.Actor+": "+e.Resolution+" "+e.Note)
	}
	want := []string{"detected by sweep:  ", "resolved by alice: accepted refunded by hand", "reopened by carol:  the refund bounced"}
	if len(actions) != len(want) {
		t.Fatalf("history %q, want %q", actions, want)
	}
	for i := range want {
		if actions[i] != want[i] {
			t.Fatalf("history %q, want %q", actions, want)
		}
	}
	if !d.Open() || d.Resolution != "" {
		t.Fatalf("finding %+v; want open again", d.Finding)
	}
	for _, bad := range []reconcile.Resolution{{By: "x"}, {As: "fixed"}} {
		if err := f.store.ResolveFinding(ctx, id, bad); err == nil {
			t.Errorf("resolution %+v accepted", bad)
		}
	}
	if err := f.store.ResolveFinding(ctx, 999999, reconcile.Resolution{As: "fixed", By: "x"}); !errors.Is(err, reconcile.ErrFindingNotFound) {
		t.Errorf("resolving a missing finding = %v, want ErrFindingNotFound", err)
	}
}

func TestTheAuditIsAppendOnly(t *testing.T) {
	t.Parallel()
	f, ctx := reviewWorld(t)
	open, err := f.store.ListFindings(ctx, reconcile.FindingQuery{})
	if err != nil || len(open) == 0 {
		t.Fatal(open, err)
	}
	if err := f.store.ResolveFinding(ctx, open[0].ID, reconcile.Resolution{As: "fixed", By: "alice"}); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{`UPDATE reconcile_finding_events SET actor = 'mallory'`, `DELETE FROM reconcile_finding_events`, `TRUNCATE reconcile_finding_events`} {
		if _, err := f.pool.Exec(ctx, sql); err == nil {
			t.Errorf("%s succeeded on the audit table", sql)
		}
	}
}

func TestReopeningDriftThatWasFoundAgainIsRefused(t *testing.T) {
	t.Parallel()
	f, ctx := reviewWorld(t)
	open, _ := f.store.ListFindings(ctx, reconcile.FindingQuery{Kind: "paid_locally_not_externally"})
	id := open[0].ID
	if err := f.store.ResolveFinding(ctx, id, reconcile.Resolution{As: "false_positive", By: "alice"}); err != nil {
		t.Fatal(err)
	}
	// The next cycle finds the same drift again: a new open finding.
	ext := map[string]string{}
	for i := int64(1); i <= 6; i++ {
		ext[extIDOf(i)] = map[bool]string{true: "canceled", false: "succeeded"}[i == 3 || i == 4]
	}
	reconciletest.Cycle(t, reconciletest.Config(f, "sweep", reconciletest.NewGateway(ext), 10), 3)
	// Inside the host's transaction, which must stay usable after the refusal.
	err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		if err := f.store.ReopenFindingIn(ctx, tx, id, "bob", ""); !errors.Is(err, reconcile.ErrFoundAgain) {
			t.Fatalf("reopen = %v, want ErrFoundAgain", err)
		}
		_, err := tx.Exec(ctx, `SELECT 1`)
		return err
	})
	if err != nil {
		t.Fatalf("the transaction was spoiled by the refusal: %v", err)
	}
}

func TestListFindingsFiltersAndPages(t *testing.T) {
	t.Parallel()
	f, ctx := reviewWorld(t)
	all, err := f.store.ListFindings(ctx, reconcile.FindingQuery{State: "all"})
	if err != nil || len(all) != 4 {
		t.Fatalf("all findings: %d, %v; want 4", len(all), err)
	}
	var paged []reconcile.Finding
	for after := int64(0); ; {
		page, err := f.store.ListFindings(ctx, reconcile.FindingQuery{AfterID: after, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		after = page[len(page)-1].ID
	}
	if len(paged) != 4 {
		t.Fatalf("paged through %d findings, want 4", len(paged))
	}
	if got, _ := f.store.ListFindings(ctx, reconcile.FindingQuery{Kind: "missed_success"}); len(got) != 2 {
		t.Errorf("kind filter: %d, want 2", len(got))
	}
	if got, _ := f.store.ListFindings(ctx, reconcile.FindingQuery{Job: "other"}); len(got) != 0 {
		t.Errorf("job filter: %d, want 0", len(got))
	}
	if got, _ := f.store.ListFindings(ctx, reconcile.FindingQuery{RecordID: "3"}); len(got) != 1 {
		t.Errorf("record filter: %d, want 1", len(got))
	}
	if got, _ := f.store.ListFindings(ctx, reconcile.FindingQuery{DetectedBefore: time.Now().Add(-time.Hour)}); len(got) != 0 {
		t.Errorf("age filter: %d findings older than an hour, want 0", len(got))
	}
	if _, err := f.store.ListFindings(ctx, reconcile.FindingQuery{State: "closed"}); err == nil {
		t.Error("an unknown state was accepted")
	}
}

func TestADeadRepairShowsAsAStaleFindingAndInItsHistory(t *testing.T) {
	t.Parallel()
	f, ctx := reviewWorld(t)
	d, err := pgoutbox.NewDispatcher(f.pool, pgoutbox.Config{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := pgoutbox.HandleCommand(d, "ApplyPaymentSucceeded", func(context.Context, pgx.Tx, reconcile.Command) error {
		return errors.New("the ledger service is down")
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Work(ctx); err != nil {
		t.Fatal(err)
	}
	// Make the findings look a day old.
	if _, err := f.pool.Exec(ctx, `UPDATE reconcile_findings SET detected_at = detected_at - interval '2 hours'`); err != nil {
		t.Fatal(err)
	}
	st, err := f.store.Status(ctx, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	if st.StaleFindings != 4 {
		t.Fatalf("StaleFindings = %d, want 4 (StaleAfter is an hour)", st.StaleFindings)
	}
	stale, err := f.store.ListFindings(ctx, reconcile.FindingQuery{Kind: "missed_success", DetectedBefore: time.Now().Add(-time.Hour)})
	if err != nil || len(stale) != 2 {
		t.Fatalf("stale missed_success findings: %d, %v; want 2", len(stale), err)
	}
	detail, err := f.store.Finding(ctx, stale[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	last := detail.History[len(detail.History)-1]
	if last.Action != "command dead" || last.Actor != "ApplyPaymentSucceeded" || last.Error != "the ledger service is down" || last.Note != "" || last.Failures != 1 {
		t.Fatalf("history ends with %+v; want the dead command and its error", last)
	}
}

func TestAWebhookResolvesTheFindingsOfItsPaymentInEveryTierButNotOtherTables(t *testing.T) {
	t.Parallel()
	f, ctx := reviewWorld(t)
	// A second job (a tier) over the same payments finds the same drift.
	ext := map[string]string{}
	for i := int64(1); i <= 6; i++ {
		ext[extIDOf(i)] = map[bool]string{true: "canceled", false: "succeeded"}[i == 3 || i == 4]
	}
	reconciletest.Cycle(t, reconciletest.Config(f, "hot", reconciletest.NewGateway(ext), 10), 3)
	// Another table's job has a finding about its own record "1".
	refunds, err := pgstore.New(f.pool, pgstore.Config{Table: "payments", AggregateType: "refund"})
	if err != nil {
		t.Fatal(err)
	}
	reconciletest.Cycle(t, reconciletest.Config(fixture{f.pool, refunds}, "refunds", reconciletest.NewGateway(ext), 10), 3)

	var ids []int64
	err = pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		var err error
		ids, err = f.store.ResolveRecordFindings(ctx, tx, "1", []string{"missed_success"}, reconcile.Resolution{As: reconcile.ResolutionFixed, By: "stripe-webhook"})
		return err
	})
	if err != nil || len(ids) != 2 {
		t.Fatalf("resolved %v, %v; want payment 1's missed_success in both tiers", ids, err)
	}
	open, err := refunds.ListFindings(ctx, reconcile.FindingQuery{Job: "refunds", RecordID: "1"})
	if err != nil || len(open) != 1 {
		t.Fatalf("the refunds job's finding about its record 1: %+v, %v; want it still open", open, err)
	}
	d, err := f.store.Finding(ctx, ids[0])
	if err != nil || d.History[len(d.History)-1].Actor != "stripe-webhook" {
		t.Fatalf("history %+v, %v; want the webhook's resolution recorded", d.History, err)
	}
	if again, err := f.store.ResolveRecordFindings(ctx, f.pool, "1", []string{"missed_success"}, reconcile.Resolution{As: reconcile.ResolutionFixed, By: "stripe-webhook"}); err != nil || len(again) != 0 {
		t.Fatalf("a second webhook resolved %v, %v; want nothing", again, err)
	}
	// No kinds means every kind: payment 3's paid_locally_not_externally in both tiers.
	if all, err := f.store.ResolveRecordFindings(ctx, f.pool, "3", nil, reconcile.Resolution{As: reconcile.ResolutionFixed, By: "ops"}); err != nil || len(all) != 2 {
		t.Fatalf("resolving every kind of payment 3 resolved %v, %v; want its 2 findings", all, err)
	}
}

func TestARepairDoesNotOverruleAPersonWhoResolvedItsFindingFirst(t *testing.T) {
	t.Parallel()
	f, ctx := reviewWorld(t)
	open, err := f.store.ListFindings(ctx, reconcile.FindingQuery{Kind: "missed_success"})
	if err != nil || len(open) != 2 {
		t.Fatal(open, err)
	}
	if err := f.store.ResolveFinding(ctx, open[0].ID, reconcile.Resolution{As: reconcile.ResolutionAccepted, By: "alice", Note: "refunded"}); err != nil {
		t.Fatal(err)
	}
	d, err := pgoutbox.NewDispatcher(f.pool, pgoutbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var applied []string
	if err := pgoutbox.HandleCommand(d, "ApplyPaymentSucceeded", func(_ context.Context, _ pgx.Tx, cmd reconcile.Command) error {
		applied = append(applied, cmd.RecordID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Work(ctx); err != nil || n != 2 {
		t.Fatalf("Work = %d, %v; want both commands claimed", n, err)
	}
	if len(applied) != 1 || applied[0] != open[1].RecordID {
		t.Fatalf("handler applied %v; want only the command of the finding still open (record %s)", applied, open[1].RecordID)
	}
	var done int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_outbox WHERE status = 'done'`).Scan(&done); err != nil || done != 2 {
		t.Fatalf("%d commands done (%v); want both, the skipped one included", done, err)
	}
}

func TestFindingsCarryTheExternalIDTheyWereOpenedWithWhateverStoreListsThem(t *testing.T) {
	t.Parallel()
	f, ctx := reviewWorld(t)
	fs, err := f.store.ListFindings(ctx, reconcile.FindingQuery{RecordID: "2"})
	if err != nil || len(fs) != 1 || fs[0].ExternalID != extIDOf(2) {
		t.Fatalf("ListFindings = %+v, %v; want payment 2's finding with %s", fs, err, extIDOf(2))
	}
	if d, err := f.store.Finding(ctx, fs[0].ID); err != nil || d.ExternalID != extIDOf(2) || len(d.History) == 0 {
		t.Fatalf("Finding = %+v, %v; want %s and a history", d, err, extIDOf(2))
	}
	// A store of another table (another aggregate type) lists the same finding with its
	// external id too: a console over several tables links every finding.
	refunds, err := pgstore.New(f.pool, pgstore.Config{Table: "payments", AggregateType: "refund"})
	if err != nil {
		t.Fatal(err)
	}
	if fs, err := refunds.ListFindings(ctx, reconcile.FindingQuery{RecordID: "2"}); err != nil || len(fs) != 1 || fs[0].ExternalID != extIDOf(2) {
		t.Fatalf("ListFindings through another table's store = %+v, %v; want the finding with %s", fs, err, extIDOf(2))
	}
	// A finding opened before findings kept their external id (migration 006) gets its row's.
	if _, err := f.pool.Exec(ctx, `UPDATE reconcile_findings SET external_id = '' WHERE record_id = '3'`); err != nil {
		t.Fatal(err)
	}
	if fs, err := f.store.ListFindings(ctx, reconcile.FindingQuery{RecordID: "3"}); err != nil || len(fs) != 1 || fs[0].ExternalID != extIDOf(3) {
		t.Fatalf("ListFindings of a finding without a stored external id = %+v, %v; want %s from its row", fs, err, extIDOf(3))
	}
	// So does a finding whose row was deleted since.
	if _, err := f.pool.Exec(ctx, `DELETE FROM payments WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	if fs, err := f.store.ListFindings(ctx, reconcile.FindingQuery{RecordID: "2"}); err != nil || len(fs) != 1 || fs[0].ExternalID != extIDOf(2) {
		t.Fatalf("ListFindings after the row was deleted = %+v, %v; want the finding with %s", fs, err, extIDOf(2))
	}
}

func TestFindingsAreListedWithoutExternalIDsWhenTheirTableCannotBeRead(t *testing.T) {
	t.Parallel()
	f, ctx := reviewWorld(t)
	// Findings opened before findings kept their external id (migration 006) have none: the
	// store reads them from its table. Here the store names a table that is gone.
	if _, err := f.pool.Exec(ctx, `UPDATE reconcile_findings SET external_id = ''`); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	gone, err := pgstore.New(f.pool, pgstore.Config{Table: "payments_archive", AggregateType: f.store.Config().AggregateType,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := gone.ListFindings(ctx, reconcile.FindingQuery{Limit: 10})
	if err != nil || len(fs) != 4 {
		t.Fatalf("ListFindings = %d findings, %v; want the 4 open ones", len(fs), err)
	}
	for _, f := range fs {
		if f.ExternalID != "" {
			t.Errorf("finding %d has the external id %q", f.ID, f.ExternalID)
		}
	}
	if !strings.Contains(logs.String(), "reading external ids failed") {
		t.Errorf("the failed look-up was not logged:\n%s", logs.String())
	}
}
