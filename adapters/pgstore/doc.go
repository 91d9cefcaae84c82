// Package pgstore is the PostgreSQL adapter (pgx v5): one Store that is both the reconcile.Source
// and the reconcile.Sink for a host table described by Config.
//
// # Getting started
//
// Create the reconciler's tables once (or run Migrations with your own tool), describe the host
// table, and give the store to a job as both its Source and its Sink; a pgoutbox.Dispatcher
// applies the repair commands the job queues:
//
//	store, err := pgstore.New(pool, pgstore.Config{
//		Table:            "payments",
//		ExternalIDColumn: "stripe_payment_intent_id",
//	})
//	if err != nil { ... }
//	if err := pgstore.Migrate(ctx, pool, store.Tables()); err != nil { ... }
//	rec, err := reconcile.New(reconcile.Config[string, *stripe.PaymentIntent]{
//		Job: "payments", Source: store, Sink: store,
//		Gateway: gateway, Classifier: stripepolicy.PaymentIntentPolicy(),
//		ExternalState: stripepolicy.PaymentIntentState,
//	})
//	if err != nil { ... }
//	// run rec from a reconcile.Runner, or call reconcile.RunTick from your own scheduler
//
//	dispatcher, err := pgoutbox.NewDispatcher(pool, pgoutbox.Config{Tables: store.Tables()})
//	if err != nil { ... }
//	err = pgoutbox.HandleCommand(dispatcher, "ApplyPaymentSucceeded",
//		func(ctx context.Context, tx pgx.Tx, cmd reconcile.Command) error {
//			return markPaid(ctx, tx, cmd) // the canonical writer; it resolves cmd.FindingID in tx
//		})
//	if err != nil { ... }
//	if err := dispatcher.Start(ctx); err != nil { ... }
//	defer dispatcher.Stop(context.Background())
//
// The local state is the state column's text, so the store is a reconcile.Store[string]; a
// host that compares more than a status reads typed rows (below). Every query takes a context;
// pool is a *pgxpool.Pool or anything else that is a DB. Check verifies the table and columns
// and the reconciler's tables up front, Status reads a job's monitoring figures.
//
// # Typed rows
//
// NewOf[L] returns a Store[L] whose local state is a struct of host columns, such as a payment's
// status, amount in minor units and currency, for a policy that compares money:
//
//	type payment struct {
//		Status   string // untagged: the column status
//		Amount   int64  `db:"amount_cents"`
//		Currency string
//		Refunded *int64             `db:"amount_refunded"` // nullable
//		Captured pgtype.Timestamptz `db:"captured_at"`
//		Notes    string             `db:"-"` // not a column
//	}
//	store, err := pgstore.NewOf[payment](pool, pgstore.Config{Table: "payments"})
//
// A field's column is its db tag, or its name lowercased when untagged (Amount is amount, not
// amount_cents); db:"-" and unexported fields are skipped, and an untagged exported embedded
// struct's fields count as the struct's own. Each column is read in its own type into its field,
// as pgx scans it: int64 for a bigint, string or pgtype.Numeric for a numeric, a string type for
// text, char or an enum, a pointer, sql.Null or pgtype type for a nullable column, time.Time for a
// timestamp. A timestamp without time zone is taken to be in Config.TimeZone, as the store reads
// every naive time, when read into a time.Time (or a pointer, sql.NullTime, pgtype.Timestamptz);
// into a pgtype.Timestamp or a string it comes as stored.
//
// Fields are decoded one by one, so a value its field cannot take (a NULL into an int64, text
// into a number) makes only its row Record.Invalid, naming the column and field: that row
// becomes an invalid_row finding and the cursor moves on, as for a row with impossible times.
// NewOf refuses a type that is not a string or a struct with a mapped field, two fields on one
// column, and a column name that is not a plain identifier; Check (or the first read) names a
// field whose column the table lacks, and a field whose type cannot hold its column's (an
// int64 over a text column), judged on up to ten rows of the table (the field fails if none
// of its column's values fits it), so that such a mistake fails at startup rather than
// turning every row into a finding. With a struct the state column is not read and need not
// exist; a field may also name the key, id or external id column. The sweep, lanes (Match),
// tiers, pgshard jobs, Status and the review API work alike for every L, and decoding costs
// what pgx's own Scan does: the engine benchmark's typed row of four columns runs at the
// one-column row's speed.
//
// Config.Columns names fields' columns when the program runs, in place of their tags (or "-"
// to leave a field unread): a program whose row type is fixed at compile time and whose table
// is not, such as the command line's audit, maps its struct to the columns its flags name.
//
// The classifier sees L; findings and observations record the states it names (LocalState, or
// a StateNamer classifier's), short and secret-free, and a Decision's Diffs say which fields
// differ: they are stored with the finding (at most reconcile.MaxDiffs, values cut to
// reconcile.MaxDiffValue bytes) and returned by ListFindings and Finding.
//
// # The host table
//
// Config names the table and its columns: the keyset (one ordered column, or several such as
// created_at and id for UUID-keyed tables, compared as a row constructor), the row id, the
// external id, the local state, updated_at (UpdatedAtColumn: a row changed within the grace
// period is in flight) and created_at (CreatedAtColumn: lag counts from it, and the bulk fetch
// looks for each row's external object created around it). Every identifier is checked to be a
// plain SQL identifier and quoted with pgx's sanitizer; values are always bound parameters. The
// table and columns are checked against the catalog on first use (Check does it up front), with
// an error naming the column, the Config field that names it and what the store reads it for.
//
// By default the store only reads the host table: observations go to the reconciler's own
// table, so SELECT privilege suffices and no updated_at trigger fires. ObserveInHostColumns
// writes them to columns of the host table instead, as the seed design did. ReadFrom needs
// even less: it reads the host table after a cursor the caller keeps, without the reconciler's
// tables, for a one-off read-only pass (reconcile audit) by a role that may only SELECT it.
//
// # Tiers
//
// Several jobs may cover one host table with different filters and cadences: recent and
// unsettled rows often, the rest rarely. Each tier is its own Store, with a Config.Filter and
// a job name of its own, so each has its own cursor, observations and findings:
//
//	hot := pgstore.Filter{AnyOf: [][]pgstore.Cond{
//		{{Column: "created_at", Op: pgstore.Within, Value: 90 * 24 * time.Hour}},
//		{{Column: "status", Op: pgstore.In, Value: []string{"pending"}}},
//	}}
//	cold := hot
//	cold.Not = true
//
// A Filter is an OR of ANDs of conditions on columns; values are bound parameters and columns
// are checked identifiers, so the filter above reads WHERE coalesce((h."created_at" >= now() -
// $3::interval) OR (h."status" = ANY($4)), false), and its Not twin NOT coalesce(...). A row
// whose conditions are unknown (a NULL created_at or status) is thus outside a filter and
// inside its complement: a filter and its Not twin partition the table. Within and OlderThan
// use the database clock and read a timestamp without time zone in Config.TimeZone.
//
// The partition holds at an instant; a row moves between tiers as it ages or changes, and
// one that moves behind the other tier's cursor waits for that tier's next cycle. Lag shows
// it. Status reports each tier's rows, lag and new rows per hour; the overall lag is the
// largest tier's. Give each tier the others' names in LagJobs, so that a row the hot tier
// verified an hour ago and that has just turned cold counts an hour of lag, not the time since
// its creation. An unfiltered Store whose LagJobs lists every tier reports the overall lag
// directly.
//
// # The reconciler's tables
//
// Cursors, observations, findings, the outbox, shards and rate budgets come from migrations
// embedded in the package.
// Migrate applies them idempotently; Migrations returns them rendered as an fs.FS for hosts that
// run their own migration tool. Tables sets a name prefix and schema; the schema is
// Config.Schema, the host table's, unless Config.Tables names another. The schema is named
// once: Store.Tables returns the tables a store uses, for Migrate, pgoutbox and pgbudget.
// Every migration file records its version, whichever tool applies it; Check (and a store's
// first read) fails with a *MigrationError, errors.Is ErrNotMigrated, when the tables are
// missing or lack a migration, and says to run Migrate, as does a statement that meets a
// reconciler table that does not exist.
//
// # Batches
//
// Read takes two round trips (cursor, rows). Commit sends the cursor's compare-and-set, the
// locks below, findings with their outbox rows and the closing of findings verified judgments
// no longer describe (one statement: a command is queued only for a finding that was actually
// inserted), and observations (unnest) as one pipelined batch in one transaction, so a batch
// costs a handful of round trips whatever its size.
//
// # Rows changed since their read
//
// Read and Match return each row's version (reconcile.Record.Version): its xmin, which every
// write of the row changes, whatever it does to updated_at. A commit records nothing of a row
// whose version has changed since (no observation, finding or command, and it closes none;
// CommitResult.Changed counts it): the next cycle judges it. With ObserveInHostColumns the
// version also holds updated_at and the last-verified time, so that the reconciler's own write
// (another job's, or a lane's, verifying the row meanwhile) is not taken for a change, judged
// as the grace period judges it (OwnWriteTolerance). A commit takes, in this order, a
// transaction advisory lock per record it may open a finding of (a sweep and a lane judging
// one record take turns), the host rows it writes (ObserveInHostColumns only: by default the
// store needs no UPDATE privilege on the host table, so it locks none), and those records'
// open findings: a repair or webhook that changed a row and is resolving its finding (row
// first, then finding, as the canonical writer does) has committed by then, and the commit
// sees the row changed. The other findings a verified judgment closes (reconcile.Sink) it
// closes only if no other transaction holds them at that moment (a person resolving one): such
// a finding is left to the next verified judgment, and a commit never waits on one.
//
// # Applying repairs
//
// Commit queues a repair command in the outbox table only with a finding it opened. Package
// pgoutbox's Dispatcher applies them through handlers registered per command name: claimed
// under a lease, fenced by the attempt number, retried with backoff, parked dead until
// re-driven. A host with its own outbox relay runs no Dispatcher and reads the seed's columns.
// A host with a job queue of its own sets Config.Deliver: a Deliverer (deliver.go) receives the
// commands each commit queued, in the commit's transaction, and their outbox rows are marked
// handed over so that no Dispatcher claims them; adapters/riverdelivery enqueues them as River
// jobs.
//
// # The canonical writer
//
// The state transition a repair applies is the host's own function, the same one its webhook
// handler calls: a guarded update (WHERE status = 'pending') that is a no-op when already
// applied. Inside that function's transaction, ResolveFindingIn (the repair knows its finding;
// reconcile.ErrAlreadyResolved when a webhook or a person got there first) or
// ResolveRecordFindings (a webhook knows only the row) closes the finding either way, so the
// repair, the webhook and the finding commit together whichever comes first.
//
// # Review
//
// Store is a reconcile.Reviewer, the core's review interface, as memstore.Store is:
// ListFindings pages through findings by job, kind, row, state and age (with the external ids
// of this store's table's rows), and searches them: FindingQuery.Search is a finding's external
// id or record id, or a value of one of Config.SearchColumns (an order id, say) of its row,
// whole, each compared in its column's type so that an index serves; Finding returns one with its history (detection,
// resolutions, reopenings and its repair commands' fate, failures and last error).
// ResolveFinding records the resolution, actor and note; ReopenFinding opens it again; both
// have an -In form that runs in the host's transaction. Every change is appended to an audit
// table that a trigger keeps append-only. Nothing changed is an error wrapping
// reconcile.ErrFindingNotFound, ErrAlreadyResolved, ErrAlreadyOpen or ErrFoundAgain.
//
// # Rows that can never be verified
//
// Lag counts a row from its last verification, or from its creation if it was never verified.
// A row that cannot be verified at all (no external id, or an id the external system rejects)
// keeps the lag at its age for as long as it exists, also after a person resolved its finding:
// exclude such rows from the job with a Filter (external_id NotNull, or a status column), or
// fix them.
//
// A row whose times cannot be read or judged (an infinite created_at or updated_at, or a
// created_at before 1900 such as Go's zero time.Time) comes back from Read and Match with
// Record.Invalid set: it becomes a NeedsReview invalid_row finding, nothing is asked, and the
// cursor moves on. Status leaves such rows out of the lag (their open finding shows them), and
// the lag is never negative and never overflows. So is a row whose created_at or updated_at lies
// more than reconcile.MaxClockSkew ahead of the database's clock, an impossible time that would
// otherwise keep the row within the grace period at every read, its drift never found; its lag
// can be computed, so Status keeps counting it while it goes unverified.
//
// # Deleted rows
//
// A commit opens no finding, queues no command and writes no observation for a row deleted
// since its batch was read. When a cycle completes (the wrap, or for a pgshard.Job the last
// shard's wrap) the job's open findings of rows that no longer exist are resolved as
// reconcile.ResolutionRowDeleted by reconcile.ResolvedByReconciler, in their history too, and
// the job's observations of such rows are removed; until then Status does not count them.
// missing_locally findings are about external objects and stay. A command already queued for a
// row deleted later stays in the outbox: the canonical writer finds no row to change and
// finishes it (or fails it permanently, and it goes dead).
//
// # Scaling past one process
//
// Package pgshard splits a job over this store's table into key ranges that workers in any
// number of processes lease; package pgbudget's Budget is the rate they share.
//
// # Monitoring
//
// Status reads a job's lag, cycle age, time since the last completed cycle, last batch's
// unverifiable ratio, open findings by kind and those open longer than StaleAfter (a repair
// that never applied shows up there). For a store of every row with observations in the
// reconciler's own table it finds the lag from lag marks each commit records, without scanning
// the host table: about 20 ms at 10 million rows, exact but for one documented case in which it
// is too large, never too small (Store.Status). Give the host table an index on its created_at
// column. Filtered tiers, ObserveInHostColumns and sharded jobs keep the scan.
//
// Coverage (a reconcile.CoverageReader, for the console's coverage chart) reads the same marks
// to bucket the job's rows by time since their last verification, an estimate that counts a
// row older than it is, never younger, and the job's open findings day by day; where Status
// scans, it says so in Coverage.Unknown rather than scanning.
//
// # Payouts
//
// A Store is a reconcile.GroupSink and a reconcile.GroupReader: a payout tie-out's step
// (package tieout) records each payout it saw in the groups table (migration 014), in the
// transaction and round trip of its lane commit, one row per (job, account, payout), written
// set-based from one jsonb array in one order whoever commits (two lanes recording the same
// payouts at once cannot deadlock), times by the database's clock; the commit counts as one
// write (Writes). ListGroups pages them by keyset on their number, CountGroups counts them by
// state in one query (about 70 ms over a million records, 4 ms over a job's thousand).
package pgstore
