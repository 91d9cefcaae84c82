package pgledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/reconcilekit/reconcile/tieout"
)

// DB is what the ledger needs of a pool or a connection: *pgxpool.Pool and *pgx.Conn have it.
type DB interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Config describes the host's ledger.
type Config struct {
	// Tables are the tables the host books in, in the order Unpaid walks them. At least one.
	Tables []Table
}

// Table is one of the host's tables. Column fields left empty take the defaults named.
type Table struct {
	// Schema and Name name the table; an empty Schema means the search path's. Name is
	// required.
	Schema, Name string
	// Kind is the booked kind of every row (a payments table's tieout.KindPayment); or, for
	// one ledger table, empty, and KindColumn names the column that says each row's kind.
	Kind       string
	KindColumn string
	// KindValues maps KindColumn's values to booked kinds, such as "payment_succeeded" to
	// tieout.KindPayment; nil means the values are the kinds. Rows of other values are not
	// read.
	KindValues map[string]string
	// IDColumn holds the id a row is booked under (a text column). Required.
	IDColumn string
	// KeyColumn orders Unpaid's walk: unique and not null. Default "id".
	KeyColumn string
	// AmountColumn and CurrencyColumn hold the amount in minor units and its ISO code.
	// Default "amount" and "currency".
	AmountColumn, CurrencyColumn string
	// Basis is what the amount is: tieout.Presentment (the default) or tieout.Settlement.
	Basis tieout.Basis
	// Negate reports that the table stores money going out as positive amounts (a refunds
	// table): they are read negated.
	Negate bool
	// FeeColumn holds the booked fee in minor units of the settlement currency; empty means
	// the table books no fees.
	FeeColumn string
	// SettledAtColumn holds when the row settled (NULL: not settled); AvailableOnColumn when
	// its money became available; GroupColumn the payout the host recorded it in (NULL or
	// empty: none); StatusColumn its status. All optional; Unpaid reads only the tables
	// with SettledAtColumn and GroupColumn. SettledAtColumn and AvailableOnColumn are
	// timestamptz, timestamp (read in the session's zone) or date columns.
	SettledAtColumn, AvailableOnColumn, GroupColumn, StatusColumn string
}

// Ledger is a tieout.Ledger over the host's tables.
type Ledger struct {
	db     DB
	tables []table
}

var _ tieout.Ledger = (*Ledger)(nil)

// table is a Table's statements.
type table struct {
	Table
	booked      string // $1 ids, ($2 kind values for a kind column)
	unpaid      string // from the start: $1 cut-off, $2 NULL, $3 limit, $4 ahead; "" if not walked
	unpaidAfter string // after a key: $1 cut-off, $2 the key, $3 limit, $4 ahead
	// kindOf maps a kind column's values to kinds; values lists them per kind.
	kindOf map[string]string
	values map[string][]string
}

// New checks cfg and returns a Ledger over db.
func New(db DB, cfg Config) (*Ledger, error) {
	if db == nil {
		return nil, errors.New("pgledger: db is nil")
	}
	if len(cfg.Tables) == 0 {
		return nil, errors.New("pgledger: config: no Tables")
	}
	l := &Ledger{db: db}
	for i, t := range cfg.Tables {
		tt, err := build(t)
		if err != nil {
			return nil, fmt.Errorf("pgledger: config: table %d (%q): %w", i, shorten(t.Name), err)
		}
		l.tables = append(l.tables, tt)
	}
	return l, nil
}

// build checks t, fills its defaults and writes its statements.
func build(t Table) (table, error) {
	switch {
	case t.Name == "":
		return table{}, errors.New("Name is empty")
	case t.IDColumn == "":
		return table{}, errors.New("IDColumn is empty")
	case (t.Kind == "") == (t.KindColumn == ""):
		return table{}, errors.New("exactly one of Kind and KindColumn must be set")
	case t.Kind != "" && t.KindValues != nil:
		return table{}, errors.New("KindValues need a KindColumn")
	case t.Basis != 0 && t.Basis != tieout.Presentment && t.Basis != tieout.Settlement:
		return table{}, fmt.Errorf("Basis %d is neither presentment nor settlement", t.Basis)
	}
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&t.KeyColumn, "id")
	def(&t.AmountColumn, "amount")
	def(&t.CurrencyColumn, "currency")
	if t.Basis == 0 {
		t.Basis = tieout.Presentment
	}
	for _, f := range []struct{ field, v string }{{"Schema", t.Schema}, {"Name", t.Name}, {"KindColumn", t.KindColumn},
		{"IDColumn", t.IDColumn}, {"KeyColumn", t.KeyColumn}, {"AmountColumn", t.AmountColumn}, {"CurrencyColumn", t.CurrencyColumn},
		{"FeeColumn", t.FeeColumn}, {"SettledAtColumn", t.SettledAtColumn}, {"AvailableOnColumn", t.AvailableOnColumn},
		{"GroupColumn", t.GroupColumn}, {"StatusColumn", t.StatusColumn}} {
		if err := checkIdent(f.field, f.v); err != nil {
			return table{}, err
		}
	}
	tt := table{Table: t}
	if t.KindColumn != "" {
		tt.kindOf, tt.values = map[string]string{}, map[string][]string{}
		for v, k := range t.KindValues {
			if k == "" {
				return table{}, fmt.Errorf("KindValues maps %q to no kind", v)
			}
			tt.kindOf[v] = k
			tt.values[k] = append(tt.values[k], v)
		}
	}
	col := func(name string) string { return pgx.Identifier{name}.Sanitize() }
	opt := func(name, typ string) string {
		if name == "" {
			return "NULL::" + typ
		}
		return col(name)
	}
	// settled and avail are the time columns as timestamptz (see instant).
	settled, avail := "NULL::timestamptz", "NULL::timestamptz"
	if t.SettledAtColumn != "" {
		settled = instant(col(t.SettledAtColumn))
	}
	if t.AvailableOnColumn != "" {
		avail = instant(col(t.AvailableOnColumn))
	}
	rel := pgx.Identifier{t.Name}.Sanitize()
	if t.Schema != "" {
		rel = pgx.Identifier{t.Schema, t.Name}.Sanitize()
	}
	kind := "NULL::text"
	if t.KindColumn != "" {
		kind = col(t.KindColumn) + "::text"
	}
	sel := fmt.Sprintf(`SELECT %s, %s::text, %s::bigint, %s::text, %s::bigint, %s, %s, %s::text, %s::text, %s::text FROM %s`,
		kind, col(t.IDColumn), col(t.AmountColumn), col(t.CurrencyColumn), opt(t.FeeColumn, "bigint"), settled,
		avail, opt(t.GroupColumn, "text"), opt(t.StatusColumn, "text"), col(t.KeyColumn), rel)
	if t.KindColumn == "" {
		tt.booked = sel + fmt.Sprintf(` WHERE %s::text = ANY($1::text[])`, col(t.IDColumn))
	} else {
		tt.booked = sel + fmt.Sprintf(` WHERE (%s::text, %s::text) IN (SELECT * FROM unnest($2::text[], $1::text[]))`, col(t.KindColumn), col(t.IDColumn))
	}
	if t.SettledAtColumn != "" && t.GroupColumn != "" {
		conds := []string{
			col(t.SettledAtColumn) + " IS NOT NULL",
			// A row without an id cannot be in a payout; one without a key cannot be walked
			// past (the walk would start again after it).
			fmt.Sprintf("coalesce(%s::text, '') <> ''", col(t.IDColumn)),
			col(t.KeyColumn) + " IS NOT NULL",
			fmt.Sprintf("coalesce(%s::text, '') = ''", col(t.GroupColumn)),
			// Past the cut-off; or settled or available after $4, an impossible time that would
			// never be past it (greatest ignores a NULL; a NULL $4 is no bound).
			fmt.Sprintf("(coalesce(%s, %s) < $1 OR greatest(%s, %s) > $4::timestamptz)", avail, settled, settled, avail),
		}
		if t.KindColumn != "" {
			conds = append(conds, col(t.KindColumn)+"::text = ANY($5::text[])")
		}
		// ORDER BY names the table's column: a bare name would be the select list's text cast
		// of it, whose order ("13" before "2") is not the one the walk resumes by (key > $2).
		// The start and the resumption are two statements: one with "key > $2 OR $2 IS NULL"
		// gets a generic plan that reads the index from its start on every page.
		where := sel + " AS ledger_row WHERE " + strings.Join(conds, " AND ")
		order := fmt.Sprintf(" ORDER BY ledger_row.%s LIMIT $3", col(t.KeyColumn))
		tt.unpaid = where + " AND $2::text IS NULL" + order
		tt.unpaidAfter = where + fmt.Sprintf(" AND %s > $2", col(t.KeyColumn)) + order
	}
	return tt, nil
}

// instant reads the time column c (timestamptz, timestamp or date) as timestamptz. A timestamp
// or date is taken in the session's zone, except within a day of either end of timestamptz's
// range or past it (a date runs on to 5874897): there the zone's offset could take it out of
// range and fail every call over the table for good ("timestamp out of range"), so it is read
// as UTC, clamped just inside the range. Such a time is impossible either way: at the top it is
// settled in the future; at the bottom long past (never paid out, like '-infinity'). A
// timestamptz is the same instant either way (to within the float8 to_timestamp takes: some
// microseconds, there only). c must be of one of the three types: a text column is refused by
// PostgreSQL at the first call (isfinite and extract take no text).
func instant(c string) string {
	return fmt.Sprintf(`(CASE WHEN isfinite(%[1]s) AND NOT %[1]s BETWEEN '4713-01-01 BC' AND '294276-12-30'
		THEN to_timestamp(least(extract(epoch FROM %[1]s), %[2]s)) ELSE %[1]s::timestamptz END)`, c, lastEpoch)
}

// lastEpoch is just before the end of timestamptz's range (294277-01-01 UTC) in seconds since
// 1970: to_timestamp takes a float8, which would round a time in the last 2 ms of the range up
// to its end, out of range.
const lastEpoch = "9224318015999.99"

// Booked returns the records booked under keys, from every table in one round trip. A key
// whose id PostgreSQL cannot hold as text (NUL, invalid UTF-8) has no record: its line is
// unbooked, and the tie-out goes on.
func (l *Ledger) Booked(ctx context.Context, keys []tieout.Key) ([]tieout.Booked, error) {
	byKind := map[string][]string{}
	for _, k := range keys {
		if k.ID == "" || !utf8.ValidString(k.ID) || strings.IndexByte(k.ID, 0) >= 0 {
			continue
		}
		byKind[k.Kind] = append(byKind[k.Kind], k.ID)
	}
	var batch pgx.Batch
	var asked []int
	for i, t := range l.tables {
		if t.KindColumn == "" {
			if ids := byKind[t.Kind]; len(ids) > 0 {
				batch.Queue(t.booked, ids)
				asked = append(asked, i)
			}
			continue
		}
		var ids, values []string
		for kind, kids := range byKind {
			vs := t.values[kind]
			if t.KindValues == nil {
				vs = []string{kind}
			}
			for _, v := range vs {
				for _, id := range kids {
					ids, values = append(ids, id), append(values, v)
				}
			}
		}
		if len(ids) > 0 {
			batch.Queue(t.booked, ids, values)
			asked = append(asked, i)
		}
	}
	if len(asked) == 0 {
		return nil, nil
	}
	br := l.db.SendBatch(ctx, &batch)
	defer br.Close()
	var out []tieout.Booked
	for _, i := range asked {
		rows, err := br.Query()
		if err != nil {
			return nil, fmt.Errorf("pgledger: read booked records of %s: %w", l.tables[i].Name, err)
		}
		recs, _, err := l.tables[i].scan(rows)
		if err != nil {
			return nil, fmt.Errorf("pgledger: read booked records of %s: %w", l.tables[i].Name, err)
		}
		out = append(out, recs...)
	}
	return out, br.Close()
}

// Unpaid walks the tables with a SettledAtColumn and a GroupColumn, in order, each by its
// KeyColumn; the position is the table's index and the last key read.
func (l *Ledger) Unpaid(ctx context.Context, req tieout.UnpaidRequest) (tieout.UnpaidPage, error) {
	if req.Limit < 1 {
		return tieout.UnpaidPage{}, fmt.Errorf("pgledger: unpaid limit %d is below 1", req.Limit)
	}
	ti, after, err := parsePosition(req.After, len(l.tables))
	if err != nil {
		return tieout.UnpaidPage{}, err
	}
	page := tieout.UnpaidPage{Next: req.After}
	for ; ti < len(l.tables) && len(page.Records) < req.Limit; ti, after = ti+1, nil {
		t := l.tables[ti]
		if t.unpaid == "" {
			continue
		}
		var ahead *time.Time
		if !req.Ahead.IsZero() {
			ahead = &req.Ahead
		}
		args := []any{req.Before, after, req.Limit - len(page.Records), ahead}
		if t.KindColumn != "" {
			args = append(args, t.kindValues())
		}
		stmt := t.unpaid
		if after != nil {
			stmt = t.unpaidAfter
		}
		rows, err := l.db.Query(ctx, stmt, args...)
		if err != nil {
			return tieout.UnpaidPage{}, fmt.Errorf("pgledger: read unpaid records of %s: %w", t.Name, err)
		}
		recs, last, err := t.scan(rows)
		if err != nil {
			return tieout.UnpaidPage{}, fmt.Errorf("pgledger: read unpaid records of %s: %w", t.Name, err)
		}
		page.Records = append(page.Records, recs...)
		if len(recs) > 0 {
			page.Next = strconv.Itoa(ti) + ":" + last
		}
	}
	return page, nil
}

// kindValues are the values of the kind column the table's rows may have.
func (t table) kindValues() []string {
	if t.KindValues == nil {
		return []string{tieout.KindPayment, tieout.KindRefund, tieout.KindDispute, tieout.KindRefundFailure,
			tieout.KindPaymentFailureRefund, tieout.KindFee, tieout.KindGroup, tieout.KindGroupFailure, tieout.KindOther}
	}
	vs := make([]string, 0, len(t.KindValues))
	for v := range t.KindValues {
		vs = append(vs, v)
	}
	return vs
}

// parsePosition reads "table:key"; empty is the start.
func parsePosition(pos string, n int) (int, *string, error) {
	if pos == "" {
		return 0, nil, nil
	}
	i, key, ok := strings.Cut(pos, ":")
	ti, err := strconv.Atoi(i)
	if !ok || err != nil || ti < 0 || ti >= n {
		return 0, nil, fmt.Errorf("pgledger: unpaid position %q is not one of this ledger's", pos)
	}
	return ti, &key, nil
}

// scan reads rows as booked records and returns the last key read.
func (t table) scan(rows pgx.Rows) ([]tieout.Booked, string, error) {
	defer rows.Close()
	var out []tieout.Booked
	var last string
	for rows.Next() {
		var (
			kind, currency, group, status *string
			id, key                       *string
			amount, fee                   *int64
			settled, avail                pgtype.Timestamptz
		)
		if err := rows.Scan(&kind, &id, &amount, &currency, &fee, &settled, &avail, &group, &status, &key); err != nil {
			return nil, "", err
		}
		last = deref(key)
		b := tieout.Booked{Kind: t.Kind, ID: deref(id), Currency: deref(currency), Basis: t.Basis,
			Group: deref(group), Status: deref(status)}
		if amount == nil {
			// A booking of no known amount matches no line: no currency, so its line is an
			// amount that differs, for a person, never an unbooked line whose repair would book
			// it again.
			b.Currency = ""
		} else {
			b.Amount = *amount
		}
		if t.KindColumn != "" {
			b.Kind = deref(kind)
			if t.KindValues != nil {
				b.Kind = t.kindOf[b.Kind]
			}
		}
		if t.Negate {
			if b.Amount == math.MinInt64 {
				b.Amount, b.Currency = 0, "" // no int64 is its negative: an amount not known, as NULL
			}
			b.Amount = -b.Amount
		}
		if fee != nil {
			b.Fee, b.HasFee = *fee, true
		}
		b.SettledAt, b.AvailableOn = timeOf(settled), timeOf(avail)
		out = append(out, b)
	}
	return out, last, rows.Err()
}

// infinity and minusInfinity are the times a booked record gets for PostgreSQL's 'infinity'
// and '-infinity', which no time.Time holds: beyond the times PostgreSQL stores (294276 AD,
// 4713 BC). A record settled at 'infinity' is settled in the future; one settled at
// '-infinity' long past.
var (
	infinity      = time.Date(294277, 1, 1, 0, 0, 0, 0, time.UTC)
	minusInfinity = time.Date(-4714, 1, 1, 0, 0, 0, 0, time.UTC)
)

// timeOf is t as a booked record's time; zero if NULL.
func timeOf(t pgtype.Timestamptz) time.Time {
	switch {
	case !t.Valid:
		return time.Time{}
	case t.InfinityModifier == pgtype.Infinity:
		return infinity
	case t.InfinityModifier == pgtype.NegativeInfinity:
		return minusInfinity
	}
	return t.Time
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// maxIdent is the longest identifier PostgreSQL keeps whole (NAMEDATALEN - 1 bytes); a longer
// one is cut, perhaps to another column's name.
const maxIdent = 63

// checkIdent refuses an identifier that PostgreSQL would not read as written: quoting drops a
// NUL ("pay\x00ments" would name payments), invalid UTF-8 is refused by the server only
// when the statement runs, and a long one is cut. Empty is an optional field left out.
func checkIdent(field, v string) error {
	switch {
	case v == "":
		return nil
	case strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v):
		return fmt.Errorf("%s %q holds a NUL or invalid UTF-8", field, shorten(v))
	case len(v) > maxIdent:
		return fmt.Errorf("%s %q is longer than PostgreSQL's %d bytes", field, shorten(v), maxIdent)
	}
	return nil
}

// shorten cuts s to 64 bytes for a message.
func shorten(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
