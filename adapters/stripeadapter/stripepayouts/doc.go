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
//	// At volume, itemize the sweep's pages with reports instead (see Reports):
//	//   byReport, err := lister.WithReports(stripepayouts.ReportOptions{Logger: logger})
//	//   and Lister: byReport above.
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
// # Reports
//
// [Lister.WithReports] returns a [ReportLister], the way to itemize payouts at volume (Stripe's
// own advice for payout reconciliation): its Groups are the Lister's, and for each page it runs
// one itemized payout reconciliation report (ReportType, POST /v1/reporting/report_runs with
// interval_start and interval_end around the page's payouts' effective times (arrival_date),
// the columns it reads and, for a page in one currency, currency), polls the run
// (GET /v1/reporting/report_runs/{id}, waits doubling from ReportOptions.PollInterval, at most
// MaxWait or half the step's time left), and downloads its result file (GET files.stripe.com/v1/files/{id}/contents, at most
// MaxBytes). Members then serves each covered payout's lines from the file, in one page, through
// stripepolicy.ReportMember (the reporting category's kind, gross, fee and net read exactly from
// major units, customer_facing_amount as the presentment amount, payment_intent_id as the id a
// charge is booked under), so that the tie-out finds what listing finds.
//
// A payout is covered when it is automatic and paid and its effective time is before the report
// type's data_available_end (GET /v1/reporting/report_types/{type}, read again only when a
// payout is past the end last read), a second inside it. The rest are listed one by one, as the Lister does: a
// failed or canceled payout (whether the report itemizes those is not documented), a manual
// one (no call at all), a payout too recent for the report's data (Stripe's data lags by about
// a day), one the report holds no line of, one with a line listing would not give (in another
// currency than the payout's, a net that is not its gross less its fee, a charge's, refund's or
// dispute's without its customer_facing_amount: the tie-out would judge it invalid or its
// source unread), and one whose lines in the report do not sum to it (a drift, which the
// listing then finds, or a report short of lines: a report never makes a sum finding of its
// own). So is every payout of a page whose report cannot
// be used: a 400 or 404 on it, a run that failed or did not finish within MaxWait, a file
// larger than MaxBytes, a result url that is not a file of the client's files host (refused
// before any request, and a redirect, never followed: the key goes to no other host), or a file
// that does not read: a header without a column asked for (read in any case; a column not asked
// for is left unread), a cell that is not printable UTF-8 or longer than 255 bytes,
// an amount with more decimals than its currency has or out of int64, a balance transaction
// listed twice, a row of a payout the page does not hold. Each is logged (ReportOptions.Logger)
// with why, which names a row and a column, the run's id, never what Stripe or the file sent
// there (a cell, the header, the url, the run's error or status: any may hold the key in a form
// redaction cannot see); a missing or broken report never makes a finding. A rate limit, an outage, a
// rejected key or the context's end on any report call fails the page as on any list call (see
// Errors): nothing is written, and the next step asks again, waiting for the run the failed try
// created (the same parameters) rather than creating another; a run that failed is not asked
// again.
//
// A report is checked against the payouts, not proven: lines moved between two payouts of one
// page so that each still sums to its amount would be served, each judged as a line of the
// payout the report names (the same findings, under another payout), as the payout objects
// give no count of lines or other total to check them by.
//
// The events lane stays on per-payout listing (the EventsLister has no report): the payouts it
// ties out have just finished, and are mostly past data_available_end. Reports are the
// platform's: a connected account's lister is refused (Stripe runs those through report types of
// their own, connected_account_payout_reconciliation.*, not used here), so each connected
// account is listed one by one.
//
// # What a tie-out costs
//
//	payouts        one call per PerPage payouts (once per walk without a position: the
//	               whole list since Config.Since, newest first, a hundred a call)
//	lines          ceil(n/100) calls for a payout of n balance transactions, its own
//	               payout line included; none for a manual payout
//	reports        (a ReportLister) per page: a run created, polled until it finishes (one
//	               retrieve per wait) and its file downloaded, whatever the number of lines;
//	               the report type read once, and again when a payout is past its data; the
//	               lines of the payouts no report covers as above
//	events lane    one call per hundred events, plus one retrieve per payout they touch
//
// Stripe's payout filter lists one payout's lines per call, so a payout of 250 lines costs
// three calls (0.012 a line), one of 1,000 lines ten (0.010): the calls per line fall below
// 0.011 only for payouts of about a thousand lines and more. A report costs the same for ten
// payouts of 250 lines as for ten of 10,000: with a run finished at its first poll, four calls
// a page, 0.0016 a line for ten payouts of 250.
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
