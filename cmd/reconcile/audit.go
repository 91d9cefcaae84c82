package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v82"
	"golang.org/x/time/rate"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripemoney"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/internal/shared/pgenv"
)

// auditJob names the audit's job: its cursor and findings live in memory, for the run.
const auditJob = "audit"

// keyEnv is where the audit reads the Stripe key, and the only place.
const keyEnv = "STRIPE_SECRET_KEY"

const auditHelp = "reconcile audit --help"

// connectAdvice is what the audit says when the database cannot be reached: it needs the
// database that holds the table, read by a role that may only read it.
const connectAdvice = `Give the audit the database that holds the table: --database-url, or $DATABASE_URL (safer: other users can see a command line), e.g.
  export DATABASE_URL='postgres://auditor:password@db.example.com:5432/shop?sslmode=require'
A role that may only SELECT the table is enough: the audit writes nothing.
`

// keyFlags are flags someone may try to pass the key with; the audit refuses them by name.
var keyFlags = []string{"key", "stripe-key", "api-key", "secret-key", "stripe-secret-key", "stripe-api-key"}

// auditFlags are the audit's command line.
type auditFlags struct {
	host    hostFlags
	url     string
	schema  string
	object  string
	money   bool
	account string
	baseURL string
	rate    float64
	batch   int
	// maxFindings bounds the findings kept, and so the audit's memory.
	maxFindings int
	grace       time.Duration
	patience    time.Duration
	json        bool
	csv         bool
	// statusMap is --status-map; statuses is it parsed (check): the table's payment statuses
	// in the payment policy's words.
	statusMap string
	statuses  map[string]string
	// The compared columns of the typed rows (auditrows.go): flag name to value.
	cols map[string]*string
	set  map[string]bool // flags given on the command line
}

func runAudit(ctx context.Context, e *env, args []string) int {
	s := newSpec("audit", "reconcile audit --table TABLE [--object payment_intent|subscription|invoice|checkout_session] [--money] [flags]", `
audit compares every row of your table with its Stripe object, once, and prints what differs:
the reconcile library's sweep and policies over your data, with no Go code to write and
nothing written anywhere. It reads the table by keyset (WHERE key > last ORDER BY key LIMIT
--batch-size) in read-only transactions (default_transaction_read_only): a role that may only
SELECT that one table is enough; if the table's row-level security binds that role, the
report says so: only the rows it may see are read. It only reads Stripe (list and retrieve
calls, paced by --rate and slowed down by any 429). The cursor and the findings live in
memory for the run.

The policies read --state-column in their own words: a payment's as pending, paid or failed
(stripepolicy.PaymentIntentPolicy), a subscription's, an invoice's and a Checkout Session's as
Stripe names its statuses. A pair of states a policy has no rule for is reported as a finding
of kind unexpected:<yours>-><Stripe's>.

Yours may differ: --status-map says what they mean, such as
--status-map succeeded=paid,canceled=failed,requires_payment_method=pending for payments, or
--status-map ACTIVE=active,cancelled=canceled for subscriptions.

The Stripe key is read from $STRIPE_SECRET_KEY, never from a flag: a flag lands in your shell
history and in the process list. A restricted key (rk_...) with read access to the object is
enough. The key is never printed, not even when an error from the server quotes it, and a
live key is not sent over plain http to another machine.

Progress (rows read, verified, calls, rate, ETA) goes to standard error: one updating line
on a terminal, a plain line every 10 seconds otherwise. Then it prints a summary (rows,
verified, in flight, unverifiable, lag, findings by kind with their meanings) and the findings:
as text, --json or --csv (cells that a spreadsheet would take for formulas are prefixed with
'). Ctrl-C stops the run and prints what was found so far.

Exit codes: 0 the audit completed, every row read was verified or in flight, and none drifted;
1 drift found (a finding of any kind), even in an audit that did not complete; 2 the command
line is wrong; 3 no drift found, but the audit could not say "in sync": it did not complete
(Ctrl-C, Stripe not answering for --patience, the database failing) or some rows could not be
verified (the summary quotes the first error Stripe's calls failed with); 3 also when the
report could not be written (a full disk), whatever was found.`,
		"reconcile audit --table payments --external-id-column stripe_payment_intent_id   # with STRIPE_SECRET_KEY exported",
		"reconcile audit --table payments --money --amount-column amount_cents --amount-refunded-column refunded_cents",
		"reconcile audit --object subscription --table subscriptions --key-columns created_at,id --state-column stripe_status --csv > drift.csv",
		"reconcile audit --table payments --stripe-base-url http://127.0.0.1:12111   # stripe-mock or stripetest")
	var a auditFlags
	s.fs.StringVar(&a.object, "object", "payment_intent", "the Stripe `object` each row refers to: payment_intent, subscription, invoice or checkout_session")
	s.fs.BoolVar(&a.money, "money", false, "with --object payment_intent: compare the money (amount, currency, capture, refunds, disputes), not only the status")
	s.fs.StringVar(&a.statusMap, "status-map", "", "what your `statuses` mean in the policy's words: a payment's pending, paid or failed, such as succeeded=paid,canceled=failed,requires_payment_method=pending; the other objects' statuses as Stripe names them, such as ACTIVE=active,cancelled=canceled")
	s.fs.BoolVar(&a.json, "json", false, "print the summary and findings as JSON")
	s.fs.BoolVar(&a.csv, "csv", false, "print the findings as CSV (the summary goes to standard error)")
	s.fs.DurationVar(&a.grace, "grace", reconcile.DefaultGrace, "rows changed (--updated-at-column) more recently than this are in flight: counted, not asked about")
	s.fs.IntVar(&a.batch, "batch-size", 500, "rows read and asked about per batch")
	s.fs.IntVar(&a.maxFindings, "max-findings", 100_000, "list at most `n` findings (the others are counted by kind): what bounds the audit's memory")
	s.section("Service table flags (as a pgstore.Config names them)", func(fs *flag.FlagSet) {
		a.host.registerFlags(fs, "the `table` to audit, such as payments (required)")
		fs.StringVar(&a.schema, "schema", "", "the `schema` of --table (default: the search_path); --table-schema says the same")
		fs.StringVar(&a.url, "database-url", "", "the `URL` of the database; overrides $DATABASE_URL (which is safer: other users can see a command line)")
	})
	s.section("Compared columns (typed rows; a column named - is not read and taken as empty)", func(fs *flag.FlagSet) {
		a.cols = registerColumnFlags(fs)
	})
	s.section("Stripe flags", func(fs *flag.FlagSet) {
		fs.StringVar(&a.account, "stripe-account", "", "the connected `account` (acct_...) to read, sent as the Stripe-Account header (default: your own)")
		fs.StringVar(&a.baseURL, "stripe-base-url", "", "the API's base `URL`, for stripe-mock, stripetest or a proxy (default https://api.stripe.com)")
		fs.Float64Var(&a.rate, "rate", 10, "at most this many Stripe `calls` a second; halved on a 429, grown back slowly (Stripe allows 100/s in live mode, shared with your service)")
		fs.DurationVar(&a.patience, "patience", 2*time.Minute, "how long to retry while Stripe answers no call (rate limited or down) before giving up")
	})
	for _, k := range keyFlags {
		for _, arg := range args {
			if arg == "--" {
				break
			}
			name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
			if strings.HasPrefix(arg, "-") && name == k {
				return e.usageError(fmt.Sprintf("audit: --%s: the Stripe key is read from $%s only; a flag would land in your shell history and in the process list", k, keyEnv), auditHelp)
			}
		}
	}
	pos, code, done := s.parse(e, args)
	if done {
		return code
	}
	a.set = map[string]bool{}
	s.fs.Visit(func(f *flag.Flag) { a.set[f.Name] = true })
	if len(pos) > 0 {
		return e.usageError(fmt.Sprintf("audit: unexpected argument %q", pos[0]), auditHelp)
	}
	if msg := a.check(); msg != "" {
		return e.usageError("audit: "+msg, auditHelp)
	}
	// A key read from a file keeps its newline, one from a .env written on Windows its CR: the
	// whitespace around it is not the key's (Go would refuse it in a header, and every call fail).
	key := strings.TrimSpace(e.getenv(keyEnv))
	if key == "" {
		return e.usageError(fmt.Sprintf("audit: $%s is not set: export the key (a restricted key with read access is enough); it is never taken from a flag", keyEnv), auditHelp)
	}
	if strings.ContainsFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return e.usageError(fmt.Sprintf("audit: $%s holds a space or a control character inside the key: a Stripe key has none (was it pasted with a line break?)", keyEnv), auditHelp)
	}
	if (strings.HasPrefix(key, "sk_live_") || strings.HasPrefix(key, "rk_live_")) && !privateURL(a.baseURL) {
		return e.usageError(fmt.Sprintf("audit: --stripe-base-url %s is plain http to another machine: the live key would cross the network readable; use https, or a test key",
			printable(displayURL(a.baseURL))), auditHelp)
	}
	// From here on nothing the audit prints may hold the key, whatever its shape, nor the
	// password of --stripe-base-url.
	e = e.hiding(secret{value: key, as: "[redacted key]"}, secret{value: urlPassword(a.baseURL), as: "[redacted password]"})
	switch a.object {
	case "payment_intent":
		if a.money {
			return auditObject(ctx, e, &a, key, stripeadapter.PaymentIntents(), paymentColumns, moneyGateway, moneyPolicy, stripepolicy.PaymentState)
		}
		return auditObject(ctx, e, &a, key, stripeadapter.PaymentIntents(), nil, objectGateway[*stripe.PaymentIntent], statusPolicy,
			stripepolicy.PaymentIntentState)
	case "subscription":
		return auditObject(ctx, e, &a, key, stripeadapter.Subscriptions(), subscriptionColumns, objectGateway[*stripe.Subscription], subscriptionPolicy, nil)
	case "invoice":
		return auditObject(ctx, e, &a, key, stripeadapter.Invoices(), invoiceColumns, objectGateway[*stripe.Invoice], invoicePolicy, nil)
	default: // checkout_session; check refused the others
		return auditObject(ctx, e, &a, key, stripeadapter.CheckoutSessions(), checkoutColumns, objectGateway[*stripe.CheckoutSession], checkoutPolicy, nil)
	}
}

// check reports what is wrong with the command line, or "".
func (a *auditFlags) check() string {
	objects := []string{"payment_intent", "subscription", "invoice", "checkout_session"}
	switch {
	case a.host.table == "":
		return "--table is required: the table to audit"
	case strings.Count(a.host.table, ".") == 1 && a.schema == "" && a.host.tableSchema == "":
		// A schema-qualified name, which pgstore would refuse as not an identifier.
		schema, table, _ := strings.Cut(a.host.table, ".")
		return fmt.Sprintf("--table %s: give the schema apart: --schema %s --table %s", printable(a.host.table), printable(schema), printable(table))
	case !slices.Contains(objects, a.object):
		return fmt.Sprintf("--object %q: want one of %s", a.object, strings.Join(objects, ", "))
	case a.money && a.object == "subscription":
		return "--money: a subscription has no amounts to compare (its status, cancel_at_period_end and paid-through time are)"
	case a.rate <= 0 || a.rate > 100 || a.rate != a.rate:
		return fmt.Sprintf("--rate %g: want more than 0 and at most 100 calls a second (Stripe's live-mode limit; keep well under it)", a.rate)
	case a.batch <= 0 || a.batch > 10000:
		return fmt.Sprintf("--batch-size %d: want 1 to 10000", a.batch)
	case a.maxFindings < 0:
		return "--max-findings must not be negative"
	case a.grace < 0:
		return "--grace must not be negative"
	case a.patience <= 0:
		return "--patience must be positive"
	case a.json && a.csv:
		return "--json and --csv: choose one"
	case a.schema != "" && a.host.tableSchema != "" && a.schema != a.host.tableSchema:
		return "--schema and --table-schema name different schemas; give one"
	case a.account != "" && !strings.HasPrefix(a.account, "acct_"):
		return fmt.Sprintf("--stripe-account %q: a connected account's id starts with acct_", a.account)
	case a.baseURL != "" && !apiURL(a.baseURL):
		// Not quoted: it may hold a password, and a URL that does not parse cannot be redacted.
		return "--stripe-base-url: want the http or https URL of an API, such as http://127.0.0.1:12111 (stripe-mock)"
	}
	if a.host.tableSchema == "" {
		a.host.tableSchema = a.schema
	}
	if a.statusMap != "" {
		targets := statusTargets[a.object]
		a.statuses = map[string]string{}
		for _, pair := range splitList(a.statusMap) {
			ours, theirs, ok := strings.Cut(pair, "=")
			ours, theirs = strings.TrimSpace(ours), strings.TrimSpace(theirs)
			switch {
			case !ok || ours == "":
				return fmt.Sprintf("--status-map: %q is not yours=policy's, such as succeeded=paid", pair)
			case !slices.Contains(targets, theirs):
				return fmt.Sprintf("--status-map: %q: the statuses of --object %s are %s", pair, a.object, strings.Join(targets, ", "))
			case a.statuses[ours] != "":
				return fmt.Sprintf("--status-map: %q is mapped twice", ours)
			}
			a.statuses[ours] = theirs
		}
	}
	for name, objs := range columnObjects {
		if a.set[name] && !slices.Contains(objs, a.objectKind()) {
			return fmt.Sprintf("--%s is read for %s, not for --object %s%s", name, strings.Join(objs, ", "), a.object, moneyHint(objs))
		}
	}
	return ""
}

// statusTargets are the statuses --status-map may map to, by --object: the words each policy
// reads --state-column in.
var statusTargets = map[string][]string{
	"payment_intent":   {stripepolicy.LocalPending, stripepolicy.LocalPaid, stripepolicy.LocalFailed},
	"subscription":     {"incomplete", "incomplete_expired", "trialing", "active", "past_due", "canceled", "unpaid", "paused"},
	"invoice":          {"draft", "open", "paid", "uncollectible", "void"},
	"checkout_session": {"open", "complete", "expired"},
}

// objectKind is the object, with "payment_intent --money" apart: its columns differ.
func (a *auditFlags) objectKind() string {
	if a.object == "payment_intent" && a.money {
		return "payment_intent --money"
	}
	return a.object
}

func moneyHint(objs []string) string {
	if slices.Contains(objs, "payment_intent --money") {
		return " (add --money to compare a payment's money)"
	}
	return ""
}

// storeConfig is the pgstore configuration of the audited table, columns renamed as the flags
// say (nil columns: a Store[string] over --state-column).
func (a *auditFlags) storeConfig(columns map[string]string) pgstore.Config {
	cfg := a.host.config(pgstore.Tables{})
	cfg.Columns = columns
	return cfg
}

// objectGateway is the gateway of obj read with cfg, for the policies that compare the object
// itself.
func objectGateway[T any](cfg stripeadapter.GatewayConfig, obj stripeadapter.Object[T]) (reconcile.Gateway[T], error) {
	return stripeadapter.NewObjectGateway(cfg, obj)
}

// moneyGateway reads Payments: each PaymentIntent with its latest charge, and the disputes of
// a disputed one.
func moneyGateway(cfg stripeadapter.GatewayConfig, obj stripeadapter.Object[*stripe.PaymentIntent]) (reconcile.Gateway[*stripepolicy.Payment], error) {
	intents, err := stripeadapter.NewObjectGateway(cfg, obj)
	if err != nil {
		return nil, err
	}
	return stripemoney.New(intents, stripemoney.Config{})
}

// auditObject audits the table as rows of L against Stripe objects read as E through obj.
// columns gives the typed row's columns (nil for a Store[string]); policy makes the classifier.
func auditObject[L, E, T any](ctx context.Context, e *env, a *auditFlags, key string, obj stripeadapter.Object[T],
	columns func(*auditFlags) map[string]string,
	gateway func(stripeadapter.GatewayConfig, stripeadapter.Object[T]) (reconcile.Gateway[E], error),
	policy func(*auditFlags) reconcile.Classifier[L, E], extState func(E) string) int {
	var cols map[string]string
	if columns != nil {
		cols = columns(a)
	}
	cfg := a.storeConfig(cols)
	// NewOf does not touch the database: a typed nil pool checks the flags before connecting.
	if _, err := pgstore.NewOf[L]((*pgxpool.Pool)(nil), cfg); err != nil {
		return e.usageError("audit: "+err.Error(), auditHelp)
	}
	gw, err := gateway(stripeadapter.GatewayConfig{Key: key, BaseURL: a.baseURL, StripeAccount: a.account}, obj)
	if err != nil {
		return e.usageError("audit: "+err.Error(), auditHelp)
	}
	limiter, err := reconcile.NewAdaptiveLimiter(reconcile.AdaptiveOptions{Rate: rate.Limit(a.rate), Burst: 1})
	if err != nil {
		return e.usageError("audit: --rate: "+err.Error(), auditHelp)
	}
	url, source := a.url, "--database-url"
	if url == "" {
		url, source = e.getenv("DATABASE_URL"), "$DATABASE_URL"
	}
	if url == "" {
		url, source = defaultURL, pgenv.DefaultSource
	}
	e.printErr("%s", a.intro(cfg, cols, url, obj.Name))
	pool, err := pgenv.ConnectReadOnly(ctx, url, source)
	if err != nil {
		if ctx.Err() != nil {
			return e.failed(err)
		}
		e.printErr("reconcile: audit: %s\n%s", err.Error(), connectAdvice)
		return exitError
	}
	defer pool.Close()
	store, err := pgstore.NewOf[L](pool, cfg)
	if err != nil {
		return e.failed(err)
	}
	// The table and columns, checked against the catalog with a read of one row: a wrong name
	// is said before the audit starts rather than as its failure.
	if _, err := store.ReadFrom(ctx, reconcile.ReadRequest{Limit: 1}, reconcile.Cursor{}); err != nil {
		return e.failed(err)
	}
	t := newTally(time.Now(), a.maxFindings)
	t.rowSecurity = rowSecurity(ctx, pool, cfg)
	src := &auditStore[L]{reader: store, tally: t}
	failures := &firstFailure{}
	// Findings record the table's own statuses: --status-map is the audit's reading of them,
	// not what the service wrote. The policy without the map names them.
	var localState func(L) string
	if len(a.statuses) > 0 {
		raw := *a
		raw.statuses = nil
		if n, ok := policy(&raw).(reconcile.StateNamer[L, E]); ok {
			localState = n.LocalState
		}
	}
	r, err := reconcile.New(reconcile.Config[L, E]{Job: auditJob, Source: src, Sink: src, Gateway: gw, Classifier: policy(a),
		LocalState: localState, ExternalState: extState, BatchSize: a.batch, Grace: graceOf(a.grace), Limiter: limiter,
		Logger: slog.New(failures)})
	if err != nil {
		return e.failed(err)
	}
	tty, width := terminal(e.stderr)
	p := newProgress(e.stderr, tty, width, t, estimateRows(ctx, pool, cfg))
	a.sweep(ctx, r.RunBatch, t, p)
	p.done()
	t.firstFailure = failures.String()
	return e.report(a, t, obj.Name)
}

// graceOf is --grace as reconcile.Config.Grace takes it: zero there means the default, and
// negative no grace.
func graceOf(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// sweep runs batches until the table is read, ctx is done, a batch fails or Stripe has
// answered nothing for --patience; t says which.
func (a *auditFlags) sweep(ctx context.Context, runBatch func(context.Context) (reconcile.Report, error), t *tally, p *progress) {
	var stalled time.Time
	backoff := 250 * time.Millisecond
	for {
		rep, err := runBatch(ctx)
		t.calls += rep.GatewayCalls
		switch {
		case ctx.Err() != nil:
			t.interrupted = true
			return
		case err != nil:
			t.failure = err
			return
		case rep.Wrapped:
			t.complete = true
			p.update()
			return
		}
		p.update()
		if !rep.RateLimited && !rep.Unavailable && !rep.Deferred {
			stalled, backoff = time.Time{}, 250*time.Millisecond
			continue
		}
		if rep.RateLimited {
			t.rateLimited++
		}
		now := time.Now()
		if rep.Scanned > 0 {
			stalled = time.Time{}
		} else if stalled.IsZero() {
			stalled = now
		} else if now.Sub(stalled) >= a.patience {
			why := "rate limited every call"
			if rep.Unavailable {
				why = "answered no call"
			}
			t.gaveUp = fmt.Sprintf("Stripe %s for %s (--patience)", why, a.patience.Round(time.Second))
			return
		}
		// --patience bounds each wait too: a Retry-After of an hour (a proxy's, or Stripe's
		// adapter's cap) is not slept through before giving up after two minutes.
		limit := a.patience
		if !stalled.IsZero() {
			limit = max(stalled.Add(a.patience).Sub(now), 0)
		}
		wait := min(max(rep.RetryAfter, backoff), limit)
		backoff = min(backoff*2, 10*time.Second)
		select {
		case <-ctx.Done():
			t.interrupted = true
			return
		case <-time.After(wait):
		}
	}
}

// intro is what the audit says first: what it reads, and that it writes nothing.
func (a *auditFlags) intro(cfg pgstore.Config, cols map[string]string, url, object string) string {
	table := displayTable(cfg)
	def := func(v, d string) string { return orDash(cmpOr(v, d)) }
	var b strings.Builder
	fmt.Fprintf(&b, "reconcile audit: reading table %s at %s, key (%s), external id %s",
		printable(table), printable(pgenv.Redact(url)), printable(strings.Join(cmpOrList(cfg.KeyColumns, []string{"id"}), ", ")),
		printable(def(cfg.ExternalIDColumn, "external_id")))
	if cols == nil {
		fmt.Fprintf(&b, ", state %s", printable(def(cfg.StateColumn, "status")))
	} else {
		var read, unread []string
		for _, f := range columnFields(a.objectKind()) {
			c := cols[f.field]
			if c == "-" {
				unread = append(unread, f.flag)
			} else {
				read = append(read, f.field+"="+c)
			}
		}
		fmt.Fprintf(&b, ", columns %s", printable(strings.Join(read, " ")))
		if len(unread) > 0 {
			fmt.Fprintf(&b, " (not read, taken as empty: %s)", printable(strings.Join(unread, ", ")))
		}
	}
	if a.statusMap != "" {
		fmt.Fprintf(&b, ", statuses read as %s", printable(a.statusMap))
	}
	b.WriteString(".\n")
	fmt.Fprintf(&b, "Comparing each row with its Stripe %s (%s), at most %g calls/s", object, a.policyName(), a.rate)
	if a.account != "" {
		fmt.Fprintf(&b, ", connected account %s", printable(a.account))
	}
	if a.baseURL != "" {
		fmt.Fprintf(&b, ", at %s", printable(displayURL(a.baseURL)))
	}
	b.WriteString(".\nIt writes nothing: every database transaction is read-only (default_transaction_read_only) and Stripe is only read; findings are kept in memory and printed.\n")
	return b.String()
}

// apiURL reports whether s can be the base URL of an API: http or https, a host, a port
// that is a port, and no control character (a typo such as a stray dot after the port would
// otherwise leave every row unverifiable after --patience).
func apiURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Opaque != "" ||
		strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return false
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		return err == nil && n > 0 && n < 1<<16
	}
	return true
}

// privateURL reports whether a request to the base URL s (checked by apiURL; "" is Stripe's)
// keeps the key private: https, or http to this machine.
func privateURL(s string) bool {
	u, err := url.Parse(s)
	if s == "" || err == nil && u.Scheme == "https" {
		return true
	}
	if err != nil {
		return false
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// displayURL is the base URL as the audit shows it: its password, if any, as xxxxx.
func displayURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "(a URL that does not parse)"
}

// urlPassword is the password in the base URL s, for the writers to hide (displayURL and
// net/http's errors show it as xxxxx already; this catches anything else quoting the URL).
// A password of fewer than 6 characters is not returned: replacing it wherever it appears
// would mangle the report, and it is no secret worth the name.
func urlPassword(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if p, _ := u.User.Password(); len(p) >= 6 {
			return p
		}
	}
	return ""
}

// displayTable is the audited table as the report names it: schema.table, unquoted.
func displayTable(cfg pgstore.Config) string {
	if cfg.Schema != "" {
		return cfg.Schema + "." + cfg.Table
	}
	return cfg.Table
}

// policyName names the policy that judges the rows, for the report.
func (a *auditFlags) policyName() string {
	switch a.objectKind() {
	case "payment_intent":
		return "the status policy: stripepolicy.PaymentIntentPolicy"
	case kindMoney:
		return "the money policy: stripepolicy.PaymentPolicy"
	case kindSub:
		return "stripepolicy.SubscriptionPolicy"
	case kindInvoice:
		return "stripepolicy.InvoicePolicy"
	}
	return "stripepolicy.CheckoutPolicy"
}

func cmpOr(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

func cmpOrList(v, d []string) []string {
	if len(v) == 0 {
		return d
	}
	return v
}

// rowSecurity reports whether the table's row-level security binds the audit's role: then
// the reads return only the rows its policies let the role see, and nothing tells how many
// they hide. false when it cannot be told.
func rowSecurity(ctx context.Context, pool *pgxpool.Pool, cfg pgstore.Config) bool {
	var on bool
	err := pool.QueryRow(ctx, "SELECT coalesce(row_security_active(to_regclass($1)), false)", quotedTable(cfg)).Scan(&on)
	return err == nil && on
}

// estimateRows guesses the table's rows for the ETA, cheaply: the planner's estimate when the
// table was analyzed, else a count bounded to two seconds; 0 when neither is known.
func estimateRows(ctx context.Context, pool *pgxpool.Pool, cfg pgstore.Config) int64 {
	name := quotedTable(cfg)
	var n float64
	if err := pool.QueryRow(ctx, "SELECT coalesce((SELECT reltuples FROM pg_class WHERE oid = to_regclass($1)), -1)", name).Scan(&n); err == nil && n > 0 {
		return int64(n)
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var c int64
	if err := pool.QueryRow(cctx, "SELECT count(*) FROM "+name).Scan(&c); err != nil {
		return 0
	}
	return c
}
