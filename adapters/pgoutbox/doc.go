// Package pgoutbox applies the repair commands that a reconcile job queues in the outbox table
// of pgstore: a Dispatcher claims them, calls the handler registered for their name and
// completes, retries or parks each one. The outbox and the findings it resolves are pgstore's
// tables (pgstore.Migrate creates them; Config.Tables names them: give it store.Tables()), and
// the dispatcher runs over the same pgstore.DB.
//
// # Getting started
//
//	// Up to 4 at once (fewer on a smaller pool), 30 s leases, 10 attempts.
//	dispatcher, err := pgoutbox.NewDispatcher(pool, pgoutbox.Config{Tables: store.Tables()})
//	if err != nil { ... }
//	err = pgoutbox.HandleCommand(dispatcher, "ApplyPaymentSucceeded",
//		func(ctx context.Context, tx pgx.Tx, cmd reconcile.Command) error {
//			return markPaid(ctx, tx, cmd) // the canonical writer; it resolves cmd.FindingID in tx
//		})
//	if err != nil { ... }
//	if err := dispatcher.Start(ctx); err != nil { ... }
//	defer dispatcher.Stop(context.Background()) // a no-op if it never started
//
// # Claims, leases and fencing
//
// Handlers are registered per command name (Handle, or HandleCommand and HandleJSON for typed
// payloads; handler.go). The dispatcher claims commands with FOR UPDATE SKIP LOCKED under a
// lease (dispatcher.go, its SQL in sql.go), renews the lease while a handler runs (lease.go),
// and calls the handler with a transaction in which the command is then marked done, so the
// repair and its completion commit together. Every completion, retry and renewal is guarded by
// the claim's attempt number: a dispatcher whose lease was taken over changes nothing.
// Commands of one aggregate apply in order. Any number of dispatchers, in any number of
// processes, may share a database. ApplyCommand is HandleCommand's apply step on its own, for
// other deliverers of the same commands (adapters/riverdelivery applies them as River jobs).
// Package deliverytest is the conformance suite the Dispatcher and every other delivery run: a
// command applies once, whatever the delivery does.
//
// # Failures
//
// Failures are retried with exponential backoff and jitter; a handler returns Permanent for a
// command that can never apply and RetryLater to wait without spending an attempt (errors.go).
// After MaxAttempts a command is dead, kept with its errors (DeadCommands) until Redrive
// (dead.go). Start and Stop run the dispatcher in the background with a graceful drain; Work
// runs one round for hosts that schedule it themselves. A host with its own outbox relay runs
// no Dispatcher and reads the seed's columns.
//
// # Monitoring
//
// Config.Observer (a reconcile.CommandObserver) sees the outcome of every attempt by command
// name (done, retry, dead, deferred, released, lease_lost: reconcile.AttemptOutcomes), and
// Outbox.Stats reads the backlog (commands queued, the age of the oldest) and the dead commands
// by name (reconcile.OutboxStats, outbox.go); package adapters/prommetrics exports both, and
// imports neither this package nor pgx to do so.
package pgoutbox
