// Command reconcile operates the reconcile library's tables in PostgreSQL from a shell: it
// applies the migrations or prints their SQL, reads a job's status and health, reviews findings,
// and lists and re-drives dead repair commands. Its audit command needs none of those tables:
// it compares a service's table with Stripe once, read-only, and prints the drift.
//
//	go run github.com/reconcilekit/reconcile/cmd/reconcile <command> [flags] [arguments]
//
// (from a checkout of the repository, whose go.work includes it; "go build ./cmd/reconcile" makes
// a binary). It is a module of its own, so that its dependencies are never a service's.
//
// # Commands
//
//	audit --table T [--object O] [--money]   compare T with Stripe once, read-only; exit 1 on drift
//	migrate                       apply the migrations not yet applied (pgstore.Migrate)
//	migrate sql [--after N]       print the migrations' SQL for the service's own migration tool
//	status --job J --table T      the job's status (pgstore.Store.Status)
//	health --job J --table T      the job's health (reconcile.EvaluateHealth); exit 1 when unhealthy
//	findings list [filters]       findings by --job, --kind, --status, --search, --record, --older-than
//	findings show ID              one finding with its differences and history
//	findings resolve ID... --actor A --note N [--as fixed|accepted|false_positive]
//	findings reopen ID... --actor A --note N
//	dead [--command NAME]         dead repair commands (pgoutbox.Dispatcher.DeadCommands)
//	redrive ID... --actor A       give dead commands new attempts (pgoutbox.Dispatcher.Redrive)
//	redrive --all NAME --actor A  ... every dead command of one name
//
// "reconcile help <command>" or "reconcile <command> --help" prints a command's flags and
// examples.
//
// # Database and tables
//
// Commands connect to $DATABASE_URL, or --database-url, by default
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable; an error names where it points,
// user@host:port/database, and none of its parameters (password, sslpassword, ...). --schema and --prefix name the reconciler's tables as the service's
// pgstore.Tables does. The findings, dead and redrive commands need nothing else. status and
// health read the lag from the service's table too, so they need --table, in --schema too
// unless --table-schema says otherwise (and, if the service names them differently,
// --key-columns, --id-column, --external-id-column, --state-column, --created-at-column,
// --updated-at-column), as its pgstore.Config does; a tier's Filter cannot be given, so their
// row counts are the whole table's.
//
// # audit
//
// audit reads the table by keyset through pgstore.Store.ReadFrom (no reconciler's table, SELECT
// on the table alone, every session default_transaction_read_only), asks Stripe through the
// object kit's gateway (stripemoney's with --money) paced by an AdaptiveLimiter at --rate, and
// judges with the stripepolicy policy of --object. Its Source and Sink (auditstore.go) keep the
// cursor and what the report needs in memory: counters and the findings, nothing per row in
// sync. The key comes from $STRIPE_SECRET_KEY only and is hidden from everything it prints,
// whatever its shape. Its exit codes: 0 complete and no drift; 1 drift found (complete or not);
// 2 the command line; 3 no drift found but not everything verified (interrupted, Stripe
// answering nothing for --patience, a failure, unverifiable rows). tools/auditdemo plants a
// table and serves stripetest to try it.
//
// # Exit codes
//
//	0  done; for health: healthy
//	1  health: unhealthy; findings show, resolve, reopen and redrive: a finding or command named
//	   is not there or not in a state the command acts on (already resolved, already open, found
//	   again, not dead, out of order); the others named are still acted on
//	2  the command line is wrong: an unknown command or flag, a missing or invalid argument
//	   (resolve and reopen without --actor or --note among them); nothing was done
//	3  the database, or something else, failed
//
// # Output
//
// Readable text by default; status, health, findings list and show, and dead print JSON with
// --json (snake_case names, times in RFC 3339 UTC, unset ones left out). Messages go to
// standard error. Every value read from the database is printed with anything that looks like
// a Stripe key (sk_live_..., sk_test_..., rk_..., whsec_...) replaced by "[redacted key]", as
// the review console does: a repair handler's error may quote one. In text output its control
// characters are escaped (\x1b, \n, \u202e): an external state, a note or a handler's error can
// neither send the terminal an escape sequence nor print a line of its own.
package main
