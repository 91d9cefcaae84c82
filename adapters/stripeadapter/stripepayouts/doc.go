// Package stripepayouts is the Stripe side of a payouts tie-out (package tieout), an extension
// of the object kit (package stripeadapter): on a gateway of payouts, the account's payouts and
// each one's balance transactions, converted by stripepolicy's payout policy, for a tieout.Step.
//
//	payouts, err := stripeadapter.NewObjectGateway(cfg, stripeadapter.Payouts())
//	if err != nil { ... }
//	lister, err := stripepayouts.New(payouts, stripepayouts.Config{Limiter: limiter})
//	if err != nil { ... }
//	sweep, err := tieout.NewStep(tieout.StepConfig{Job: "payouts", Lane: "sweep",
//		Lister: lister, Ledger: ledger, Sink: store})
//	events, err := lister.EventsLister(stripeadapter.EventsOptions{})
//	lane, err := tieout.NewStep(tieout.StepConfig{Job: "payouts", Lane: "events",
//		Lister: events, Ledger: ledger, Sink: store})
//
// # The sweep
//
// [Lister.Groups] walks the account's payouts oldest first, PerPage at a time, from a position
// (the last payout tied out, by id and created time) that the step stores with its findings,
// so that a restart resumes where the last commit left. Only payouts whose balance
// transactions are final are tied out: an automatic payout once its reconciliation_status is
// completed (or it failed or was canceled), a manual one once paid, failed or canceled. The
// walk stops before the first payout that is not final and reports the end of its pass; the
// next step lists again from there (one call), so a pending payout is revisited every step
// until Stripe finishes it, and none after it is tied out before it by the sweep (the events
// lane ties those out meanwhile). A payout that stays pending holds the sweep at it; the step
// still reports the end of its pass each time, so the lane's health does not show the wait
// (the payout's own status does: watch payouts pending past their arrival_date).
//
// [Lister.Members] lists a payout's balance transactions, GET /v1/balance_transactions
// ?payout=po_... with expand[]=data.source, a hundred a call, so that each line carries its
// charge, refund or dispute (the presentment amount, the PaymentIntent the host books it
// under) at no call of its own. A manual payout cannot be itemized (Stripe refuses the filter
// on it): it costs no call and is reported as not itemizable, never as a sum that does not
// hold.
//
// # What a tie-out costs
//
//	payouts        one call per PerPage payouts (once per walk without a position: the
//	               whole list since Config.Since, newest first, a hundred a call)
//	lines          ceil(n/100) calls for a payout of n balance transactions, its own
//	               payout line included; none for a manual payout
//	events lane    one call per hundred events, plus one retrieve per payout they touch
//
// Stripe's payout filter lists one payout's lines per call, so a payout of 250 lines costs
// three calls (0.012 a line), one of 1,000 lines ten (0.010): the calls per line fall below
// 0.011 only for payouts of about a thousand lines and more.
//
// # Errors
//
// Every call goes through the gateway's stripeadapter.Client, whose error mapping the tie-out
// step sees: a 429 is a *reconcile.RateLimitError (the limiter, if a reconcile.Throttler, is
// told), a 5xx or a timeout reconcile.ErrUnavailable, a 401 or 403 reconcile.ErrAbortBatch.
// The step then writes nothing and keeps its position, so a rate limit or an outage delays a
// payout's tie-out and never skips it, nor reports it in sync: a rate limit is reported
// (Report.Deferred and RateLimited, no error), the rest fail the step. A 400 or a 404 on one
// payout's balance transactions is Stripe refusing that payout for good: the step records it
// as a tieout.KindLinesRefused finding with Stripe's message (the key redacted) and goes on. A
// 200 that is not a list, or a payout without a payout id, is not an answer (ErrUnavailable).
//
// # Lanes
//
// [Lister.EventsLister] reads the account's payout events (EventTypes) after a checkpoint and
// lists the final payouts they touch, read anew, so that a payout is tied out within a minute
// or two of payout.reconciliation_completed, and a paid payout that failed
// (payout.failed) is judged again: the tie-out then reports it failed unless the host booked
// it so. The sweep does not go back to payouts it has passed; besides this lane, a payout that
// failed after paid shows in a later payout's payout_failure line, which the host must book.
//
// # Connect
//
// [Lister.ForAccount] returns the lister of a connected account, its calls carrying
// Stripe-Account and its groups naming the account. Give each account a Step under a job of its
// own ("payouts@acct_..."), and cover them with a reconcile.FanOut, whose health proves that
// every account completed a pass in each round.
package stripepayouts
