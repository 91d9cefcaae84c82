package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// writer is the host's canonical writer: the one place its money is booked. The tie-out reads
// what it wrote (ledger.go) and never writes the host's tables.
type writer struct {
	pool   *pgxpool.Pool
	schema string
}

func (w writer) exec(ctx context.Context, what, query string, args ...any) error {
	if _, err := w.pool.Exec(ctx, inSchema(w.schema, query), args...); err != nil {
		return fmt.Errorf("payouts: booking %s: %w", what, err)
	}
	return nil
}

// bookPayment books a payment of amount (minor units of currency, as charged) under its
// PaymentIntent, settled at paidAt.
func (w writer) bookPayment(ctx context.Context, pi string, amount int64, currency string, paidAt time.Time) error {
	return w.exec(ctx, "payment "+pi, `INSERT INTO payouts_demo.payments
		(stripe_payment_intent_id, status, amount, currency, paid_at) VALUES ($1, 'paid', $2, $3, $4)`,
		pi, amount, currency, paidAt)
}

// bookInvoice books an invoice paid through PaymentIntent pi, in what settled: amount of the
// account's currency.
func (w writer) bookInvoice(ctx context.Context, pi string, settled int64, currency string, paidAt time.Time) error {
	return w.exec(ctx, "invoice "+pi, `INSERT INTO payouts_demo.invoices
		(stripe_payment_intent_id, amount_settled, currency_settled, paid_at) VALUES ($1, $2, $3, $4)`,
		pi, settled, currency, paidAt)
}

// bookRefund books a refund of amount going back to the customer.
func (w writer) bookRefund(ctx context.Context, re string, amount int64, currency string) error {
	return w.exec(ctx, "refund "+re, `INSERT INTO payouts_demo.refunds (stripe_refund_id, amount, currency)
		VALUES ($1, $2, $3)`, re, amount, currency)
}

// bookDispute books the money a dispute withdrew.
func (w writer) bookDispute(ctx context.Context, du string, amount int64, currency string) error {
	return w.exec(ctx, "dispute "+du, `INSERT INTO payouts_demo.disputes (stripe_dispute_id, amount, currency)
		VALUES ($1, $2, $3)`, du, amount, currency)
}

// recordPayout records payout po with its status, and marks the payments and invoices it
// carried (by PaymentIntent) as paid out in it.
func (w writer) recordPayout(ctx context.Context, po string, amount int64, currency, status string, carried ...string) error {
	if err := w.exec(ctx, "payout "+po, `INSERT INTO payouts_demo.payouts (stripe_payout_id, amount, currency, status)
		VALUES ($1, $2, $3, $4) ON CONFLICT (stripe_payout_id) DO UPDATE SET status = excluded.status`,
		po, amount, currency, status); err != nil {
		return err
	}
	for _, table := range []string{"payouts_demo.payments", "payouts_demo.invoices"} {
		if err := w.exec(ctx, "payout "+po, `UPDATE `+table+` SET payout_id = $1
			WHERE stripe_payment_intent_id = ANY($2) AND payout_id IS NULL`, po, carried); err != nil {
			return err
		}
	}
	return nil
}
