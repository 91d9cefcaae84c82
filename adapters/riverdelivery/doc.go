// Package riverdelivery delivers the reconciler's repair commands as River jobs
// (github.com/riverqueue/river), for a host that already runs River, instead of a pgoutbox
// Dispatcher. It is a module of its own, so that neither the core nor pgstore depends on River.
//
// # How it works
//
// A Deliverer, given to pgstore.Config.Deliver, inserts one job per command with River's
// InsertManyTx in the reconciler's own commit transaction: a commit that rolls back leaves no
// job, and a job exists only for a command that is recorded. The command's outbox row is still
// written, as its record (a finding's history shows it), marked as handed over (processed_at
// set) so that no Dispatcher claims it, and naming its job (lease_owner "river job <id>"). A
// job's Args carry only the row's id and tables; the command is read from the row.
//
// A Worker applies a job's command only while the outbox row waits for that very job: handed
// over, pending, and naming the job. In one transaction it locks the row (so jobs of one row
// run one at a time), applies the command through the host's canonical writer, the same
// pgoutbox.CommandWriter a Dispatcher is given with pgoutbox.HandleCommand, with the same rule
// (pgoutbox.ApplyCommand: a command whose finding is already resolved, or superseded, changes
// nothing), marks the row done (which clears the job's name) and completes the River job
// (river.JobCompleteTx). The writer resolves the finding (reconcile.ResolutionRepaired) in that
// transaction too, so the repair, the resolution, the record and the completion commit
// together. A process that dies before the commit leaves nothing; River runs the job again.
//
// Any other job applies nothing: River retrying a job that applied its command
// (Client.JobRetry of a completed job), the same args inserted again after River's cleaner
// removed the job, args naming the same tables another way, another command's row, a row
// that does not exist, or one that did not exist yet when the job was inserted. It completes,
// logs a warning with the reason (WorkerConfig.Logger), and records {"delivered": false,
// "refused": reason} as its output (River's UI shows it; a job that applied its command
// records {"delivered": true}). So a command applies once, whatever River does and whoever
// can insert River jobs: adapters/pgoutbox/deliverytest, the suite pgoutbox's Dispatcher runs
// too, checks it.
//
// # Getting started
//
// River's tables and the reconciler's must be in one database (the completion shares the
// repair's transaction):
//
//	worker, err := riverdelivery.NewWorker(pool, riverdelivery.WorkerConfig{})
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
// # Failures, dead commands and re-drive
//
// A writer's error fails the attempt; River retries it with its retry policy and discards the
// job after Config.MaxAttempts (River's default 25). pgoutbox.Permanent (and a payload that
// does not decode, or a command no writer is registered for) cancels the job at once;
// pgoutbox.RetryLater snoozes it without spending an attempt. Dead commands are then River's
// discarded and cancelled jobs of kind Kind, each with its errors: list them with River
// (Client.JobList with those states, River UI or CLI). Their outbox rows still wait for them,
// so retrying such a job with Client.JobRetry applies its command. Once River's cleaner has
// removed the job (after a week, by default), or for a row that names no job, re-drive the
// command with Deliverer.Redrive: it enqueues a new job, names it on the row (no earlier job of
// the command can apply it then) and records who did it in the finding's history. A command
// that is done is never re-driven. Meanwhile the outbox row stays handed over, so pgoutbox's
// Outbox.Stats, DeadCommands and Redrive do not see it (monitor River's discarded and
// cancelled jobs instead), and the finding stays open: Status counts it stale after
// StaleAfter. Setting the row back to pending by hand re-drives nothing.
//
// River does not keep pgoutbox's per-record order: two commands of one record may apply in
// either order. The writer's guarded update (Command.ExpectedLocal) makes the later-found
// one a no-op when the first has moved the row on.
package riverdelivery
