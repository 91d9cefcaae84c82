// Command auditdemo sets up something to try "reconcile audit" on without a Stripe account: a
// payments table with drift planted in a schema of its own, and stripetest, the fake Stripe,
// listening on a local port. It prints the command line to run in another terminal, then
// serves until Ctrl-C, when it drops the schema.
//
//	go run ./tools/auditdemo            # then, in another terminal, the command it prints
//
// The drift: a payment Stripe took that the table still calls pending, one the table calls
// paid that Stripe canceled, one charged another amount, one refunded at Stripe only, one whose
// dispute was lost, one changed a moment ago (in flight), and rows in sync.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest"
	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		log.Fatalf("auditdemo: %v", err)
	}
}

// payment is one planted row and its intent.
type payment struct {
	local                  string
	amount, remoteAmount   int64
	remote                 stripe.PaymentIntentStatus
	refundAtStripe, recent bool
	dispute                stripe.DisputeStatus
}

var planted = []payment{
	{local: "paid", amount: 1999, remote: "succeeded"},
	{local: "pending", amount: 4500, remote: "succeeded"},
	{local: "paid", amount: 12000, remote: "canceled"},
	{local: "paid", amount: 1000, remoteAmount: 1250, remote: "succeeded"},
	{local: "paid", amount: 8000, remote: "succeeded", refundAtStripe: true},
	{local: "paid", amount: 15000, remote: "succeeded", dispute: stripe.DisputeStatusLost},
	{local: "pending", amount: 2500, remote: "processing", recent: true},
	{local: "failed", amount: 700, remote: "requires_payment_method"},
	{local: "paid", amount: 3300, remote: "succeeded"},
}

// run plants the drift, writes to out the command lines to run, and serves until ctx is done;
// then it drops the schema.
func run(ctx context.Context, out io.Writer) error {
	url, source := pgenv.URL("DATABASE_URL")
	pool, err := pgenv.Connect(ctx, url, source)
	if err != nil {
		return err
	}
	defer pool.Close()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	schema := "auditdemo_" + hex.EncodeToString(b[:])
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+ident+`;
		CREATE TABLE `+ident+`.payments (
			id bigint PRIMARY KEY, stripe_payment_intent_id text NOT NULL, status text NOT NULL,
			amount bigint NOT NULL, currency text NOT NULL, amount_refunded bigint NOT NULL DEFAULT 0, dispute_status text,
			created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)`); err != nil {
		return err
	}
	defer func() {
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA "+ident+" CASCADE"); err != nil {
			log.Printf("auditdemo: drop schema %s: %v", schema, err)
		}
	}()
	srv := stripetest.NewServer(stripetest.Options{})
	defer srv.Close()
	created := time.Now().Add(-30 * 24 * time.Hour).Truncate(time.Second)
	for i, p := range planted {
		created = created.Add(37 * time.Minute)
		amount := p.amount
		if p.remoteAmount != 0 {
			amount = p.remoteAmount
		}
		pi := srv.AddPaymentIntent(stripetest.PaymentIntent{Status: p.remote, Amount: amount, Currency: "usd", Created: created})
		if p.refundAtStripe {
			if _, err := srv.Refund(pi, 0); err != nil {
				return err
			}
		}
		if p.dispute != "" {
			if _, err := srv.Dispute(pi, 0, p.dispute, time.Time{}); err != nil {
				return err
			}
		}
		updated := created
		if p.recent {
			updated = time.Now()
		}
		if _, err := pool.Exec(ctx, "INSERT INTO "+ident+`.payments (id, stripe_payment_intent_id, status, amount, currency, created_at, updated_at)
			VALUES ($1, $2, $3, $4, 'usd', $5, $6)`, i+1, pi, p.local, p.amount, created, updated); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, `A payments table with drift is in schema %s, and a fake Stripe listens at %s.
In another terminal, from the repository's root:

  export STRIPE_SECRET_KEY=%s
  go run ./cmd/reconcile audit --schema %s --table payments --external-id-column stripe_payment_intent_id \
    --stripe-base-url %s
  go run ./cmd/reconcile audit --schema %s --table payments --external-id-column stripe_payment_intent_id \
    --stripe-base-url %s --money --amount-refunded-column amount_refunded --dispute-status-column dispute_status

Ctrl-C here drops the schema and stops the fake.
`, schema, srv.URL(), srv.Key(), schema, srv.URL(), schema, srv.URL())
	<-ctx.Done()
	return nil
}
