// Payments reconciles a PostgreSQL payments table against a fake Stripe with all three of the
// library's ways of looking, over a table seeded with the drift a real payments service
// accumulates, in its payments' status and in their money, and then repairs what they found
// through the same canonical writer the Stripe webhook handler uses.
//
// It is the first thing to run:
//
//	go run ./examples/payments
//
// It connects to $DATABASE_URL (by default postgres://postgres@127.0.0.1:5432/test?sslmode=disable;
// with nothing set and no server there, on a machine with Docker, it starts a PostgreSQL
// container with testcontainers and says so; and when no PostgreSQL answers at all, it runs the
// same story in memory, as "Without a database" says), drops and creates the schema reconcile_demo, and
// fills its payments table (an order id, the PaymentIntent, a status, the amount in the
// currency's minor unit, the currency, the amount refunded and the dispute's status) with rows
// that mostly agree with their Stripe PaymentIntents, and some that do not: success and cancel
// webhooks that never arrived, orders marked paid whose payment did not go through, a payment
// that succeeded for an order marked failed, PaymentIntents Stripe never saw, rows changed a
// moment ago, and calls that fail. Then the money, which a status does not show (a refunded
// payment, or one whose dispute was lost, stays succeeded): a payment partly refunded in the
// Dashboard, a lost dispute, an amount that differs from the PaymentIntent's, and a row in yen
// whose PaymentIntent is in dollars for the same number of minor units. Stripe also holds
// PaymentIntents no row refers to (our transaction rolled back after creating them), one of
// them created a moment ago by a checkout still under way. The stories and their shares are in
// demo_drift.go. The PaymentIntents, their charges, refunds and disputes are loaded into
// stripetest, a fake Stripe API served over HTTP in-process, with a 503 injected for every
// retrieve of the ones whose calls fail.
//
// Then three lanes look, all under one job (lanes.go), so that a drift two of them see is one
// finding with one repair command:
//
//   - The events lane, started first: its first run only anchors at Stripe's newest event.
//   - The sweep (pgstore over the table, its rows typed as paymentRow; stripepolicy's money
//     policy; and the real Stripe gateways, stripeadapter's of PaymentIntents with stripemoney's
//     reads on it, stripe-go over HTTP to stripetest)
//     runs batch by batch until the cursor wraps, printing a line per batch, the Stripe API
//     calls it made (a list call per hundred rows, each PaymentIntent with its latest charge,
//     so its refunds and whether it is disputed; a retrieve for each row the lists did not
//     show; and a list of the disputes of each disputed charge whose outcome it does not know
//     yet) and its verdicts.
//   - Then some payments the sweep found in sync, awaiting payment, succeed at Stripe and their
//     webhooks are lost; and at Stripe, their webhooks lost too, a payment is refunded in the
//     Dashboard, a refund the row recorded fails, and a customer disputes a payment. The
//     events lane (payment_intent.*, the refund events and charge.dispute.*) waits out its
//     settle time (2 seconds here, a minute in production) and runs until it has caught up
//     with Stripe's event log: it finds each of them once, a missed success or missed refund
//     with its repair command, a failed refund or a dispute needing a response for a person,
//     in one run, with one API call per hundred events (and the refunds and disputes it reads).
//   - The reverse scan lists the PaymentIntents created in the last 7 days (but the last 10
//     minutes) for one full pass, a hundred per call, and reports those no row refers to as
//     missing_locally, for a person; it adds nothing for the drifts the others opened.
//
// The run prints what a host would look at: open findings by kind, the repair commands queued
// in the outbox, the monitoring figures and the health checks (the lanes' among them), and the
// findings a person must review, with the fields that differ ("amount USD 12.00 -> USD 11.00",
// "currency JPY -> USD") and, for a failed refund or a dispute, the finding's detail: which
// refund and why it failed, which dispute and by when to answer it. It checks that every payment has exactly its story's finding, once,
// whichever lane found it, and no other.
//
// Then the repairs. One of the missed success webhooks arrives after all, late: a signed
// payment_intent.succeeded goes through the webhook handler (webhook.go). Then a
// pgoutbox.Dispatcher applies the queued repair commands (repair.go), the sweep's and the
// events lane's. Both go through the canonical writer (writer.go), the one place a payment's
// status, refunds and dispute change: a guarded update, a ledger row for a payment that
// becomes paid or is refunded, and the findings about the payment resolved in the same
// transaction. A success is recorded as the PaymentIntent holds it (the event's, or read again
// for a command): one in another currency or amount than the row's, or captured in part, is
// left for a person, and a payment becomes paid with what Stripe received in its ledger row.
// A refund or a dispute is recorded as Stripe holds it when the writer runs, read again, never
// as an event or a command said it earlier. The late webhook's payment is
// therefore repaired once: its repair command finds its finding resolved, is skipped, and is
// done. The run prints what the repairs did and the findings left for a person.
//
// It exits with status 1 if the sweep or either lane found anything but what was planted (a
// payment without its story's finding, with another, or with two), if a lane's health check
// fails, or if the repairs left a repairable finding open, changed a payment other than those,
// booked a payment or a refund twice, or left a command dead or waiting.
//
// # Without a database
//
// On a fresh machine, with no database reachable and no Docker, the run says so in its first
// line ("No PostgreSQL at ...: running the same story on memstore, in memory") and keeps the
// payments in a memstore (package adapters/memstore) instead: the same rows, ids and times, the
// same stripetest, sweep, lanes, health and checks against what was planted, and the same exit
// status if anything found differs from it (demo_backend.go). What is SQL over the host's own
// tables is skipped, and the output says so: the late webhook, the canonical writer and the
// dispatcher (memstore queues the repair commands, which the checks count, and has no
// dispatcher), and the review console, whose reviewer records a person's decision through the
// writer. A server that answers but refuses the login is an error, not a reason to run in
// memory. -store memory runs in memory on purpose; -store postgres fails rather than fall
// back. Real mode needs PostgreSQL.
//
// # Reading it
//
// What a host would copy is in seven files; start with them:
//
//   - schema.go: the host's own payments and ledger tables.
//   - host.go: the row type (paymentRow) and the typed store over the payments table, searchable
//     by order id; the sweep's reconcile.Config with the Stripe payment gateway and the money
//     policy; and the health check a host serves.
//   - lanes.go: the events lane and the reverse scan, under the sweep's job.
//   - writer.go: the canonical writer, the one place a payment's status, refunds and dispute
//     change.
//   - webhook.go: the Stripe webhook handler, which calls the writer: PaymentIntent outcomes,
//     refunds and disputes.
//   - repair.go: the dispatcher that applies the queued repair commands through the writer.
//   - reviewer.go: the review console's store, which records a person's decision on a lost
//     dispute, or one that needs a response, through the writer as the finding is resolved.
//
// The rest is demo machinery, in files named demo_*.go, and main.go, which drives the run:
// keeping the payments in PostgreSQL or in memory (demo_backend.go), planting drift in the fake Stripe (demo_drift.go, demo_stripe.go, demo_load.go), running and
// collecting (demo_lanes.go, demo_reqlog.go), printing (demo_report*.go), the checks against what
// was planted (demo_check.go), real mode's planting in Stripe's test mode (demo_real*.go) and the
// review console (demo_console.go).
//
// Flags:
//
//	-rows N      payments to load (default 3000; 40 in real mode)
//	-batch N     rows per batch (default 200)
//	-rps R       Stripe API calls per second, paced by a reconcile.AdaptiveLimiter as a host
//	             would pace the real API, shared by the sweep and the lanes (default 0:
//	             unpaced; 20 in real mode, where it paces the planting too and must be
//	             positive). A run longer than the 10-minute grace period lets the rows changed
//	             "in the last minute" age out of it; they are then asked about and reported as
//	             differences.
//	-seed N      seed for the table's content; the same seed gives the same table (default 1)
//	-schema S    the schema to drop and create (default reconcile_demo)
//	-store S     where the payments are kept: auto (PostgreSQL, or memory when none is
//	             reachable), postgres or memory (default auto)
//	-console A   once the run's checks pass, serve the review console on address A,
//	             such as 127.0.0.1:8080, until interrupted; its search box finds a
//	             payment's findings by its PaymentIntent, its id or its order id, and it
//	             resolves them through reviewer.go (see demo_console.go; default: none)
//
// With STRIPE_SECRET_KEY set, the run talks to Stripe's test mode instead of stripetest
// (demo_real.go):
//
//	STRIPE_SECRET_KEY=sk_test_... go run ./examples/payments
//
// Only a test-mode secret or restricted key (sk_test_..., rk_test_...) is taken; a live key is
// refused, and the key is never printed. The reconciler is the same, built the same way
// (newPayments with the key and no BaseURL, its events feed and reverse scan):
// only the planting differs. The PaymentIntents are created in the test account with
// stripe-go and Stripe's test payment methods (pm_card_visa confirmed for succeeded,
// pm_card_authenticationRequired for requires_action, created and left, created and
// canceled), refunded where a story says so, each marked with the metadata
// reconcile_demo=<run id>, which the reverse scan and the checks go by: the account holds
// other objects. The rows' created_at is their intent's created time, read back from Stripe.
// The stories no test payment method can make (processing, an outage) or make when the run
// needs them (a dispute, a refund that fails, both of which Stripe's test cards bring about on
// Stripe's own time) are left out, and say so. -rows defaults to 40 and -rps to 20
// (test mode allows 25 requests a second), for the planting and the reconciling. Stripe lists
// events a moment late, so the events lane keeps a 30-second settle time and the run waits it
// out twice: a real-mode run takes a minute or two. The created PaymentIntents stay in the
// test account.
//
// Real mode has been run only against stripe-mock, Stripe's own mock of its API, which
// validates every request against Stripe's OpenAPI specification but keeps no state
// (demo_real_test.go): it was written where there is no network. Its requests are known to be
// accepted; what real Stripe answers over time (statuses, event delays, list consistency) has
// not been observed.
//
// The tables stay until the next run, to be looked at:
//
//	psql "${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" -c 'TABLE reconcile_demo.reconcile_findings LIMIT 5'
//
// Two runs against one database at the same time get in each other's way unless they are
// given different schemas.
package main
