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
// (GroupColumn NULL or empty), available before the cut-off.
package pgledger
