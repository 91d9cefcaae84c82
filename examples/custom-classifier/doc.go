// Custom-classifier reconciles a second kind of external system, with no database: customers'
// subscriptions, whose status and seat count live both in our rows and at a billing provider.
//
//	go run ./examples/custom-classifier
//
// # Two directions of truth
//
// Which side is the truth is decided per kind of data, never as "fix whichever differs":
//
//   - Whether a subscription is live is the provider's truth: it collects the money. A
//     subscription it canceled after failed payments, or activated after a checkout, while the
//     webhook got lost, is Repairable: the repair command makes our row catch up
//     (ApplySubscriptionCanceled, ApplySubscriptionActivated) through a guarded canonical
//     writer.
//   - How many seats were sold is our truth. A provider billing fewer seats than we sold is
//     Repairable the other way: the command PushSeatCount sends our count to the provider.
//     One billing more seats than we sold, or at another price, may have taken money it should
//     not have: a person decides (NeedsReview).
//
// # The pieces
//
//   - provider.go: the billing provider, an httptest server with a small JSON API that keeps
//     idempotency keys the way real providers do, and fault injection (failed reads, an update
//     applied whose answer is lost).
//   - gateway.go: its client; Fetch is the job's reconcile.Gateway, mapping 404, 429, 401/403,
//     400 and 5xx to the errors the engine expects.
//   - classifier.go: the policy as a reconcile.RuleTable over statuses, with When conditions
//     comparing seat counts and prices, wrapped to add a Detail with the figures and state
//     names that carry them (a reconcile.StateNamer), so findings say "active, 12 seats at
//     9.00" rather than "active".
//   - repair.go: the repair handlers, run over the memory store's outbox (adapters/memstore)
//     the way pgoutbox's Dispatcher would run them: the canonical writer for statuses, and the
//     push, which sends an Idempotency-Key derived from the command alone (sha256 of job,
//     record, finding id and command name), so every retry of one command sends the same key.
//     A command whose finding a person already resolved is skipped.
//   - fixture.go: thirteen subscriptions, each with its story and what the checks expect;
//     check.go the checks, report.go the summary.
//
// # What it does
//
// It runs one cycle, printing the findings; applies the repair commands, where the provider
// applies one push but its answer is lost (504), so the push is retried with the same key and
// replayed by the provider rather than applied twice; runs a second cycle past the grace
// period, which must find the repaired rows in sync and nothing new; and prints what is left
// for a person and the checks. It exits with status 1 if a check fails.
//
// With -no-idempotency-key the pushes go without a key: the retried push is applied twice, and
// the checks say so.
package main
