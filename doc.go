// Package reconcile finds, classifies and safely repairs drift between a service's own rows and
// an external system such as Stripe.
//
// Webhooks get lost, outages outlast retry windows, people edit things by hand, other systems
// call the API. A reconciler walks every local row with a keyset cursor, asks the external
// system for its state, classifies each pair with a pure function, records deduplicated
// findings, and queues repair commands in a transactional outbox. It never updates business
// rows itself: repairs go through the same canonical writer the webhook handler uses, and
// anything where money may already have moved goes to a person. It is the last safety net
// behind atomic writes and idempotent webhook handlers, not a replacement for them.
//
// # The model: three states per record
//
// For every row the reconciler keeps three states apart:
//
//   - Local: what the host's business decided, such as payments.status. The [Source] reads
//     it as [Record].Local, typed as the host likes (the L of [Config]).
//   - External: what the external system holds now, such as the PaymentIntent's status. The
//     [Gateway] fetches it (the E of [Config]).
//   - Last observed: the external state as last confirmed, and when. The [Sink] stores it
//     for every row the external system answered for ([Outcome].Verified); a row it could not
//     be asked about keeps its old time, and lag is measured from that time.
//
// Which side is the truth is decided per kind of data, never as "fix whichever differs": a
// payment's outcome is Stripe's, so the local row catches up; the number of seats a customer
// bought is ours, so the repair pushes it to the external system. The classifier encodes the
// choice, and the repair commands it names carry it out.
//
// # Verdicts
//
// Every row gets one [Verdict]: [InSync], [InFlight], [Repairable], [NeedsReview] or
// [Unverifiable]; their meanings are on the constants.
//
// # Classifiers
//
// A [Classifier] turns a pair of local and external state into a [Decision]: the verdict, the
// finding kind (for Repairable and NeedsReview; findings are deduplicated per job, record and
// kind), the repair command (for Repairable, and only for it; see [Decision.Validate]) and a
// detail for the person who reads the finding. It must be pure (no I/O, no clock), and with
// Config.Concurrency above 1 it is called from several goroutines.
//
// [RuleTable], built with [NewRuleTable], is a declarative classifier: each [Rule] lists the
// local and external states it applies to, as two naming functions spell them, and an optional
// When condition on the whole pair, for comparing amounts or quantities as well as states. The
// first matching rule decides; a pair no rule matches is [Unexpected]: NeedsReview of kind
// "unexpected:<local>-><external>", each state written as a kind holds it (printable, cut to
// fit [MaxKind]). [ClassifierFunc] adapts a plain function. A classifier
// that is also a [StateNamer] (as a RuleTable is) names the states that findings, observations
// and repair commands record; wrap a RuleTable to record more than the states its rules match,
// such as the amounts (see the StateNamer example and examples/custom-classifier).
//
// # Money
//
// A status is not the money: a payment refunded or lost in a dispute keeps its status. Local
// rows may therefore be typed (a Go struct with the status, amount, currency, refunded amount,
// ...; pgstore scans it from the host table), and a classifier compares fields. What differs goes
// in [Decision].Diffs — each field with both sides' values as a person reads them — and is kept
// with the finding, so a reviewer sees "amount: USD 10.00 ≠ USD 12.00" rather than a status
// pair. Amounts are integers in the currency's minor unit and are compared as such, never
// scaled; [FormatAmount] writes one for a person, with the right number of decimals for
// zero-decimal (JPY) and three-decimal (KWD) currencies ([CurrencyExponent]).
//
// The engine decides some rows itself, without the classifier: a row with no external id is
// NeedsReview [KindInvalidExternalID], an object the external system says does not exist is
// NeedsReview [KindMissingExternally] (its detail is the gateway's error, which says what the
// external system answered, keys redacted), and a [ReviewError] from the gateway is NeedsReview
// of its kind ([KindRejected] by default).
//
// # The batch engine
//
// A job is described by a [Config]: its name, a [Source] of local rows, a [Sink] for the
// results (usually one [Store] that is both), a [Gateway], a [Classifier], and optionally the
// batch size ([DefaultBatchSize] rows), the grace period ([DefaultGrace]), a [Limiter], the
// number of concurrent gateway calls, a logger and an [Observer]. [New] checks it and returns a
// [Reconciler]; [RunBatch] does both for a single batch.
//
// Each [Reconciler.RunBatch]:
//
//  1. reads the next [Batch] of rows after the job's [Cursor] ([Source].Read with a
//     [ReadRequest]), none beyond the cycle's high-water mark ([Cursor].End);
//  2. judges the rows changed within the grace period InFlight without asking about them;
//  3. asks the gateway about the others, outside any transaction: in bulk first if it is a
//     [BatchGateway], then one [Gateway].Fetch per row not yet answered, on Config.Concurrency
//     goroutines paced by Config.Limiter;
//  4. classifies every answer into an [Outcome];
//  5. commits the outcomes and the cursor advance as one [Commit] ([Sink].Commit), which
//     records observations, opens findings that are new and queues their repair commands.
//     A read shorter than the batch size whose rows were all asked wraps the cursor in the
//     same commit and completes the cycle; after a rate limit or an outage the cursor stops
//     before the first row not asked (see Guarantees).
//
// It returns a [Report]: rows scanned, verdict counts, gateway calls, findings and commands
// added, whether the cycle wrapped, and whether the external system pushed back or looked down
// (RateLimited, Unavailable, RetryAfter, Deferred). On any error nothing of the batch is
// written and the next run redoes it; a panicking gateway or classifier fails the batch, not
// the host process.
//
// # Guarantees
//
// RunBatch relies on its Source and Sink for these, and the conformance suite in package
// reconciletest checks them for every adapter:
//
//   - The cursor is a keyset (WHERE key > cursor AND key <= end ORDER BY key LIMIT n), never
//     OFFSET. A cycle covers the rows present when its first batch was read (up to
//     [Cursor].End) and ends with a short read, however fast rows arrive; rows that arrive
//     later beyond the end are the next cycle's. Rows present for a whole cycle are checked
//     exactly once in it, whatever is inserted or deleted meanwhile.
//   - Gateway calls happen outside any database transaction.
//   - Observations, findings, repair commands and the cursor advance commit together, and the
//     advance is compare-and-set: a reconciler that lost a race gets [ErrConcurrentRun] and
//     writes nothing. A crash anywhere means the batch is redone, and redoing is harmless.
//   - Rows changed within the grace period (judged by the store's clock) are InFlight and not
//     sent to the gateway.
//   - Only rows the external system answered for advance their last-verified time, so an outage
//     shows as growing lag rather than false health. That time is when the call that obtained
//     the answer began ([Outcome].VerifiedAt), never later than the commit, and a cycle judges
//     no row on an answer obtained before it started ([DatedBatchGateway]).
//   - At most one finding is open per (job, record, kind), and a repair command is queued only
//     with a new finding.
//   - A rate limit ([ErrRateLimited]) stops the batch's remaining calls, and the cursor stops
//     before the first row not asked: a rate limit delays rows, it never skips them, and a
//     cycle completes only when every row was asked. When the first two calls of a batch fail
//     and none answers (a failed bulk call counts as one), the batch stops asking
//     (Report.Unavailable) and the cursor likewise stops before the first row not asked.
//   - One bad answer (NUL, invalid UTF-8, control characters, 10 KB, in a state, an error's
//     kind or detail, a lane's object or id) is one finding about its row, never a failed
//     commit: RunBatch and a Lane make every kind printable and cut kinds, states, details and
//     external ids to [MaxKind], [MaxState], [MaxDetail] and [MaxExternalID] bytes, all valid
//     UTF-8 without NUL, before the Sink sees them.
//
// # Gateway errors
//
// [Gateway.Fetch] lists the errors a gateway maps its failures to and what RunBatch does with
// each. A gateway that is an [IDChecker] refuses ids that cannot be valid without spending a
// call. [ErrorClass] names the outcomes for metrics.
//
// # Rate budget
//
// Config.Limiter paces the gateway's calls ([Limiter.Wait] says what its errors do to a batch);
// share one [Limiter] among every job that talks to the same external account, since its
// budget is the account's. A *rate.Limiter works; an [AdaptiveLimiter] also slows down when
// the external system answers "too many requests", as any Limiter that is a [Throttler] can.
// RunBatch reports the longest Retry-After in Report.RetryAfter for the scheduler.
//
// # Bulk fetch
//
// A Gateway may also be a [BatchGateway], able to answer about many objects with one call (a
// list endpoint). RunBatch then calls FetchBatch once per batch, through the same limiter, and
// asks Fetch only about the rows the bulk answer did not cover. The Stripe gateway does this
// through the PaymentIntents list, a hundred objects per call. A gateway that keeps what a list
// showed for the batches that follow is a [DatedBatchGateway]: RunBatch asks it for answers
// obtained since the start of the job's cycle, as far as the [Reconciler] can tell (it remembers
// the cycles it runs; the function RunBatch, running one batch, cannot), and dates each row's
// verification by its answer.
//
// # Lanes
//
// The sweep starts from local rows, so it cannot see an external object no row refers to, and
// it finds a missed webhook only when its cycle reaches that row. A [Lane] starts from the
// external side: a [Feed] lists external objects a step at a time from a position the lane
// keeps (an event log after a checkpoint, or the objects created in a window), a [Matcher]
// finds their rows by external id in one query, and each pair is classified and committed
// with the new position through a [LaneSink], compare-and-set like a cursor. Lanes record
// under the sweep's job, so a drift found by a lane and by the sweep is one finding with one
// command. With [LaneConfig].ReportMissing an object without a row is a NeedsReview finding of
// kind [KindMissingLocally]. A state taken from an event ([FeedObject].ObservedAt) is not
// judged against a row changed since, and opens findings without counting as a verification.
// A Lane is a [BatchRunner]. [Status].Lanes and the health check "lane:<name>" report each
// lane's last catch-up or pass, a gap (a checkpoint that could not be replayed, left to the
// sweep) and a failing step. The Stripe adapter provides both feeds.
//
// # Running it
//
// A [Runner] runs jobs in the host's process: each [RunnerJob] ticks on an interval with
// jitter, runs batch after batch while there is work (within a [TickBudget] of rows or time),
// sleeps after a wrap, waits out rate limits, backs off after failures and outages, and treats
// a lost cursor race (another process runs the job) as routine. [Runner.Stop] lets the current
// batch finish. Hosts that schedule work themselves (cron, River) call [RunTick], which is one
// tick of the same loop and returns a [TickReport]. RunnerConfig.OnTick and OnCycle are told
// of every tick that ends and every cycle that completes, with a [TickEnd] (the report, the
// error, the wait before the next tick): tests and hosts wait on them instead of polling.
//
// # Many accounts
//
// A platform reconciles the same tables for many accounts (tenants, Stripe connected accounts).
// A [FanOut] covers them with one [BatchRunner]: the host lists its accounts (read again every
// round, so accounts added and removed are followed) and builds each account's jobs, each under
// a name of its own, so every account keeps its own cursor and lane positions. Accounts take
// turns, one batch each, and a round ends when every account has completed a cycle: a huge
// account cannot starve small ones, and small ones do not spin. An account that fails sits
// out, with backoff, without holding the round up; all share one [Limiter], since the budget
// is the platform's. [FanOut.Health] judges every account's [Status] and names the one that lags.
//
// # Coverage and health
//
// Guarantees are measured in time, not assumed. [PlanCoverage] computes a schedule's cycle
// time from N rows, batch B, R batches an hour, G new rows an hour and the API budget
// ([PlanInput]), and its [Plan] says plainly when the checks fall behind the arrivals (B×R ≤ G:
// every cycle still ends, each longer than the last) or will miss the lag SLO.
//
// A store that is a [StatusReader] reads a job's [Status]: the reconciliation lag,
// max(now − coalesce(last verified, created)) over the job's rows, which is the primary SLO; time since the last completed cycle and the current cycle's age; the last batch's
// unverifiable ratio; open findings by kind and those open past a threshold (a dead repair
// command shows up there); and the last failed batch, which a Sink that is a
// [FailureRecorder] is told about (a batch that missed its context's deadline included; a
// cancelled one, the host stopping, is not a failure). [EvaluateHealth] judges a Status against a [HealthPolicy]
// (lag SLO [DefaultLagSLO] unless set) and returns a [Health] in which each failing [Check]
// gives its reason: a job whose gateway is failing is never healthy, even while its lag is
// still within the SLO.
//
// A [HealthHandler] serves that over HTTP for one or several jobs: 200 when all are healthy,
// 503 with the reasons otherwise, as JSON (the health types' JSON form: snake_case, durations
// in seconds and as text, times in RFC 3339) or as text for a person (?format=text). It is for
// alerting, and for the readiness of a deployment that runs only the reconciler; never for a
// liveness probe, since no restart brings a lag back within its SLO or Stripe back up. Package
// memstore reports a Status too, so health can be tested without a database.
//
// # Observing it
//
// Config.Observer is told of every gateway call (with its [ErrorClass]) and every batch; package
// adapters/prommetrics turns that, and health read at scrape time, into Prometheus metrics.
// [Observers] combines several, so that metrics and the host's own tracing both listen.
// Each batch logs one structured line through Config.Logger; no secret is ever logged.
//
// # Repair path
//
// A repair command is an outbox row queued in the batch's own transaction, only when its
// finding is new: event type the command's name, aggregate id the record, and as payload a
// [Command] (job, record, finding id, kind, the local state the repair expects to find, the
// external state observed). [DecodeCommand] reads it back. The host applies it with a handler
// per command name; with PostgreSQL, pgoutbox's Dispatcher claims commands with FOR UPDATE SKIP
// LOCKED under a lease, retries with backoff and parks poison commands as dead. A host that
// runs River can have each command enqueued as a River job in the batch's transaction instead
// (pgstore.Config.Deliver with adapters/riverdelivery).
//
// A handler that makes the local row catch up calls the host's canonical writer, the same
// function its webhook handler calls: a guarded transition that is a no-op when the row has
// moved on (the webhook got there first). Either way it resolves the command's [Finding] with
// a [Resolution] ([ResolutionRepaired]), in the writer's transaction. A handler that pushes a
// local value to the external system sends an idempotency key derived from the command alone
// (job, record, finding id, command name), so that a retry after a lost answer applies once.
// NeedsReview findings are resolved by people through the same writer, recording who, when,
// what and why ([ResolutionFixed], [ResolutionAccepted], [ResolutionFalsePositive]).
//
// # Review
//
// A store's review side is a [Reviewer], which pgstore and memstore implement alike: list
// findings by a [FindingQuery] (job or jobs, kind, record, open or resolved, age, keyset
// pages), read one [FindingDetail] with its history of [FindingEvent]s, resolve and reopen.
// When nothing changed, the error wraps [ErrFindingNotFound], [ErrAlreadyResolved],
// [ErrAlreadyOpen] or [ErrFoundAgain]. The review console (package console) works over it.
//
// # Packages
//
//   - [github.com/reconcilekit/reconcile/adapters/pgstore]: Source and Sink over a host table
//     in PostgreSQL, with the reconciler's own tables, the outbox dispatcher, review and
//     status.
//   - [github.com/reconcilekit/reconcile/adapters/memstore]: the same in memory, for tests and
//     trying classifiers.
//   - [github.com/reconcilekit/reconcile/adapters/stripeadapter]: the Stripe client and object
//     kit (gateways of PaymentIntents, Subscriptions, Invoices, Checkout Sessions, accounts);
//     its stripepolicy holds the policies, stripemoney the money reads (refunds, disputes),
//     stripeconnect the accounts check, and stripetest is a stateful fake of Stripe for tests.
//   - [github.com/reconcilekit/reconcile/adapters/prommetrics]: Prometheus metrics and health.
//   - [github.com/reconcilekit/reconcile/adapters/riverdelivery]: repair commands delivered as
//     River jobs, applied through the canonical writer.
//   - [github.com/reconcilekit/reconcile/reconciletest]: the conformance suite for Store
//     adapters; [github.com/reconcilekit/reconcile/adapters/pgoutbox/deliverytest] the one for
//     deliveries of repair commands (a command applies once, whatever the delivery does).
//
// Runnable programs are under examples/: examples/payments (PostgreSQL and a fake Stripe, end
// to end) and examples/custom-classifier (another external system, both directions of truth,
// no database).
package reconcile
