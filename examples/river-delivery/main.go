// River-delivery applies the reconciler's repair commands as River jobs
// (adapters/riverdelivery) instead of running pgoutbox's Dispatcher: the service already runs
// River, so the commands go to its queue, enqueued in the reconciler's own commit transaction.
//
//	go run ./examples/river-delivery
//
// It connects to $DATABASE_URL (by default postgres://postgres@127.0.0.1:5432/test?sslmode=disable),
// drops and creates the schema reconcile_river_delivery_demo, runs River's migrations
// (rivermigrate) and the reconciler's there, and loads payments whose PaymentIntents are in a
// fake Stripe (stripetest, over HTTP): one in 20 missed its success webhook (pending here,
// succeeded at Stripe: repairable), one in 47 is paid here though Stripe canceled it (for a
// person). It sweeps the table once, with River's client not yet working, and shows the jobs
// the commits enqueued; then it starts the client and waits until River has completed them all:
// each applied through the canonical writer, which resolves the finding in the same
// transaction as River's completion. It exits with status 1 if a repair was missed, applied
// twice, or left its finding open, or if a finding for a person was closed.
//
// Flags:
//
//	-rows N     payments to load (default 1000)
//	-schema S   the schema to drop and create (default reconcile_river_delivery_demo)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

// options are the program's flags.
type options struct {
	DatabaseURL, DatabaseSource string
	Schema                      string
	Rows                        int
}

func main() {
	var opts options
	opts.DatabaseURL, opts.DatabaseSource = pgenv.URL("DATABASE_URL")
	flag.IntVar(&opts.Rows, "rows", 1000, "payments to load")
	flag.StringVar(&opts.Schema, "schema", "reconcile_river_delivery_demo", "the schema to drop and create")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, opts); err != nil {
		fmt.Fprintln(os.Stderr, "river-delivery:", err)
		stop()
		os.Exit(1)
	}
}

// run sets up, sweeps, lets River apply the repairs and checks the outcome.
func run(ctx context.Context, out io.Writer, opts options) error {
	if opts.Rows < 47 {
		return fmt.Errorf("-rows %d: at least 47 hold both kinds of planted drift", opts.Rows)
	}
	pool, fx, err := setUp(ctx, opts)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer fx.stripe.Close()
	fmt.Fprintf(out, "Loaded %d payments into %s.payments; planted %d missed success webhooks (repairable), %d payments paid here but canceled at Stripe (review)\n",
		opts.Rows, opts.Schema, fx.repairable, fx.review)

	h, err := newHost(pool, opts.Schema, fx.stripe.Key(), fx.stripe.URL())
	if err != nil {
		return err
	}
	return demo(ctx, out, h, fx)
}
