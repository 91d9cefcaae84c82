package main

import (
	"slices"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile/adapters/pgledger"
	"github.com/reconcilekit/reconcile/tieout"
)

// newLedger describes the host's tables (schema.go) to the tie-out: what each books, under
// which Stripe id, in which basis. Refunds and disputes are stored positive: Negate reads them
// as the money going out. Payments and invoices name when they settled and their payout, so
// that the never-paid-out walk finds money counted as settled that no payout carried.
func newLedger(pool *pgxpool.Pool, schema string) (*pgledger.Ledger, error) {
	return pgledger.New(pool, pgledger.Config{Tables: []pgledger.Table{
		{Schema: schema, Name: "payments", Kind: tieout.KindPayment, IDColumn: "stripe_payment_intent_id",
			SettledAtColumn: "paid_at", GroupColumn: "payout_id", StatusColumn: "status"},
		{Schema: schema, Name: "invoices", Kind: tieout.KindPayment, IDColumn: "stripe_payment_intent_id",
			AmountColumn: "amount_settled", CurrencyColumn: "currency_settled", Basis: tieout.Settlement,
			SettledAtColumn: "paid_at", GroupColumn: "payout_id"},
		{Schema: schema, Name: "refunds", Kind: tieout.KindRefund, IDColumn: "stripe_refund_id", Negate: true},
		{Schema: schema, Name: "disputes", Kind: tieout.KindDispute, IDColumn: "stripe_dispute_id", Negate: true},
		{Schema: schema, Name: "payouts", Kind: tieout.KindGroup, IDColumn: "stripe_payout_id",
			Basis: tieout.Settlement, StatusColumn: "status"},
	}})
}

// policy is this host's: it books payments, refunds, disputes, their failures and its payouts
// (so a payout that failed after paid is a finding until the host records it failed), not fees.
var policy = tieout.Policy{Books: append(slices.Clone(tieout.DefaultBooks), tieout.KindGroup)}
