// Package reconcile finds, classifies and safely repairs drift between a service's own rows and
// an external system such as Stripe.
//
// Webhooks get lost, outages outlast retry windows, people edit things by hand, other systems
// call the API. A reconciler walks the service's rows with a keyset cursor, asks the external
// system about each, judges every pair with a pure [Classifier], records deduplicated findings
// and queues repair commands in a transactional outbox. It never updates business rows itself:
// repairs go through the same canonical writer the webhook handler uses, and anything where
// money may already have moved goes to a person. It is the last safety net behind atomic writes
// and idempotent webhook handlers, not a replacement for them.
//
// A job over a payments table in PostgreSQL, checked against Stripe's PaymentIntents:
//
//	store, err := pgstore.New(pool, pgstore.Config{
//		Table:            "payments",
//		ExternalIDColumn: "stripe_payment_intent_id",
//	})
//	if err != nil {
//		return err
//	}
//	gateway, err := stripeadapter.NewObjectGateway(stripeadapter.GatewayConfig{Key: key}, stripeadapter.PaymentIntents())
//	if err != nil {
//		return err
//	}
//	r, err := reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{
//		Job:        "payments",
//		Source:     store, // the rows after the job's cursor
//		Sink:       store, // observations, findings, repair commands and the cursor
//		Gateway:    gateway,
//		Classifier: stripepolicy.PaymentIntentPolicy(),
//	})
//	if err != nil {
//		return err
//	}
//	report, err := r.RunBatch(ctx) // one batch; a Runner calls it on a schedule
//
// Each [Reconciler.RunBatch] reads the next batch of rows, asks the gateway about them outside
// any transaction, and commits what it found with the cursor's advance in one transaction. The
// README (https://github.com/reconcilekit/reconcile#readme) walks through the rest: the money,
// lanes, repairs, operating it, scaling, performance.
//
// # The model
//
// Every row has three states: what the business decided ([Record].Local, typed as the host
// likes: the L of [Config]), what the external system holds now (what the [Gateway] fetches: the
// E), and what was last confirmed externally, and when (kept by the [Sink]; a row that could not
// be asked keeps its old time, and lag is measured from it). Which side is the truth is decided
// per kind of data, never "fix whichever differs": a payment's outcome is Stripe's, so the row
// catches up; the seats a customer bought are ours, so the repair pushes them out.
//
// A classifier turns each pair into a [Decision]: a [Verdict] ([InSync], [InFlight],
// [Repairable], [NeedsReview] or [Unverifiable]; their meanings are on the constants), a finding
// kind (findings are deduplicated per job, record and kind), a repair command for a Repairable
// finding, a detail for the person who reads it, and the [Diff]s: the fields on which the sides
// differ, with both values as a person reads them ("amount: USD 10.00 ≠ USD 12.00"). A status
// is not the money, so rows may be typed structs and classifiers compare amounts as integers in
// the currency's minor unit ([FormatAmount] writes them). A [RuleTable] is a classifier written
// as a table; the first matching rule decides, and a pair no rule matches is NeedsReview
// [Unexpected]:
//
//	classifier, err := reconcile.NewRuleTable(
//		func(status string) string { return status },
//		func(pi *stripe.PaymentIntent) string { return string(pi.Status) },
//		reconcile.Rule[string, *stripe.PaymentIntent]{Local: []string{"pending"}, External: []string{"succeeded"},
//			Decision: reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}},
//		reconcile.Rule[string, *stripe.PaymentIntent]{Local: []string{"paid"}, External: []string{"succeeded"},
//			Decision: reconcile.Decision{Verdict: reconcile.InSync}},
//	)
//
// The engine decides some rows itself: a row with no external id is NeedsReview
// [KindInvalidExternalID], an object the external system says does not exist NeedsReview
// [KindMissingExternally] (its detail says what the external system answered, keys redacted,
// and its one diff is the object the row names, "not found" externally),
// and a [ReviewError] from the gateway NeedsReview of its kind.
//
// # Guarantees
//
// RunBatch relies on its Source and Sink for these, and the conformance suite in package
// reconciletest checks them for every store:
//
//   - The cursor is a keyset (WHERE key > cursor AND key <= end ORDER BY key LIMIT n), never
//     OFFSET. A cycle covers the rows present when its first batch was read (up to
//     [Cursor].End) and ends with a short read, however fast rows arrive; rows present for a
//     whole cycle are checked exactly once in it, whatever is inserted or deleted meanwhile.
//   - Gateway calls happen outside any database transaction.
//   - Observations, findings, repair commands and the cursor advance commit together, and the
//     advance is compare-and-set: a reconciler that lost a race gets [ErrConcurrentRun] and
//     writes nothing. A crash anywhere means the batch is redone, and redoing is harmless.
//   - Rows changed within the grace period ([Config].Grace, judged by the store's clock) are
//     InFlight and not sent to the gateway; a row changed (or created) more than
//     [MaxClockSkew] in the future has an impossible time and is a NeedsReview invalid_row
//     finding, never InFlight at every cycle.
//   - Only rows the external system answered for advance their last-verified time, so an
//     outage shows as growing lag rather than false health. That time is when the call that
//     obtained the answer began ([Outcome].VerifiedAt), never later than the commit, and a
//     cycle judges no row on an answer obtained before it started ([DatedBatchGateway]).
//   - At most one finding is open per (job, record, kind), and a repair command is queued only
//     with a new finding.
//   - A commit judges only rows that are as they were read: a row changed or deleted since (a
//     webhook, a repair, a person) gets no observation, finding or command in that batch, as a
//     row in grace, and the next cycle judges it ([Report].Changed counts them). So is a row
//     whose answer is older than its last recorded verification: an older answer committed
//     last never overturns a newer one.
//   - A verified judgment of a record decides its findings: it closes the record's other open
//     findings in the job as superseded by its own ([ResolutionSuperseded]), or as cleared when
//     the pair is in sync ([ResolutionCleared]), so a record keeps at most one open finding
//     from the judging of its pair (see [Sink] for which findings, and why).
//   - A rate limit ([ErrRateLimited]) stops the batch's remaining calls, and the cursor stops
//     before the first row not asked: a rate limit delays rows, it never skips them. So does an
//     outage: when the first two calls of a batch fail and none answers (Report.Unavailable).
//   - One bad answer (NUL, invalid UTF-8, control characters, 10 KB) is one finding about its
//     row, never a failed commit: kinds, states, details and external ids are made printable
//     and cut to [MaxKind], [MaxState], [MaxDetail] and [MaxExternalID] bytes before the Sink
//     sees them.
//
// On any error nothing of the batch is written and the next run redoes it; a panicking gateway
// or classifier fails the batch, not the host process.
//
// # Gateways and the rate budget
//
// [Gateway.Fetch] lists the errors a gateway maps its failures to and what RunBatch does with
// each. A gateway that is a [BatchGateway] answers about many objects with one call (Stripe's
// list endpoints, a hundred objects a call), and one that is an [IDChecker] refuses impossible
// ids without a call; one that keeps what a list showed for later batches is a
// [DatedBatchGateway], asked for answers obtained since the job's cycle started. [Config].Limiter
// paces the calls: share one [Limiter] among every job that talks to the same external
// account, since its budget is the account's. An [AdaptiveLimiter] also slows down when the
// external system answers "too many requests".
//
// # Lanes
//
// The sweep starts from local rows, so it cannot see an external object no row refers to, and
// it finds a missed webhook only when its cycle reaches that row. A [Lane] starts from the
// external side: a [Feed] lists objects a step at a time (an event log after a checkpoint, or
// the objects created in a window), a [Matcher] finds their rows by external id, and each pair
// is judged and committed with the lane's new position, compare-and-set. Lanes record under
// the sweep's job, so a drift found by a lane and by the sweep is one finding with one command.
// [LaneConfig].Grace is the rows' grace, as for the sweep: its default comes from the Feed if
// it is a [LaneGracer] (a reverse scan's is the sweep's [DefaultGrace]), else it is
// [DefaultLaneGrace], an events lane's minute. The Stripe adapter provides both feeds.
//
// # Running it
//
// A [Runner] runs jobs in the host's process: each [RunnerJob] ticks on an interval with
// jitter, runs batch after batch while there is work (within a [TickBudget]), sleeps after a
// wrap, waits out rate limits and backs off after failures. [RunnerConfig].OnTick and OnCycle
// are told of every tick that ends with a [TickEnd], whose report names the job and lane it
// ran. Hosts that schedule work themselves (cron, River) call [RunTick], one tick of the same
// loop, and act on its [After]. What follows a batch is decided in one place, [AfterBatch]:
// go on, wait for the next cycle, wait out a rate limit, back off, retry after a lost race,
// or stop. A [FanOut] covers many accounts (tenants, Stripe connected accounts) with one
// BatchRunner, each account with its own cursor, taking turns under one Limiter.
//
// # Health
//
// A store that is a [StatusReader] reads a job's [Status]: the reconciliation lag (the primary
// SLO), cycle times, the last batch's unverifiable ratio, open and stale findings by kind, lanes
// and the last failure. [EvaluateHealth] judges it against a [HealthPolicy]. A [Monitor] reads
// and judges a service's jobs with one cache and one timeout for every surface: a
// [HealthHandler] serves its judgement over HTTP for alerting, and the review console and
// package prommetrics take the same Monitor. [PlanSchedule] says whether a schedule keeps up
// with the rows that arrive. [Config].Observer is told of every call and batch (package
// prommetrics turns that into Prometheus metrics).
//
// # Repairs and review
//
// A repair command is an outbox row queued in the batch's own transaction, only with a new
// finding: a [Command] that [DecodeCommand] reads back. pgoutbox's Dispatcher claims commands
// with FOR UPDATE SKIP LOCKED under a lease, retries with backoff and parks poison commands as
// dead. The host applies each through its canonical writer, which resolves the command's
// [Finding] in the writer's transaction, so a repair that finds the row already moved (the
// webhook got there first) is a no-op that still closes the finding. A repair that pushes a
// local value out sends an idempotency key derived from the command alone (job, record, finding
// id, command name), so that a retry after a lost answer applies once. NeedsReview findings are
// resolved by people through a [Reviewer], which lists findings by a [FindingQuery], reads one
// with its history, and resolves and reopens.
//
// # Packages
//
//   - [github.com/reconcilekit/reconcile/adapters/pgstore]: the Store over a host table in
//     PostgreSQL (pgx v5), a status column or a typed row, with the reconciler's own tables,
//     review and status.
//   - [github.com/reconcilekit/reconcile/adapters/pgoutbox]: the outbox Dispatcher that applies
//     the repair commands pgstore queues; [github.com/reconcilekit/reconcile/adapters/riverdelivery]
//     delivers them as River jobs instead.
//   - [github.com/reconcilekit/reconcile/adapters/pgshard]: a job split into key ranges that
//     workers in many processes lease; [github.com/reconcilekit/reconcile/adapters/pgbudget]: a
//     rate budget in PostgreSQL that every worker shares.
//   - [github.com/reconcilekit/reconcile/adapters/memstore]: the same semantics in memory, for
//     tests and quick starts.
//   - [github.com/reconcilekit/reconcile/adapters/stripeadapter]: the Stripe client and object
//     kit (gateways of PaymentIntents, Subscriptions, Invoices, Checkout Sessions, accounts);
//     its stripepolicy holds the policies, stripemoney the money reads (refunds, disputes),
//     stripeconnect the accounts check, and
//     [github.com/reconcilekit/reconcile/adapters/stripeadapter/stripetest] is a stateful fake
//     of Stripe for tests.
//   - [github.com/reconcilekit/reconcile/adapters/prommetrics]: Prometheus metrics and health.
//   - [github.com/reconcilekit/reconcile/console]: the review console, an http.Handler.
//   - [github.com/reconcilekit/reconcile/reconciletest]: the conformance suite for stores;
//     [github.com/reconcilekit/reconcile/adapters/pgoutbox/deliverytest] the one for repair
//     deliveries.
//   - github.com/reconcilekit/reconcile/cmd/reconcile: the command line (migrations, status,
//     health, findings, dead commands).
//
// Runnable programs are under examples/: payments (the sweep, both lanes, repairs and the
// console against a fake Stripe), subscriptions (a UUID-keyed table and the object kit),
// custom-classifier (another external system, both directions of truth, no database), river
// and river-delivery.
package reconcile
