// Package reconciletest is the conformance suite for [reconcile.Store] adapters: what
// [reconcile.RunBatch] relies on a Source and Sink for, checked against the adapter itself. Every
// adapter in this module runs it (adapters/memstore in memory, adapters/pgstore against a real
// PostgreSQL), and third-party adapters should too.
//
// # Running it
//
// An adapter's test implements [Fixture] over one isolated store (its own table or schema, so
// that subtests may run in parallel) and calls [Run] with a function that makes a fresh one for
// each subtest:
//
//	func TestConformance(t *testing.T) {
//		reconciletest.Run(t, func(t *testing.T) reconciletest.Fixture {
//			return newFixture(t) // a store over an empty table of its own
//		})
//	}
//
// Fixture's methods fill the table with a [Row] each (an integer id, an external id, a status, and
// whether the row changed just now), delete rows, and read back what the store recorded:
// observations, repair commands, and findings through the store's [reconcile.Reviewer]. A
// method that cannot do its work fails the test through the testing.TB it is given.
//
// # What it checks
//
//   - Keyset order and wrap: batches follow the key, never OFFSET, and a short read completes
//     the cycle; a second cycle starts again from the first row; rows deleted and inserted
//     during a cycle do not disturb the rest; rows inserted beyond the cycle's high-water mark
//     (reconcile.Cursor.End) wait for the next cycle, so the cycle ends, while a backdated row
//     below it is read in the cycle.
//   - Compare-and-set on the cursor: a commit after a concurrent run moved it fails with
//     reconcile.ErrConcurrentRun and writes nothing.
//   - Grace judged by the store: a row changed just now is InFlight and not sent to the gateway.
//   - Impossible times: a row changed or created more than reconcile.MaxClockSkew ahead of the
//     store's clock ([Row].UpdatedAhead, CreatedAhead) is an invalid_row finding at every cycle
//     and in a lane's step, whatever the grace, never asked about nor verified; within the skew
//     it is InFlight (changed) or judged (created) as before.
//   - Observations only for confirmed rows: a failing gateway leaves the rows asked Unverifiable
//     and their verified times unmoved, and stops the batch after two calls; a missing object is a verified missing_externally finding.
//   - Findings and commands: one open finding per (job, record, kind) over repeated cycles, a
//     repair command only with a new finding, none for NeedsReview, and a new finding and
//     command after the old finding was resolved.
//   - Review ([reconcile.Reviewer]): listing by every filter and in keyset pages, a finding's
//     history of detection, resolution and reopening, and the same sentinel errors for a
//     missing finding, one resolved or open already, and drift found again; a finding keeps
//     its decision's Diffs (values cut as the engine cuts them) and is found by a Search for
//     its external id or record id, whole.
//   - Hostile bytes: an answer with NUL, invalid UTF-8, control characters or 10 KB of noise,
//     as a state or as a reconcile.ReviewError, is one finding about its row (a printable kind
//     of at most reconcile.MaxKind bytes, states and detail bounded) and its batch commits; so
//     do a lane's objects with such states or ids; a batch stopped by an error quoting such
//     bytes is recorded as failed.
//   - Stopping: a rate limit stops the rest of the batch's calls, the rows before it commit and
//     the next batch starts with the row rate limited; an abort writes nothing and keeps the
//     cursor.
//   - Lanes, for a store that is also a [reconcile.Matcher] and [reconcile.LaneSink] (the cases
//     are skipped for one that is not; see [LaneStore]): Match finds rows by external id and
//     judges recency by the store's clock; a lane's position is kept per (job, lane) and a step
//     resumes from it; a lane commit on a moved position fails with reconcile.ErrConcurrentRun
//     and writes nothing; a drift found by a lane and by the sweep is one finding with one
//     command; an external object no row refers to is one missing_locally finding, not reopened
//     once resolved (the store honours reconcile.Outcome.Once and NotARow).
//   - External records (what package tieout records): outcomes that name no row, committed by a
//     lane, are one finding per (record, kind), queue their repair commands once, and once
//     resolved are not opened again.
//   - Group records (a payout tie-out's), for a store that is also a [reconcile.GroupSink] and
//     [reconcile.GroupReader] (skipped for one that is not; see [GroupStore]): a step's groups
//     commit with its findings and position or not at all (a moved position, a record that is
//     not storable); a step redone, or a group listed twice, leaves one record under its first
//     number; a pending sighting never replaces a tie-out; listing newest first by keyset,
//     filters by job, account, status and state, and counts; hostile values made storable
//     (reconcile.StorableGroupRecord) and extreme amounts are kept exactly.
//   - Rows changed since their read: a row changed while its batch waits on the gateway, or
//     between a lane's match and its commit (a repair applied, its finding resolved), gets no
//     second finding, no command and no verification, and is judged again next cycle. A
//     fixture that is an [Updater] changes rows in place, as a host's writer does.
//   - Answers committed out of order: a sweep's (or a lane's) answer older than the one a lane
//     (or the sweep) committed meanwhile opens, supersedes and clears nothing, queues no
//     command and leaves the newer observation; its commit counts the row in Report.Changed
//     and the next cycle asks it again.
//   - Findings that no longer describe the drift: a verified judgment of another kind closes
//     the record's open finding as superseded, naming its successor (Finding.SupersededBy,
//     FindingDetail.Supersedes), one in sync closes it as cleared, both by the reconciler in the
//     history, and redoing the judgment changes nothing; unverifiable, in-flight and
//     event-state judgments close nothing, nor does a judgment close another job's findings or
//     a missing_locally one.
//
// # Building blocks
//
// The suite's parts are exported for adapters' own tests: [Gateway] is a fake external system
// over a map of states that counts calls (the states "!unavailable", "!ratelimited",
// "!notfound" and "!abort" answer with those errors); [Classifier] is the suite's payment
// policy; [Config] builds a job over a fixture; [Cycle] runs batches until the cursor wraps;
// [Findings] lists every finding of a Reviewer; [Money] is a policy whose drifts change kind;
// [FuzzAnswers] is a fuzz target's body that feeds arbitrary answers through the engine into a
// store.
// For lanes, [Feed] is a fake feed of pages by position, [Objects] builds a page's objects,
// [LaneConfig] a lane over a fixture and [Step] runs one step.
package reconciletest
