package main

import (
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripemoney"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
)

// The sweep starts from our rows, so it cannot see a PaymentIntent that no row refers to, and
// it finds a lost webhook only when its cycle comes round to the row, hours or days later. Two
// lanes start from Stripe instead:
//
//   - the events lane reads Stripe's event log after a checkpoint, a call per hundred events:
//     the PaymentIntents' (payment_intent.*), the refunds' (charge.refunded, charge.refund.updated,
//     refund.*) and the disputes' (charge.dispute.*). It reads a refund's state from the Refund
//     and a dispute's outcome from the Dispute, never from an event's type, and judges the
//     payment against our row: a lost webhook, a refund made in the Dashboard or a dispute
//     becomes a finding, with its repair command if it has one, within a minute or two;
//   - the reverse scan lists the PaymentIntents created in the last week, a page of a hundred
//     per step, and reports those no row refers to as missing_locally, for a person.
//
// Both record under the sweep's job, through the same store, so that a drift found by a lane
// and by the sweep is one finding with one command. A host runs them with reconcile.RunTick or
// a reconcile.Runner, the events lane every minute, the reverse scan a page every few
// minutes; the example runs each until it reports Wrapped.

// lanes are the job's events lane and reverse scan, and the times they run by.
type lanes struct {
	events, reverse *reconcile.Lane[paymentRow, *stripepolicy.Payment]
	times           laneTimes
}

// laneTimes are the times the lanes run by, for their feeds and the report.
type laneTimes struct {
	settle        time.Duration // the events feed's settle time
	window, grace time.Duration // the reverse scan's Window and MinAge
	young         string        // how long ago the checkout under way began when the scan starts, in words
}

// lanesOver returns the lanes of store's payments through gateway, stripetest's or real
// Stripe's, with the times t. include, if not nil, says which PaymentIntents the reverse scan
// accounts for (stripeadapter.ObjectReverseOptions.Include).
func lanesOver(store paymentStore, gateway *stripemoney.Gateway, t laneTimes, include func(*stripe.PaymentIntent) bool,
	limiter reconcile.Limiter) (lanes, error) {
	eventsFeed, err := gateway.EventsFeed(stripeadapter.EventsOptions{Settle: t.settle})
	if err != nil {
		return lanes{}, err
	}
	reverseFeed, err := gateway.ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.PaymentIntent]{Window: t.window, MinAge: t.grace, Include: include})
	if err != nil {
		return lanes{}, err
	}
	cfg := reconcile.LaneConfig[paymentRow, *stripepolicy.Payment]{
		Job:        job, // the sweep's: one finding per drift, whoever finds it
		Lane:       laneEvents,
		Feed:       eventsFeed,
		Matcher:    store,
		Sink:       store,
		Classifier: moneyPolicy,
		Limiter:    limiter,
	}
	l := lanes{times: t}
	// No Current: the payment events feed reads each payment's present state rather than an
	// event's snapshot, so no row is ever judged against an older state.
	if l.events, err = reconcile.NewLane(cfg); err != nil {
		return lanes{}, err
	}
	cfg.Lane, cfg.Feed = laneReverse, reverseFeed
	cfg.ReportMissing = true
	// cfg.Grace stays zero: the reverse feed gives its rows the sweep's grace period rather than
	// the events lane's minute (LaneGrace), so a row the sweep leaves alone as just changed (a
	// webhook being applied) is not reported by the scan either.
	if l.reverse, err = reconcile.NewLane(cfg); err != nil {
		return lanes{}, err
	}
	return l, nil
}

// Lanes, as named in the output and in the lanes' positions. The sweep is the job itself.
const (
	laneSweep   = "sweep"
	laneEvents  = "events"
	laneReverse = "reverse"
)
