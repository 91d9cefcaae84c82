package main

import (
	"time"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepayouts"
	"github.com/reconcilekit/reconcile/tieout"
)

// The host's wiring of the tie-out: what a service would copy. The ledger is in ledger.go.

// job names the tie-out: the sweep's, the events lane's and the never-paid-out walk's findings
// are one job's, so a drift two of them see is one finding.
const job = "payouts"

// steps are the tie-out's three lanes over one store and one ledger.
type steps struct {
	sweep, events *tieout.Step
	unpaid        *tieout.UnpaidStep
}

// newSteps builds them: the sweep walks the payouts oldest first, itemizing each page of paid
// payouts with one Stripe report run (a few calls however many lines; a payout the report does
// not cover yet is listed, a hundred lines a call); the events lane ties out a
// payout within a minute or two of its payout.* events, and judges again a paid payout that
// failed; the unpaid walk reads the host's ledger for settled money no payout carried. store
// (pgstore) records their findings, positions and the payouts tied out, each step in one
// transaction; the console reads them from there.
func newSteps(cfg stripeadapter.GatewayConfig, ledger tieout.Ledger, store *pgstore.Store[string], now func() time.Time) (steps, error) {
	payouts, err := stripeadapter.NewObjectGateway(cfg, stripeadapter.Payouts())
	if err != nil {
		return steps{}, err
	}
	lister, err := stripepayouts.New(payouts, stripepayouts.Config{})
	if err != nil {
		return steps{}, err
	}
	// Stripe takes seconds to minutes to run a report (polled from every 2s by default, for at
	// most 2 minutes); the fake runs it at once.
	byReport, err := lister.WithReports(stripepayouts.ReportOptions{PollInterval: 50 * time.Millisecond})
	if err != nil {
		return steps{}, err
	}
	events, err := lister.EventsLister(stripeadapter.EventsOptions{Now: now})
	if err != nil {
		return steps{}, err
	}
	var s steps
	if s.sweep, err = tieout.NewStep(tieout.StepConfig{Job: job, Lane: "sweep", Lister: byReport, Ledger: ledger, Sink: store, Policy: policy}); err != nil {
		return steps{}, err
	}
	if s.events, err = tieout.NewStep(tieout.StepConfig{Job: job, Lane: "events", Lister: events, Ledger: ledger, Sink: store, Policy: policy}); err != nil {
		return steps{}, err
	}
	if s.unpaid, err = tieout.NewUnpaidStep(tieout.UnpaidConfig{Job: job, Lane: "unpaid", Ledger: ledger, Sink: store, Now: now}); err != nil {
		return steps{}, err
	}
	return s, nil
}
