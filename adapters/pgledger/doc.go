// Package pgledger is the host's ledger in PostgreSQL as package tieout reads it: a
// tieout.Ledger described by config over the host's own tables, read-only.
//
// A host books its money in separate tables (payments, refunds, disputes), each a [Table]
// with its one booked Kind, or in one ledger table whose KindColumn says what each row is
// (KindValues maps the host's words onto tieout's kinds). Each Table names the columns the
// tie-out reads: the id a row is booked under (the external id the tie-out asks about, such
// as a pi_... for a host that books payments and their refunds under the PaymentIntent), its
// amount and currency in its Basis (presentment or settlement), optionally its fee, when it
// settled, when it became available, the payout the host recorded it in and its status.
// Identifiers are quoted (pgx.Identifier), never concatenated raw, and nothing is written.
//
//	ledger, err := pgledger.New(pool, pgledger.Config{Tables: []pgledger.Table{
//		{Name: "payments", Kind: tieout.KindPayment, IDColumn: "stripe_payment_intent_id",
//			SettledAtColumn: "paid_at", GroupColumn: "payout_id"},
//		{Name: "refunds", Kind: tieout.KindRefund, IDColumn: "stripe_refund_id", Negate: true},
//	}})
//
// Booked asks every table in one round trip (a pgx.Batch), one statement per table over
// arrays of ids. Unpaid walks the tables that name a SettledAtColumn and a GroupColumn in
// order, each by its KeyColumn (keyset, never OFFSET), for rows settled, in no payout
// (GroupColumn NULL or empty), available before the cut-off, with an id and a key; and for
// rows settled or available after the request's Ahead (more than reconcile.MaxClockSkew ahead
// of the clock: an impossible time that would never be before the cut-off, reported as
// settled_in_future). 'infinity' reads as a time after any PostgreSQL holds (294277-01-01),
// '-infinity' as one before (4714 BC), in timestamptz and timestamp columns alike. A timestamp
// or date within a day of either end of timestamptz's range (or past it), which the session's
// zone could take out of range, is read as UTC: settled in the future at the top, long past
// (never paid out) at the bottom; it never fails a call.
//
// # Indexes a host needs
//
// Booked compares IDColumn as text (col::text = ANY($1)), so that an id that is not of the
// column's type (a line's id against a uuid column) is simply not booked. A text or varchar
// IDColumn needs its plain index; a column of another type (uuid, bigint) needs an index on
// the expression: CREATE INDEX ON fees ((ref::text)). Without it each Booked call scans the
// table: measured on 1,000,000 rows (PostgreSQL, 100 ids a call), 0.17 ms with the index and
// 670 ms for a uuid column without the expression index (0.65 ms with it); one ledger table
// with a KindColumn, its IDColumn indexed, 0.25 ms (custom and generic plans alike). Unpaid reads
// KeyColumn's index (a primary key) from its position; where most settled rows are paid out,
// a partial index makes each page read only the candidates:
//
//	CREATE INDEX ON payments (id) WHERE paid_at IS NOT NULL AND coalesce(payout_id::text, '') = '';
//
// measured on 1,000,000 rows of which 1,000 unpaid, 500 a page: 9.6 ms a page with the
// primary key alone, 0.2 ms with the partial index.
//
// A host row with a NULL amount or currency (or, in a Negate table, the smallest bigint) is
// read as a booking of no currency: it matches no line, whose finding is then an amount that
// differs, for a person, never an unbooked line whose repair would book it a second time. No
// row stops Booked or Unpaid, not even one settled at 'infinity' or '-infinity'.
package pgledger
