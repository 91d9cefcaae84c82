package pgledger_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/reconcilekit/reconcile/adapters/pgledger"
	"github.com/reconcilekit/reconcile/internal/pgtest"
	"github.com/reconcilekit/reconcile/tieout"
)

var (
	day = 24 * time.Hour
	t0  = time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
)

// A host with a table per kind: payments keyed by bigint, refunds stored positive and keyed by
// text, disputes booking no settlement, names that need quoting.
const separateTables = `
CREATE TABLE payments (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	intent text NOT NULL, amount bigint NOT NULL, currency text NOT NULL, fee bigint,
	paid_at timestamptz, available_on timestamptz, "group" text, status text NOT NULL);
CREATE TABLE "Refund ""Book""" (
	"order" text PRIMARY KEY, intent text NOT NULL, amount bigint NOT NULL, currency text NOT NULL,
	done_at timestamptz, payout text);
CREATE TABLE disputes (id bigint PRIMARY KEY, dispute text NOT NULL, amount bigint NOT NULL, currency text NOT NULL);
INSERT INTO payments (intent, amount, currency, fee, paid_at, available_on, "group", status) VALUES
	('pi_1', 1000, 'usd', 59, '2026-04-01', '2026-04-03', 'po_1', 'paid'),
	('pi_2', 2000, 'eur', NULL, '2026-04-01', NULL, NULL, 'paid'),
	('pi_3', 3000, 'usd', NULL, '2026-04-29', '2026-04-30', '', 'paid'),
	('pi_4', 4000, 'usd', NULL, NULL, NULL, NULL, 'pending'),
	('pi_5', 5000, 'usd', NULL, '2026-03-01', '2026-03-03', NULL, 'paid');
INSERT INTO "Refund ""Book""" VALUES ('r1', 'pi_1', 200, 'usd', '2026-04-02', NULL), ('r2', 'pi_1', 100, 'usd', NULL, NULL),
	('r3', 'pi_9', 50, 'usd', '2026-04-02', 'po_2');
INSERT INTO disputes VALUES (1, 'du_1', -1500, 'usd');`

func separate() pgledger.Config {
	return pgledger.Config{Tables: []pgledger.Table{
		{Name: "payments", Kind: tieout.KindPayment, IDColumn: "intent", FeeColumn: "fee", SettledAtColumn: "paid_at",
			AvailableOnColumn: "available_on", GroupColumn: "group", StatusColumn: "status"},
		{Name: `Refund "Book"`, Kind: tieout.KindRefund, IDColumn: "intent", KeyColumn: "order", Negate: true,
			SettledAtColumn: "done_at", GroupColumn: "payout"},
		{Name: "disputes", Kind: tieout.KindDispute, IDColumn: "dispute", Basis: tieout.Settlement},
	}}
}

func open(t *testing.T, ddl string, cfg pgledger.Config) *pgledger.Ledger {
	t.Helper()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(context.Background(), ddl); err != nil {
		t.Fatal(err)
	}
	l, err := pgledger.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func key(kind, id string) tieout.Key { return tieout.Key{Kind: kind, ID: id} }

// ids writes records as "kind id amount currency".
func ids(bs []tieout.Booked) []string {
	var out []string
	for _, b := range bs {
		out = append(out, strings.Join([]string{b.Kind, b.ID, strconv.FormatInt(b.Amount, 10), b.Currency, b.Basis.String()}, " "))
	}
	slices.Sort(out)
	return out
}

func TestBookedReadsEveryTableForTheKeysInOneGo(t *testing.T) {
	t.Parallel()
	l := open(t, separateTables, separate())
	got, err := l.Booked(context.Background(), []tieout.Key{
		key(tieout.KindPayment, "pi_1"), key(tieout.KindRefund, "pi_1"), key(tieout.KindDispute, "du_1"),
		key(tieout.KindPayment, "pi_missing"), key(tieout.KindRefund, "pi_2"),
		key(tieout.KindPayment, "pi_\x00nul"), key(tieout.KindPayment, "pi_\xff"), key(tieout.KindPayment, strings.Repeat("p", 10_000)),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"dispute du_1 -1500 usd settlement", "payment pi_1 1000 usd presentment", "refund pi_1 -100 usd presentment", "refund pi_1 -200 usd presentment"}
	if diff := cmp.Diff(want, ids(got)); diff != "" {
		t.Errorf("booked (-want +got):\n%s", diff)
	}
	for _, b := range got {
		if b.Kind == tieout.KindPayment {
			want := tieout.Booked{Kind: "payment", ID: "pi_1", Amount: 1000, Currency: "usd", Basis: tieout.Presentment, Fee: 59, HasFee: true,
				SettledAt: time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), AvailableOn: time.Date(2026, 4, 3, 0, 0, 0, 0, time.UTC), Group: "po_1", Status: "paid"}
			if diff := cmp.Diff(want, b, cmpopts.EquateApproxTime(0)); diff != "" {
				t.Errorf("payment (-want +got):\n%s", diff)
			}
		}
	}
	if got, err := l.Booked(context.Background(), nil); err != nil || got != nil {
		t.Errorf("no keys: %v, %v", got, err)
	}
}

func TestUnpaidWalksTheTablesByKeyForSettledRecordsInNoPayout(t *testing.T) {
	t.Parallel()
	l := open(t, separateTables, separate())
	// Unpaid before 2026-04-10: pi_2 (settled 04-01, no availability), pi_5 (available 03-03),
	// and the refund r1 (settled 04-02, no payout). Not pi_1 (in po_1), pi_3 (available
	// after), pi_4 (not settled), r2 (not settled), r3 (in po_2), nor the disputes (no
	// settlement column).
	var pages [][]string
	pos := ""
	for range 5 {
		p, err := l.Unpaid(context.Background(), tieout.UnpaidRequest{After: pos, Before: t0.Add(-21 * day), Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		var page []string
		for _, b := range p.Records {
			page = append(page, b.Kind+" "+b.ID)
		}
		pages = append(pages, page)
		if len(p.Records) < 2 {
			break
		}
		pos = p.Next
	}
	want := [][]string{{"payment pi_2", "payment pi_5"}, {"refund pi_1"}}
	if diff := cmp.Diff(want, pages); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
	if _, err := l.Unpaid(context.Background(), tieout.UnpaidRequest{After: "7:x", Before: t0, Limit: 1}); err == nil {
		t.Error("a position of no table accepted")
	}
}

// A host that books in one ledger table, as examples/payments does (entries payment_succeeded
// and refund per payment row), seen through a view that names each entry's PaymentIntent.
const oneLedger = `
CREATE TABLE payments (id bigint PRIMARY KEY, external_id text NOT NULL, currency text NOT NULL);
CREATE TABLE ledger (id bigint PRIMARY KEY, payment_id bigint NOT NULL REFERENCES payments, entry text NOT NULL,
	amount bigint NOT NULL, created_at timestamptz NOT NULL, payout_id text);
CREATE VIEW ledger_entries AS
	SELECT l.id, l.entry, p.external_id, l.amount, p.currency, l.created_at, l.payout_id
	FROM ledger l JOIN payments p ON p.id = l.payment_id;
INSERT INTO payments VALUES (1, 'pi_1', 'usd'), (2, 'pi_2', 'jpy');
INSERT INTO ledger VALUES (1, 1, 'payment_succeeded', 1000, '2026-04-01', 'po_1'), (2, 1, 'refund', -300, '2026-04-02', NULL),
	(3, 2, 'payment_succeeded', 500, '2026-04-03', NULL), (4, 2, 'note', 0, '2026-04-03', NULL);`

func TestOneLedgerTableWithAKindColumn(t *testing.T) {
	t.Parallel()
	l := open(t, oneLedger, pgledger.Config{Tables: []pgledger.Table{{Name: "ledger_entries", KindColumn: "entry",
		KindValues: map[string]string{"payment_succeeded": tieout.KindPayment, "refund": tieout.KindRefund},
		IDColumn:   "external_id", SettledAtColumn: "created_at", GroupColumn: "payout_id"}}})
	got, err := l.Booked(context.Background(), []tieout.Key{key(tieout.KindPayment, "pi_1"), key(tieout.KindRefund, "pi_1"), key(tieout.KindRefund, "pi_2"), key("note", "pi_2")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"payment pi_1 1000 usd presentment", "refund pi_1 -300 usd presentment"}
	if diff := cmp.Diff(want, ids(got)); diff != "" {
		t.Errorf("booked (-want +got):\n%s", diff)
	}
	p, err := l.Unpaid(context.Background(), tieout.UnpaidRequest{Before: t0, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var unpaid []string
	for _, b := range p.Records {
		unpaid = append(unpaid, b.Kind+" "+b.ID)
	}
	if diff := cmp.Diff([]string{"refund pi_1", "payment pi_2"}, unpaid); diff != "" {
		t.Errorf("unpaid (-want +got):\n%s", diff)
	}
}

func TestNewChecksTheConfig(t *testing.T) {
	pool := pgtest.Pool(t)
	for _, cfg := range []pgledger.Config{
		{},
		{Tables: []pgledger.Table{{Kind: "payment", IDColumn: "id"}}},
		{Tables: []pgledger.Table{{Name: "t", Kind: "payment"}}},
		{Tables: []pgledger.Table{{Name: "t", IDColumn: "id"}}},
		{Tables: []pgledger.Table{{Name: "t", Kind: "payment", KindColumn: "k", IDColumn: "id"}}},
		{Tables: []pgledger.Table{{Name: "t", Kind: "payment", KindValues: map[string]string{"a": "payment"}, IDColumn: "id"}}},
		{Tables: []pgledger.Table{{Name: "t", KindColumn: "k", KindValues: map[string]string{"a": ""}, IDColumn: "id"}}},
		{Tables: []pgledger.Table{{Name: "t", Kind: "payment", IDColumn: "id", Basis: 9}}},
	} {
		if _, err := pgledger.New(pool, cfg); err == nil || !strings.HasPrefix(err.Error(), "pgledger: ") {
			t.Errorf("New(%+v) = %v", cfg, err)
		}
	}
}

// Columns of other types than text: a uuid id, a bigint payout reference.
func TestIDAndGroupColumnsOfOtherTypes(t *testing.T) {
	t.Parallel()
	l := open(t, `CREATE TABLE fees (id bigint PRIMARY KEY, ref uuid NOT NULL, amount bigint NOT NULL, currency text NOT NULL,
		charged_at timestamptz, payout bigint);
		INSERT INTO fees VALUES (1, '9b2f4c1e-0000-4000-8000-000000000001', -30, 'usd', '2026-04-01', NULL),
			(2, '9b2f4c1e-0000-4000-8000-000000000002', -40, 'usd', '2026-04-01', 7)`,
		pgledger.Config{Tables: []pgledger.Table{{Name: "fees", Kind: tieout.KindFee, IDColumn: "ref", SettledAtColumn: "charged_at", GroupColumn: "payout"}}})
	got, err := l.Booked(context.Background(), []tieout.Key{key(tieout.KindFee, "9b2f4c1e-0000-4000-8000-000000000002"), key(tieout.KindFee, "not-a-uuid")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"fee 9b2f4c1e-0000-4000-8000-000000000002 -40 usd presentment"}, ids(got)); diff != "" {
		t.Errorf("booked (-want +got):\n%s", diff)
	}
	p, err := l.Unpaid(context.Background(), tieout.UnpaidRequest{Before: t0, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Records) != 1 || p.Records[0].ID != "9b2f4c1e-0000-4000-8000-000000000001" || p.Next != "0:1" {
		t.Errorf("unpaid = %+v", p)
	}
}
