package pgstore_test

import (
	"context"
	"fmt"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// A store of typed rows: each field of the struct is a column of the host table, read in its
// own type, so that the policy compares amounts in minor units and each finding says which
// fields differ. The findings record the status as the local state, and are found again by
// a search of a host column.
func ExampleNewOf() {
	ctx := context.Background()
	pool, drop := exampleDB(ctx)
	defer drop()
	if _, err := pool.Exec(ctx, `ALTER TABLE payments ADD COLUMN amount_cents bigint, ADD COLUMN currency text,
			ADD COLUMN order_id text;
		UPDATE payments SET amount_cents = 1000 * id, currency = CASE id WHEN 2 THEN 'JPY' ELSE 'USD' END,
			order_id = 'order-' || id`); err != nil {
		panic(err)
	}

	type payment struct {
		Status   string // untagged: column status
		Amount   int64  `db:"amount_cents"`
		Currency string
	}
	store, err := pgstore.NewOf[payment](pool, pgstore.Config{
		Table:            "payments",
		ExternalIDColumn: "stripe_payment_intent_id",
		SearchColumns:    []string{"order_id"},
	})
	if err != nil {
		panic(err)
	}
	if err := pgstore.Migrate(ctx, pool, store.Tables()); err != nil {
		panic(err)
	}

	// What Stripe holds: each PaymentIntent's amount in minor units.
	amounts := reconcile.GatewayFunc[int64](func(_ context.Context, id string) (int64, error) {
		return map[string]int64{"pi_1": 1000, "pi_2": 1500, "pi_3": 2500}[id], nil
	})
	policy := reconcile.ClassifierFunc[payment, int64](func(p payment, amount int64) reconcile.Decision {
		if p.Amount == amount {
			return reconcile.Decision{Verdict: reconcile.InSync}
		}
		return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "amount_mismatch", Diffs: []reconcile.Diff{{
			Field: "amount", Local: reconcile.FormatAmount(p.Amount, p.Currency), External: reconcile.FormatAmount(amount, p.Currency),
		}}}
	})
	_, err = reconcile.RunBatch(ctx, reconcile.Config[payment, int64]{
		Job: "amounts", Source: store, Sink: store, Gateway: amounts, Classifier: policy,
		LocalState: func(p payment) string { return p.Status },
	})
	if err != nil {
		panic(err)
	}
	findings, err := store.ListFindings(ctx, reconcile.FindingQuery{Job: "amounts"})
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		d := f.Diffs[0]
		fmt.Printf("payment %s (%s): %s: %s here, %s at Stripe\n", f.RecordID, f.Local, d.Field, d.Local, d.External)
	}
	found, err := store.ListFindings(ctx, reconcile.FindingQuery{Search: "order-3"})
	if err != nil {
		panic(err)
	}
	fmt.Printf("order-3: %d finding, of payment %s\n", len(found), found[0].RecordID)
	// Output:
	// payment 2 (pending): amount: JPY 2,000 here, JPY 1,500 at Stripe
	// payment 3 (paid): amount: USD 30.00 here, USD 25.00 at Stripe
	// order-3: 1 finding, of payment 3
}
