// Subscriptions reconciles a PostgreSQL subscriptions table against Stripe Subscriptions with
// stripeadapter's object kit and stripepolicy's subscription policy, repairs what it found
// through the canonical writer a webhook handler would call, and checks the outcome against the
// drift it planted.
//
//	go run ./examples/subscriptions
//
// It connects to $DATABASE_URL (by default
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable), drops and creates the schema
// subscriptions_demo (-schema), and fills its subscriptions table, UUID-keyed and walked by a
// composite (created_at, id) cursor, with -rows rows (1000) whose subscriptions it loads into
// stripetest, a fake Stripe served over HTTP by the process. Most agree; on every seventh
// row it plants a drift (plant.go lists them): subscriptions canceled at Stripe but active
// here, among canceled ones that agree, all of which only a status=all list shows; a past_due
// and an unpaid one still active here; a first payment the row missed; cancel_at_period_end
// set in the customer portal, and set here but not at Stripe; a row paid through a month past
// Stripe's period end; a cancellation that never reached Stripe, which still bills; and a
// subscription missing at Stripe.
//
// Then one full cycle of the sweep, its figures (rows, lag, verdicts, open findings by kind)
// and its health; then a pgoutbox.Dispatcher applies the repair commands through the writer,
// and the run lists what is left for a person. It exits with status 1 if any planted row
// lacks its finding or has another, any other row has one, a subscription other than the
// missing one was asked for alone (the lists showed every other one, canceled or not), the
// health check fails, a repaired row differs from Stripe or an unrepaired one from what was
// planted, a finding is open or closed against the plan, or a command is dead or waiting.
//
// # Reading it
//
// The host's code is host.go (the row type, the store, the gateway, the reconciler, the
// dispatcher, health) and main.go (the run); schema.go is the table, writer.go the canonical
// writer, plant.go the demo's drift and its check.
package main
