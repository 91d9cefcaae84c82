// Package pgbudget is a rate budget kept in PostgreSQL: a token bucket per key (an external
// account) in the reconciler's tables, from which every worker of every process reserves its
// calls, so that their total stays within one rate however many workers there are.
//
// A Budget is a reconcile.Limiter and a reconcile.Throttler: give it to a job's Config as
// its Limiter (a pgshard.Job's workers, typically). Each grant is one statement
// computed by the database clock (budget.go, its SQL in sql.go); a rate-limit answer to any
// worker pauses the bucket for all. The bucket lives in pgstore's rate_budgets table
// (pgstore.Migrate creates it; Config.Tables names the tables as given there).
//
//	budget, err := pgbudget.New(pool, pgbudget.Config{Key: "acct_123", Rate: 20, Burst: 5})
//	if err != nil { ... }
//	cfg.Limiter = budget // reconcile.Config
//
// For one process, reconcile.AdaptiveLimiter is the simpler choice and adapts its rate.
package pgbudget
