// Package reconcile finds, classifies and safely repairs drift between a service's own rows and
// an external system such as Stripe.
//
// Webhooks get lost, outages outlast retry windows, people edit things by hand. A reconciler
// walks every local row with a keyset cursor, asks the external system for its state, classifies
// each pair with a pure function, records deduplicated findings, and queues repair commands in a
// transactional outbox. It never updates business rows itself: repairs go through the same
// canonical writer the webhook handler uses, and anything where money may already have moved
// goes to a person.
//
// # The pieces
//
// A job is described by a Config: a Source of local rows, a Gateway to the external system, a
// Classifier and a Sink. The adapters provide them: adapters/pgstore is a Source and Sink over a
// host table in PostgreSQL, adapters/memstore the same in memory, adapters/stripeadapter the
// Stripe side. Each call of RunBatch reads one batch, asks the gateway about each row (outside
// any transaction), classifies, and commits the results.
//
// # Verdicts
//
// Every row gets one Verdict: InSync; InFlight (changed locally within the grace period, or the
// external side is still transitioning: judge later); Repairable (the local side catches up
// automatically, through a repair command); NeedsReview (a person decides; every unanticipated
// combination lands here); Unverifiable (the external system could not be asked, never counted
// as healthy). A Classifier returns a Decision: the verdict, the finding kind and the repair
// command. RuleTable builds one from a declarative table; ClassifierFunc adapts a function.
//
// # Guarantees
//
// RunBatch relies on its Source and Sink for these, and the conformance suite in package
// reconciletest checks them for every adapter:
//
//   - The cursor is a keyset (WHERE key > cursor ORDER BY key LIMIT n), never OFFSET; an empty
//     read wraps it and completes the cycle. Rows present for a whole cycle are checked exactly
//     once in it, whatever is inserted or deleted meanwhile.
//   - Gateway calls happen outside any database transaction.
//   - Observations, findings, repair commands and the cursor advance commit together, and the
//     advance is compare-and-set: a reconciler that lost a race gets ErrConcurrentRun and writes
//     nothing. A crash anywhere means the batch is redone, and redoing is harmless.
//   - Rows changed within the grace period (judged by the store's clock) are InFlight and not
//     sent to the gateway.
//   - Only rows the external system answered for advance their last-verified time, so an outage
//     shows as growing lag rather than false health.
//   - At most one finding is open per (job, record, kind), and a repair command is queued only
//     with a new finding.
//   - A rate limit (ErrRateLimited) stops the batch's remaining calls; ErrAbortBatch (such as
//     rejected credentials) stops the batch with an error.
//
// # Rate budget
//
// Config.Limiter paces the gateway's calls; share one Limiter among every job that talks to the
// same external account, since its budget is the account's. A *rate.Limiter works; an
// AdaptiveLimiter (default 5 requests/s) also halves its rate when the external system answers
// "too many requests", pauses for the Retry-After it named, and grows back gradually. RunBatch
// tells any Limiter that is a Throttler about every rate-limit answer, and reports the longest
// Retry-After in Report.RetryAfter for the scheduler.
//
// # Bulk fetch
//
// A Gateway may also be a BatchGateway, able to answer about many objects with one call (a list
// endpoint). RunBatch then calls FetchBatch once per batch, through the same limiter, and asks
// Fetch only about the rows the bulk answer did not cover. The Stripe gateway does this through
// the PaymentIntents list, a hundred objects per call.
//
// # Running it
//
// A Runner runs jobs in the host's process: each job ticks on an interval with jitter, runs
// batch after batch while there is work (within a per-tick budget of rows or time), sleeps
// after a wrap, waits out rate limits, backs off after failures, and treats a lost cursor race
// (another process runs the job) as routine. Stop lets the current batch finish. Hosts that
// schedule work themselves (cron, River) call RunTick, which is one tick of the same loop.
//
// # Coverage and health
//
// Guarantees are measured in time. PlanCoverage computes a schedule's cycle time from N rows,
// batch B, R batches an hour, G new rows an hour and the API budget, and says plainly when a
// cycle can never complete (B×R ≤ G) or will miss the lag SLO. EvaluateHealth judges a job's
// Status (lag, time since the last completed cycle, cycle age, the last batch's unverifiable
// ratio, stale findings, and the plan when the policy has a schedule) against a HealthPolicy
// and gives each failing check its reason: a job whose gateway is failing is never healthy.
//
// # Observing it
//
// Config.Observer is told of every gateway call (with ErrorClass) and every batch; package
// adapters/prommetrics turns that, and health read at scrape time, into Prometheus metrics.
// Each batch logs one structured line through Config.Logger; no secret is ever logged.
//
// # Gateway errors
//
// A Gateway maps every failure to one of: ErrNotFound (confirmed absent: a NeedsReview finding
// of kind missing_externally), ErrRateLimited or *RateLimitError, ErrAbortBatch, *ReviewError (the
// request was rejected and a person must look), or anything else, such as ErrUnavailable, which
// makes the row Unverifiable.
package reconcile
