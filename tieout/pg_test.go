package tieout_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgledger"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/internal/shardtest"
	"github.com/reconcilekit/reconcile/tieout"
)

// lister lists one page of groups and each group's members in one page.
type lister struct {
	groups  []tieout.Group
	members map[string][]tieout.Member
}

func (l lister) Groups(ctx context.Context, pos string) (tieout.GroupPage, error) {
	return tieout.GroupPage{Groups: l.groups, Next: fmt.Sprint(len(l.groups)), End: true}, nil
}

func (l lister) Members(ctx context.Context, g tieout.Group, after string) (tieout.MemberPage, error) {
	return tieout.MemberPage{Members: l.members[g.ID]}, nil
}

// The tie-out's findings go to the findings tables every job uses, through pgstore's lane
// commit: deduplicated, opened once, their repair commands queued, hostile lines included.
func TestATieOutRecordsItsFindingsInPgstore(t *testing.T) {
	ctx := context.Background()
	pool, store := shardtest.NewStore(t, pgstore.Config{Table: "payments"}, shardtest.PaymentsDDL,
		`CREATE TABLE bookings (id bigint PRIMARY KEY, kind text NOT NULL, intent text NOT NULL, amount bigint NOT NULL, currency text NOT NULL)`)
	if _, err := pool.Exec(ctx, `INSERT INTO bookings VALUES (1, 'payment', 'pi_1', 1000, 'usd')`); err != nil {
		t.Fatal(err)
	}
	ledger, err := pgledger.New(pool, pgledger.Config{Tables: []pgledger.Table{{Name: "bookings", KindColumn: "kind", IDColumn: "intent"}}})
	if err != nil {
		t.Fatal(err)
	}
	g := tieout.Group{ID: "po_1", Status: "failed", State: tieout.GroupFailed, Terminal: true, Amount: 941 - 200 + 3, Currency: "usd", Itemized: true}
	members := []tieout.Member{
		{ID: "txn_1", Type: "charge", Kind: tieout.KindPayment, SourceID: "ch_1", BookedID: "pi_1", Amount: 1000, Fee: 59, Net: 941, Currency: "usd",
			SourceAmount: 1000, SourceCurrency: "usd"},
		{ID: "txn_2", Type: "refund", Kind: tieout.KindRefund, SourceID: "re_1", BookedID: "pi_\x00", Amount: -200, Net: -200, Currency: "usd"},
		{ID: "txn_3", Type: "\xffodd\x00" + strings.Repeat("t", 10_000), SourceID: strings.Repeat("s", 10_000), Amount: 1, Net: 1, Currency: "usd"},
		{ID: "txn_\x00", Type: "charge", Kind: tieout.KindPayment, SourceID: "ch_\xff", Amount: 1, Net: 1, Currency: "usd"},
		{ID: "txn_4", Type: "transfer", Kind: tieout.KindOther, SourceID: "tr_1", Amount: 1, Net: 1, Currency: "usd"},
	}
	step, err := tieout.NewStep(tieout.StepConfig{Job: "payouts", Lane: "tieout", Sink: store, Ledger: ledger,
		Lister: lister{groups: []tieout.Group{g}, members: map[string][]tieout.Member{"po_1": members}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		rep, err := step.RunBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if wantF, wantC := []int{5, 0}[i], []int{2, 0}[i]; rep.NewFindings != wantF || rep.NewCommands != wantC {
			t.Errorf("run %d: %d findings, %d commands; want %d, %d", i, rep.NewFindings, rep.NewCommands, wantF, wantC)
		}
	}
	fs, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: "payouts"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, f.RecordID+" "+f.Kind+" "+f.Command)
	}
	want := []string{"po_1 payout_failed ApplyPayoutFailed", "po_1 payout_sum_mismatch ", "po_1#3 invalid_line ",
		"txn_2 unbooked_refund BookRefund", "txn_3 unknown_line_type "}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var commands int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_outbox`).Scan(&commands); err != nil {
		t.Fatal(err)
	}
	if commands != 2 {
		t.Errorf("%d repair commands in the outbox, want 2", commands)
	}
}

// A payout's record goes in the transaction of its findings and position: a commit that fails
// after the findings were written (here a trigger refusing the record) leaves neither behind,
// and the step done again records both, counted as one write of the store's.
func TestATieOutRecordsEachPayoutWithItsFindingsOrNothing(t *testing.T) {
	ctx := context.Background()
	pool, store := shardtest.NewStore(t, pgstore.Config{Table: "payments"}, shardtest.PaymentsDDL)
	ledger := &tieout.MemoryLedger{}
	g := tieout.Group{ID: "po_1", Status: "paid", State: tieout.GroupPaid, Amount: 1000, Currency: "usd", Itemized: true}
	members := []tieout.Member{{ID: "txn_1", Type: "charge", Kind: tieout.KindPayment, SourceID: "ch_1", Amount: 1000, Net: 1000,
		Currency: "usd", SourceAmount: 1000, SourceCurrency: "usd"}}
	step, err := tieout.NewStep(tieout.StepConfig{Job: "payouts", Lane: "tieout", Sink: store, Ledger: ledger,
		Lister: lister{groups: []tieout.Group{g}, members: map[string][]tieout.Member{"po_1": members}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON reconcile_groups FOR EACH ROW EXECUTE FUNCTION refuse()`); err != nil {
		t.Fatal(err)
	}
	if _, err := step.RunBatch(ctx); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("step with the record refused = %v", err)
	}
	var findings, groups int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM reconcile_findings), (SELECT count(*) FROM reconcile_groups)`).Scan(&findings, &groups); err != nil {
		t.Fatal(err)
	}
	if cur, _ := store.ReadLane(ctx, "payouts", "tieout"); findings != 0 || groups != 0 || cur.Position != "" {
		t.Fatalf("after a failed commit: %d findings, %d records, position %q; want nothing", findings, groups, cur.Position)
	}
	if _, err := pool.Exec(ctx, `DROP TRIGGER refuse ON reconcile_groups`); err != nil {
		t.Fatal(err)
	}
	before := store.Writes()
	if _, err := step.RunBatch(ctx); err != nil {
		t.Fatal(err)
	}
	if n := store.Writes() - before; n != 1 {
		t.Errorf("the step counted %d writes; want 1", n)
	}
	recs, err := store.ListGroups(ctx, reconcile.GroupQuery{Job: "payouts"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].ID != "po_1" || !recs[0].TiedOut || !recs[0].Held || recs[0].Expected != 1000 ||
		recs[0].Unmatched != 1 || !slices.Equal(recs[0].Records, []string{"txn_1"}) {
		t.Fatalf("records = %+v; want po_1 held, its unbooked line", recs)
	}
	var dbNow time.Time
	if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	if recs[0].TiedOutAt.After(dbNow) || recs[0].TiedOutAt.IsZero() {
		t.Errorf("tied out at %v; want the database's time of the commit, before %v", recs[0].TiedOutAt, dbNow)
	}
}
