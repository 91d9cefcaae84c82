// Package pgstore is the PostgreSQL adapter (pgx v5): one Store that is both the reconcile.Source
// and the reconcile.Sink for a host table described by Config.
//
// # The host table
//
// Config names the table and its columns: the keyset (one ordered column, or several such as
// created_at and id for UUID-keyed tables, compared as a row constructor), the row id, the
// external id, the local state, updated_at for the grace period and created_at for lag. Every
// identifier is checked to be a plain SQL identifier and quoted with pgx's sanitizer; values are
// always bound parameters. The table and columns are checked against the catalog on first use
// (Check does it up front), with an error naming what is missing.
//
// By default the store only reads the host table: observations go to the reconciler's own
// table, so SELECT privilege suffices and no updated_at trigger fires. ObserveInHostColumns
// writes them to columns of the host table instead, as the seed design did.
//
// # The reconciler's tables
//
// Cursors, observations, findings and the outbox come from migrations embedded in the package.
// Migrate applies them idempotently; Migrations returns them rendered as an fs.FS for hosts that
// run their own migration tool. Tables sets a name prefix and schema.
//
// # Batches
//
// Read takes two round trips (cursor, rows). Commit sends the cursor's compare-and-set,
// observations (unnest), and findings with their outbox rows (one statement: a command is
// queued only for a finding that was actually inserted) as one pipelined batch in one
// transaction, so a batch costs a handful of round trips whatever its size.
//
// # Monitoring
//
// Status reads a job's lag, cycle age, time since the last completed cycle, last batch's
// unverifiable ratio and open findings by kind, in one round trip.
package pgstore
