// Package pgshard runs one reconcile job over a pgstore.Store's table in shards, so that workers
// in any number of processes share it: a Job splits the job into shards, ranges of the first key
// column cut at its quantiles (the first open downward, the last upward, so new rows always
// belong to one), remade from the keys present at the start of every cycle. A Job[L] and its
// Leases are generic over the store's local state L, as a pgstore.Store[L] is: the
// one-status-column store of pgstore.New gives a Job[string], a store of typed rows
// (pgstore.NewOf) a Job of that struct.
//
// # Getting started
//
//	job, err := pgshard.NewJob(store, pgshard.Config{Job: "payments", Shards: 8})
//	if err != nil { ... }
//	// in each worker process, from any scheduler:
//	tick, err := pgshard.RunShard(ctx, job, reconcile.Config[string, *stripe.PaymentIntent]{
//		Gateway: gateway, Classifier: stripepolicy.PaymentIntentPolicy(),
//		ExternalState: stripepolicy.PaymentIntentState, Limiter: budget, // a pgbudget.Budget
//	}, reconcile.TickBudget{})
//
// # Leases
//
// Workers lease free shards with FOR UPDATE SKIP LOCKED (Job.Acquire, or RunShard and Sweep,
// which lease, run and release; run.go). A Lease is the shard's reconcile.Source and Sink
// (lease.go): every read and commit is fenced by the lease's token and the shard cursor's
// compare-and-set, a crashed worker's shard is taken over once its lease expires, and a lease
// held past MaxHold is given up. The commit of the last shard to wrap completes the job's cycle
// in its cursor row (job.go), so each row is read once per cycle whatever the number of
// workers. Reads and commits are the store's own (the same keyset read within the shard's
// range, the same set-based writes), so findings, observations and failures stay under the
// job's name. The statements on the shards table are in sql.go.
//
// # Status
//
// ShardStatus and Health report every shard and name the slowest (status.go); Status is the
// job's reconcile.Status, as the store's.
//
// The workers of a Job share one rate through package pgbudget's Budget.
package pgshard
