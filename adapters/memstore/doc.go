// Package memstore is an in-process [reconcile.Store]: the same cursor, grace, observation,
// finding and command semantics as the PostgreSQL adapter, with nothing to set up. Use it for
// host unit tests, for trying classifiers, and for database-free examples
// (examples/custom-classifier runs on it).
//
// # Using it
//
// [New] returns a [Store] over rows keyed by any ordered type K, with local state of any type L.
// [Store.Put] rows in, and give the store to a job as both its Source and its Sink:
//
//	store := memstore.New[int64, string](memstore.Options{})
//	store.Put(memstore.Row[int64, string]{Key: 1, ExternalID: "pi_1", Local: "pending"})
//	rec, err := reconcile.New(reconcile.Config[string, string]{
//		Job: "payments", Source: store, Sink: store, Gateway: gateway, Classifier: classifier,
//	})
//
// A row's CreatedAt and UpdatedAt default to the store's clock at Put, so a row just put is
// inside the grace period: set UpdatedAt in the past, or set [Options].Now to a clock the test
// moves, to have it judged at once. A CreatedAt or UpdatedAt more than
// [reconcile.MaxClockSkew] ahead of the store's clock is an impossible time: the row is read
// Invalid, a NeedsReview invalid_row finding, not judged InFlight. Record ids are the keys as
// fmt.Sprint prints them.
//
// # Semantics
//
// Rows are kept in key order; Read returns the rows after the job's cursor up to the cycle's
// high-water mark (reconcile.Cursor.End, the last key present at the cycle's first read), so a
// cycle ends with a short read however fast rows are put. Commit compare-and-sets on the
// cursor version ([reconcile.ErrConcurrentRun] when it moved) and applies observations,
// findings and commands together, for the rows still as Read or Match returned them (every Put
// and Delete gives a row a new version: reconcile.Record.Version). At most one finding is open
// per (job, record, kind), a command is queued only with a new finding, and a verified
// judgment closes the record's other open findings as superseded or cleared (see
// reconcile.Sink). The package runs the conformance suite of package reconciletest, as pgstore
// does.
//
// # Reading the results
//
// Store is a [reconcile.Reviewer], as pgstore.Store is, with the same semantics:
// [Store.ListFindings] (keyset pages by job, kind, record, state and age, in the order they
// were opened, and a Search for a finding's external id or record id; there are no host
// columns to search besides), each finding with its decision's Diffs, [Store.Finding] (one with its history of resolutions and reopenings),
// [Store.ResolveFinding] (after which the same drift can be found again with a new finding and
// a new command) and [Store.ReopenFinding]. What a PostgreSQL store keeps in its other tables,
// this one exposes as methods: [Store.Commands] (the outbox, in order, each a
// [reconcile.Command] with its sequence number and aggregate type), [Store.Observation] (a
// record's last confirmed external state and when), and [Store.Cursor] (position, version,
// and cycle and last-batch figures).
//
// There is no dispatcher: a test or example applies the commands itself, through the host's
// handlers, and resolves their findings.
//
// # Status and health
//
// Store is a [reconcile.StatusReader], with pgstore's semantics: [Store.Status] reports a job's
// lag (the longest any row has gone unverified by the job, counted from creation for a row
// never verified), rows and rows created in the last hour, cycles, the last batch, open
// findings by kind (leaving out those of deleted rows) and those open past
// [Options].StaleAfter, the last failed batch and the job's lanes. It is also a
// [reconcile.FailureRecorder] and a [reconcile.LaneFailureRecorder], so a failing batch or lane
// step shows in health. With [Options].Now set to a clock the test moves,
// [reconcile.EvaluateHealth] and [reconcile.HealthHandler] can be tested in memory, exactly.
// It is a [reconcile.CoverageReader] too: [Store.Coverage] buckets every row by the time the
// lag counts from, exactly, where pgstore's estimates from its lag marks. It is a
// [reconcile.GroupSink] and a [reconcile.GroupReader] as pgstore is: a payout tie-out's step
// records each payout with its findings, and the console's payouts pages read them.
//
// All methods are safe for concurrent use.
package memstore
