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

	"github.com/reconcilekit/reconcile"
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

// Host rows with NULLs where the ledger expects values (a nullable amount, currency, id or
// key column) stop neither Booked nor Unpaid: a NULL amount or currency is read as a booking
// of no currency, which matches no line (its line is an amount that differs, for a person,
// never an unbooked line whose repair would book it twice); a row without an id or key is not
// walked (it cannot be in a payout, nor be resumed after).
func TestNullsInHostRowsStopNothing(t *testing.T) {
	t.Parallel()
	l := open(t, `CREATE TABLE payments (id bigint, intent text, amount bigint, currency text, paid_at timestamptz, payout text);
		INSERT INTO payments VALUES (1, 'pi_1', NULL, 'usd', '2026-04-01', NULL), (2, 'pi_2', 200, NULL, '2026-04-01', NULL),
			(3, NULL, 300, 'usd', '2026-04-01', NULL), (NULL, 'pi_4', 400, 'usd', '2026-04-01', NULL),
			(5, 'pi_5', 500, 'usd', '2026-04-01', NULL)`,
		pgledger.Config{Tables: []pgledger.Table{{Name: "payments", Kind: tieout.KindPayment, IDColumn: "intent",
			SettledAtColumn: "paid_at", GroupColumn: "payout"}}})
	ctx := context.Background()
	got, err := l.Booked(ctx, []tieout.Key{key(tieout.KindPayment, "pi_1"), key(tieout.KindPayment, "pi_2"), key(tieout.KindPayment, "pi_4")})
	if err != nil {
		t.Fatalf("Booked over NULLs: %v", err)
	}
	want := []string{"payment pi_1 0  presentment", "payment pi_2 200  presentment", "payment pi_4 400 usd presentment"}
	if diff := cmp.Diff(want, ids(got)); diff != "" {
		t.Errorf("booked (-want +got):\n%s", diff)
	}
	var walked []string
	pos := ""
	for range 10 {
		p, err := l.Unpaid(ctx, tieout.UnpaidRequest{After: pos, Before: t0, Limit: 1})
		if err != nil {
			t.Fatalf("Unpaid over NULLs: %v", err)
		}
		for _, b := range p.Records {
			walked = append(walked, b.ID)
		}
		if len(p.Records) == 0 {
			break
		}
		pos = p.Next
	}
	if diff := cmp.Diff([]string{"pi_1", "pi_2", "pi_5"}, walked); diff != "" {
		t.Errorf("unpaid walk (-want +got):\n%s", diff)
	}
	// The smallest bigint in a table read negated has no negative: read as no amount, and the
	// rest of the table still reads.
	n := open(t, `CREATE TABLE refunds (id bigint PRIMARY KEY, intent text, amount bigint, currency text);
		INSERT INTO refunds VALUES (1, 're_1', -9223372036854775808, 'usd'), (2, 're_2', 50, 'usd')`,
		pgledger.Config{Tables: []pgledger.Table{{Name: "refunds", Kind: tieout.KindRefund, IDColumn: "intent", Negate: true}}})
	got2, err := n.Booked(ctx, []tieout.Key{key(tieout.KindRefund, "re_1"), key(tieout.KindRefund, "re_2")})
	if err != nil {
		t.Fatalf("Booked over the smallest bigint negated: %v", err)
	}
	if diff := cmp.Diff([]string{"refund re_1 0  presentment", "refund re_2 -50 usd presentment"}, ids(got2)); diff != "" {
		t.Errorf("booked (-want +got):\n%s", diff)
	}
	// Through the tie-out: the line of pi_1 is an amount that differs, for a person.
	g := tieout.Group{ID: "po_1", State: tieout.GroupPaid, Terminal: true, Amount: 100, Currency: "usd", Itemized: true}
	m := tieout.Member{ID: "txn_1", Type: "charge", Kind: tieout.KindPayment, SourceID: "ch_1", BookedID: "pi_1", Amount: 100, Net: 100,
		Currency: "usd", SourceAmount: 100, SourceCurrency: "usd"}
	fs := tieout.Policy{}.Classify(g, []tieout.Member{m}, got)
	if len(fs) != 1 || fs[0].Decision.Kind != tieout.KindAmountDiffers || fs[0].Decision.Command != "" {
		t.Errorf("findings of a line booked with a NULL amount: %+v", fs)
	}
}

// The walk goes by the key's own order, not its text's: a bigint key 1..25 read five at a time
// gives every row once (as text, "13" comes before "2", and the walk skipped 2 to 9). A table
// keyed by the id it books under (a refunds table keyed by re_...) walks too.
func TestUnpaidWalksABigintKeyInItsOwnOrder(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		ddl string
		tab pgledger.Table
	}{
		"a bigint key": {`CREATE TABLE payments (id bigint PRIMARY KEY, intent text, amount bigint, currency text, paid_at timestamptz, payout text);
			INSERT INTO payments SELECT i, 'pi_' || i, 100, 'usd', '2026-04-01', NULL FROM generate_series(1, 25) i`,
			pgledger.Table{Name: "payments", Kind: tieout.KindPayment, IDColumn: "intent", SettledAtColumn: "paid_at", GroupColumn: "payout"}},
		"a key that is the id": {`CREATE TABLE payments (intent text PRIMARY KEY, amount bigint, currency text, paid_at timestamptz, payout text);
			INSERT INTO payments SELECT 'pi_' || i, 100, 'usd', '2026-04-01', NULL FROM generate_series(1, 25) i`,
			pgledger.Table{Name: "payments", Kind: tieout.KindPayment, IDColumn: "intent", KeyColumn: "intent", SettledAtColumn: "paid_at", GroupColumn: "payout"}},
	} {
		t.Run(name, func(t *testing.T) {
			l := open(t, c.ddl, pgledger.Config{Tables: []pgledger.Table{c.tab}})
			seen := map[string]int{}
			pos := ""
			for range 20 {
				p, err := l.Unpaid(context.Background(), tieout.UnpaidRequest{After: pos, Before: t0, Limit: 5})
				if err != nil {
					t.Fatal(err)
				}
				for _, b := range p.Records {
					seen[b.ID]++
				}
				if len(p.Records) == 0 {
					break
				}
				pos = p.Next
			}
			for i := 1; i <= 25; i++ {
				if id := "pi_" + strconv.Itoa(i); seen[id] != 1 {
					t.Errorf("%s walked %d times", id, seen[id])
				}
			}
		})
	}
}

// An identifier PostgreSQL would not read as written is refused by New, naming the field: a
// NUL (quoting drops it: "pay\x00ments" would read payments), invalid UTF-8, or more than 63
// bytes (PostgreSQL cuts it, perhaps to another column's name). Quotes, spaces and capitals are
// quoted and kept.
func TestNewRefusesIdentifiersPostgreSQLWouldNotReadAsWritten(t *testing.T) {
	pool := pgtest.Pool(t)
	long := strings.Repeat("a", 64)
	base := pgledger.Table{Name: "payments", Kind: tieout.KindPayment, IDColumn: "intent", SettledAtColumn: "paid_at", GroupColumn: "payout"}
	for name, edit := range map[string]func(*pgledger.Table){
		"Name with a NUL":          func(t *pgledger.Table) { t.Name = "pay\x00ments" },
		"Schema with a NUL":        func(t *pgledger.Table) { t.Schema = "public\x00" },
		"IDColumn invalid UTF-8":   func(t *pgledger.Table) { t.IDColumn = "intent\xff" },
		"KeyColumn of 64 bytes":    func(t *pgledger.Table) { t.KeyColumn = long },
		"AmountColumn with a NUL":  func(t *pgledger.Table) { t.AmountColumn = "\x00" },
		"CurrencyColumn too long":  func(t *pgledger.Table) { t.CurrencyColumn = long },
		"FeeColumn with a NUL":     func(t *pgledger.Table) { t.FeeColumn = "fee\x00" },
		"SettledAtColumn too long": func(t *pgledger.Table) { t.SettledAtColumn = long },
		"AvailableOnColumn NUL":    func(t *pgledger.Table) { t.AvailableOnColumn = "\x00x" },
		"GroupColumn invalid":      func(t *pgledger.Table) { t.GroupColumn = "\xc3" },
		"StatusColumn too long":    func(t *pgledger.Table) { t.StatusColumn = long },
		"KindColumn with a NUL":    func(t *pgledger.Table) { t.Kind, t.KindColumn = "", "k\x00" },
	} {
		tab := base
		edit(&tab)
		_, err := pgledger.New(pool, pgledger.Config{Tables: []pgledger.Table{tab}})
		if err == nil || !strings.HasPrefix(err.Error(), "pgledger: config: ") {
			t.Errorf("%s: New = %v, want a config error", name, err)
		}
	}
	tab := base
	tab.Name, tab.StatusColumn = `Pay "Book" 2`, strings.Repeat("é", 31)
	if _, err := pgledger.New(pool, pgledger.Config{Tables: []pgledger.Table{tab}}); err != nil {
		t.Errorf("a quoted name of 62 bytes refused: %v", err)
	}
}

// A row settled or available more than reconcile.MaxClockSkew ahead of the clock (a skewed
// clock, a bad import, a hostile writer; 'infinity' at the extreme) would never fall before the
// cut-off: Unpaid returns it when asked with Ahead, and the tie-out reports it as settled in the
// future. Neither 'infinity' nor '-infinity' stops the walk, in timestamptz columns or
// timestamp without time zone ones, nor Booked.
func TestUnpaidReturnsRowsSettledInTheFuture(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"timestamptz", "timestamp without time zone"} {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			l := open(t, strings.ReplaceAll(`CREATE TABLE payments (id bigint PRIMARY KEY, intent text, amount bigint, currency text,
				paid_at TS, available_on TS, payout text);
				INSERT INTO payments VALUES
					(1, 'pi_old', 100, 'usd', '2026-04-01', NULL, NULL),
					(2, 'pi_future', 200, 'usd', '2026-05-01 01:00', NULL, NULL),
					(3, 'pi_skewed', 300, 'usd', '2026-05-01 00:04', NULL, NULL),
					(4, 'pi_inf', 400, 'usd', 'infinity', NULL, NULL),
					(5, 'pi_avail_inf', 500, 'usd', '2026-04-01', 'infinity', NULL),
					(6, 'pi_neginf', 600, 'usd', '-infinity', NULL, NULL),
					(7, 'pi_in_payout', 700, 'usd', 'infinity', NULL, 'po_1'),
					(8, 'pi_settled_future', 800, 'usd', '2027-05-01', '2026-04-01', NULL),
					(9, 'pi_after', 900, 'usd', '2026-04-01', NULL, NULL)`, "TS", typ),
				pgledger.Config{Tables: []pgledger.Table{{Name: "payments", Kind: tieout.KindPayment, IDColumn: "intent",
					SettledAtColumn: "paid_at", AvailableOnColumn: "available_on", GroupColumn: "payout"}}})
			ctx := context.Background()
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
			want := []string{"pi_old never_paid_out", "pi_future settled_in_future", "pi_inf settled_in_future",
				"pi_avail_inf settled_in_future", "pi_neginf never_paid_out", "pi_settled_future settled_in_future", "pi_after never_paid_out"}
			if diff := cmp.Diff(want, found); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			got, err := l.Booked(ctx, []tieout.Key{key(tieout.KindPayment, "pi_inf"), key(tieout.KindPayment, "pi_neginf")})
			if err != nil {
				t.Fatalf("Booked over infinities: %v", err)
			}
			for _, b := range got {
				if b.ID == "pi_inf" && !b.SettledAt.After(ahead) || b.ID == "pi_neginf" && (b.SettledAt.IsZero() || !b.SettledAt.Before(t0)) {
					t.Errorf("%s settled at %v", b.ID, b.SettledAt)
				}
			}
		})
	}
}
