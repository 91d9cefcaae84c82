// Package riverdelivery delivers the reconciler's repair commands as River jobs
// (github.com/riverqueue/river), for a host that already runs River, instead of a pgoutbox
// Dispatcher. It is a module of its own, so that neither the core nor pgstore depends on River.
//
// # How it works
//
// A Deliverer, given to pgstore.Config.Deliver, inserts one job per command with River's
// InsertManyTx in the reconciler's own commit transaction: a commit that rolls back leaves no
// job, and a job exists only for a command that is recorded. The command's outbox row is still
// written, as its record (a finding's history shows it) and its unique id, marked as handed
// over (processed_at set), so that no Dispatcher claims it. A job is unique by that id and the
// store's tables (Args, River's unique options; stores with different tables number their rows
// alike): enqueueing the same command again is skipped as a duplicate.
//
// A Worker applies a job's command through the host's canonical writer, the same
// pgoutbox.CommandWriter a Dispatcher is given with pgoutbox.HandleCommand, with the same rule
// (pgoutbox.ApplyCommand: a command whose finding is already resolved changes nothing). In the
// same transaction it marks the outbox row done and completes the River job
// (river.JobCompleteTx). The writer resolves the finding (reconcile.ResolutionRepaired) in
// that transaction too, so the repair, the resolution, the record and the completion commit
// together. A process that dies before the commit leaves nothing; River runs the job again,
// and the writer's guarded update keeps the effect exactly once.
//
// # Getting started
//
// River's tables and the reconciler's must be in one database (the completion shares the
// repair's transaction):
//
//	worker, err := riverdelivery.NewWorker(pool, pgstore.Tables{Schema: "billing"}) // = store.Tables()
//	if err != nil { ... }
//	if err := worker.Handle("ApplyPaymentSucceeded", markPaid); err != nil { ... } // the canonical writer
//	workers := river.NewWorkers()
//	river.AddWorker(workers, worker)
//	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Workers: workers,
//		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}}})
//	if err != nil { ... }
//	deliverer, err := riverdelivery.New(client, riverdelivery.Config{})
//	if err != nil { ... }
//	store, err := pgstore.New(pool, pgstore.Config{Table: "payments", Schema: "billing", Deliver: deliverer})
//
// # Failures and dead commands
//
// A writer's error fails the attempt; River retries it with its retry policy and discards the
// job after Config.MaxAttempts (River's default 25). pgoutbox.Permanent (and a payload that
// does not decode, or a command no writer is registered for) cancels the job at once;
// pgoutbox.RetryLater snoozes it without spending an attempt. Dead commands are then River's
// discarded and cancelled jobs of kind Kind, each with its errors: list them with River
// (Client.JobList with those states, River UI or CLI) and re-drive one with Client.JobRetry;
// the Worker applies it and marks its outbox row done. Meanwhile the outbox row stays handed
// over, so pgoutbox's Outbox.Stats, DeadCommands and Redrive do not see it (monitor River's
// discarded jobs instead), and the finding stays open: Status counts it stale after
// StaleAfter.
//
// River does not keep pgoutbox's per-record order: two commands of one record may apply in
// either order. The writer's guarded update (Command.ExpectedLocal) makes the later-found
// one a no-op when the first has moved the row on.
package riverdelivery
