// Package tieout ties a group of external money movements out against what a service booked:
// a Stripe payout and its balance transactions, or any settlement an external system pays in
// one sum. It is generic and makes no call: an adapter lists a group's members (package
// stripepolicy converts Stripe's balance transactions), the host describes its ledger (a
// [Ledger]; package pgledger reads one from PostgreSQL tables), and [Policy.Classify] is a pure
// function of the three that returns findings.
//
// # The model
//
// A [Group] is one payout: its id, account, status, amount and currency (the settlement
// currency), whether its members can be listed at all ([Group.Itemized]: Stripe cannot itemize
// a manual payout) and whether its status can still change ([Group.Terminal]: a paid payout can
// still fail, Stripe says within 5 business days, so paid is not terminal).
//
// A [Member] is one line of the group: its id, the external system's type for it and the
// booked kind a policy maps that type to ([KindPayment], [KindRefund], [KindDispute], ...; an
// empty Kind is a type the policy does not know), the source object and the id the host books
// it under, the gross amount, fee and net in the settlement currency (signed as they move the
// balance: money in is positive), the source's own amount and currency (the presentment
// amount, signed the same way), the exchange rate between the two, when it became available
// and its status.
//
// The sum rule: the members' nets sum to the group's amount. The group's own line, if it is
// listed (Stripe lists the payout's own balance transaction, of type payout, source po_..., net
// the negative of the payout's amount, among the transactions of ?payout=po_...), is not part
// of the sum: it must be the negative of the group's amount on its own, so a listing with it
// and one without it both hold when the money does. Any other member of kind [KindGroup] (the
// line of another payout) is summed like the rest. Sums use checked arithmetic: a sum that
// overflows does not hold.
//
// # What the host booked
//
// A [Ledger] answers, in bulk, "what did you book under these ids" ([Ledger.Booked]: one call
// per page of members, never one per member) with [Booked] records: the kind, the id, the
// amount and currency, whether that amount is the presentment or the settlement amount
// ([Booked.Basis]), the fee if the host books fees, when it settled and the group the host
// recorded it in, if any. And it answers "which settled records are in no group and past
// their availability plus a grace" ([Ledger.Unpaid]), a keyset walk over the host's table:
// money the service counts on that never reached a payout; and, lest a time in the future hide
// a record from that walk for ever, which are settled or available more than
// reconcile.MaxClockSkew ahead of the clock ([UnpaidRequest.Ahead], [KindSettledInFuture]).
//
// # The findings
//
// [Policy.Classify] compares a group with its members and the booked records, and [ClassifyUnpaid]
// the records no payout carried. Every [Finding] names the group, its record (the member's
// id, a balance transaction's txn_...; the group's id for findings about the group; the
// booked id for a record never paid out), a reconcile.Decision with the amounts as money
// (reconcile.FormatAmount) in its Diffs, and the fields that differ. [Kinds] says what each
// kind means and whether it moves money. Member kinds the host does not book ([Policy.Books])
// count in the sum only; a member whose type the policy does not know is a finding, never
// skipped and never guessed.
//
// Amounts compare in the basis the host books: the presentment amount against the source's
// (a EUR charge booked as EUR 10.00 is in sync whatever it settled as), through the exchange
// rate when the source was not read (EUR 10.00 at 1.234 must be USD 12.34, to a minor unit or
// one part in a million, the rate being rounded), or the settlement amount against the
// member's amount. Fees compare only when the host books them.
//
// # Recording
//
// Findings are recorded by the reconcile machinery a lane uses: [Outcomes] turns them into
// reconcile.Outcomes naming no local row (NotARow, as missing_locally findings do) and opened
// once per (job, record, kind) (Once: the lines of a payout never change, so a finding a person
// resolved is not opened again by the next tie-out), which a reconcile.LaneSink (pgstore,
// memstore) commits with the position of the payouts walked, in one transaction: the
// findings tables, their history, deduplication, health and the console are the ones every
// other job uses. A payout gives many findings, not one decision about one row, so the
// sweep's RunBatch, whose outcome is one per local row, does not drive it; [Step] does, one
// page of payouts at a time, like a lane step. Like a lane step, a Step whose lister meets a
// rate limit reports it (Report.RateLimited, RetryAfter) rather than failing: it commits the
// payouts tied out before it when the lister gives their positions ([GroupPage.Positions]),
// and otherwise writes nothing (Report.Deferred); any other error fails it, nothing written, except a payout whose members the
// lister is refused for good (a reconcile.ReviewError or reconcile.ErrNotFound): that payout
// is a [KindLinesRefused] finding, and the walk goes on.
//
// When the Sink is a reconcile.GroupSink (pgstore and memstore are), the Step also records
// each payout, in the same transaction: a reconcile.GroupRecord with its status, what it paid
// against what its lines add up to (the members' nets, its own line aside), how many members,
// findings and unmatched lines (findings about lines), whether it held (its lines sum to its
// amount), the records of its findings, and when it was tied out, by the database's clock. A
// crash never leaves findings without their payout's record or the reverse, and a step redone
// records the same again. The payouts a Lister reports in [GroupPage.Pending] (seen, their
// members not final yet) are recorded as pending, so that the review console lists and counts
// the payouts not tied out yet; a pending sighting never replaces a tie-out. A
// reconcile.GroupReader reads the records back.
package tieout
