// Package deliverytest is the conformance suite of the ways to deliver pgstore's repair
// commands to the host's canonical writer: a command applies once, whatever the delivery does.
// pgoutbox's Dispatcher and adapters/riverdelivery run it; a host's own delivery should too.
//
// # Running it
//
// A delivery's test implements [Harness] over a schema of its own (so that subtests may run
// in parallel) and calls [Run] with a function that makes a fresh one for each subtest:
//
//	func TestACommandAppliesOnce(t *testing.T) {
//		deliverytest.Run(t, func(t *testing.T) deliverytest.Harness {
//			return newHarness(t) // a pool on a schema of its own, the delivery not yet working
//		})
//	}
//
// The suite creates a payments table and the reconciler's tables in the harness's schema, a
// pgstore.Store over them that hands its commands to [Harness.Deliverer] (none for a delivery
// that claims them from the outbox), and registers its canonical writer with
// [Harness.Handle]. One sweep then queues two repair commands (payments 1 and 2, pending here
// though their payments succeeded) and opens a finding for review without a command (payment
// 4). The writer records every call in a table, in its transaction: a call counts only if its
// transaction commits.
//
// # What it checks
//
// After each case, the committed writer calls by finding, the payments' states, which
// findings are open and the outbox rows' states are exactly as expected:
//
//   - A command applies once through its writer and resolves its finding; a command whose
//     finding a person resolved first is not applied, nor one read for delivery while a commit
//     supersedes its finding or a person resolves it (the delivery waits for them).
//   - After a command applied, a person sets its payment back to pending and reopens its
//     finding; then no later delivery applies it again: a second delivery of it, a retry of
//     the delivery that applied it, a delivery made again after the first was cleaned up, one
//     naming the command's tables another way, or any of them after the outbox row itself was
//     set back to pending by hand.
//   - A forged delivery, naming an outbox row that does not exist or another command's row,
//     and another payment and another row's open review finding, applies nothing.
//   - Concurrent deliveries of one command, all held inside or before the writer until every
//     one of them got as far as it could, apply it once.
//   - A delivery whose transaction fails at its commit, after the writer ran (as a crash
//     between the apply and its mark would), leaves nothing; the command then applies once.
//
// Each of a delivery's ways to deliver a command again is a method of [Harness]. A delivery
// that has no such way maps the method onto the nearest it has, as pgoutbox's test does for
// the dispatcher, whose deliveries are claims of outbox rows: nothing outside the row can name
// a command.
package deliverytest
