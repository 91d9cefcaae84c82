// Package console is the review console: web pages, embedded in the host's own HTTP server,
// where people look at the reconciler's health and resolve the findings it could not repair
// itself (NeedsReview). It is standard library only (net/http, html/template); the pages have
// no JavaScript.
//
// # Mounting
//
// New returns a *Console, an http.Handler. Mount it under any path:
//
//	// The process's one Monitor: the health endpoint and the metrics take it too.
//	monitor, err := reconcile.NewMonitor(reconcile.MonitorConfig{Jobs: []reconcile.MonitorJob{
//		{Name: "payments-hot", Status: hot, Policy: reconcile.HealthPolicy{LagSLO: 24 * time.Hour}},
//		{Name: "payments-cold", Status: cold}, // each job through its own store
//	}})
//	if err != nil { ... }
//	c, err := console.New(console.Config{
//		Store:        hot, // a *pgstore.Store[L]: every job's findings, in the shared tables
//		Monitor:      monitor,
//		Authenticate: host.ReviewerOf, // func(*http.Request) (string, error)
//	})
//	if err != nil { ... }
//	mux.Handle("/review/", http.StripPrefix("/review", c))
//
// or, without StripPrefix, mux.Handle("/review/", c) with Config.BasePath "/review". Every link
// is relative, so both work under any prefix, behind a proxy too. A path that is not clean
// (/review/findings//1, /review/findings/./1) is redirected, like http.ServeMux does, to the
// clean one under the same prefix (/review/findings/1): the prefix is BasePath and what the
// host stripped, read from the path the request came with. The routes, under the prefix:
//
//	GET  /                       overview
//	GET  /findings               findings list: ?q= &job= &kind= &record= &state=open|resolved|all &age=24h
//	                             &sort=detected|-detected|age|-age &after=<id>
//	GET  /findings.csv           the same filter's findings as CSV
//	GET  /findings/{id}          one finding with its history
//	POST /findings/{id}/resolve  resolution, note
//	POST /findings/{id}/reopen   note
//	POST /resolve                id (repeated), resolution, note: the findings selected on the list
//	POST /timezone               tz: the reviewer's time zone, kept in a cookie
//
// A write to a finding answers 303 back to the finding's page; a bulk resolution answers with
// a page of what became of each finding. Errors are pages of their own: 400 for a bad
// parameter or form (control characters in a filter or a note included, or a job filter naming
// a job the console is not for), 401 or 403 when authentication refuses, 403 for a cross-origin
// post or a bad form token, 404 for an unknown finding or page (or a finding of a job the
// console is not for), 405 for a GET on a write route, 409 when
// the finding was resolved (or reopened) already or its drift was found again, 500 when the
// store fails. They never show an internal error's text: that goes to Config.Logger.
//
// The console is for its jobs only (Config.Jobs, else the Monitor's): the list, the finding
// pages and the writes see no other job's findings, even when they share the tables.
//
// Config.Store is the core's reconcile.Reviewer, which pgstore.Store[L] and memstore.Store[K, L]
// implement: the findings, their history (pgstore's append-only audit table and its repair
// commands' states), ResolveFinding and ReopenFinding, and each finding's external id (the
// PaymentIntent), to link to it. Config.Monitor reads each job's Status through the store over
// that job's rows (reconcile.MonitorJob.Status, a reconcile.StatusReader). Both interfaces are
// small so that a host can wrap them, for instance to resolve through its own canonical writer
// in the same transaction as a business change, or fake them in tests.
//
// # Authentication
//
// Authentication and authorization are the host's: Config.Authenticate returns the actor for a
// request (the reviewer's login) or an error, and New refuses a nil one. Every request goes
// through it, reads included, since the pages show payments. A refused request gets 403, or 401
// with Config.Challenge as WWW-Authenticate (say `Basic realm="review"`) for a browser to ask
// for credentials. The actor recorded in a resolution or reopening is the one Authenticate
// returned, never a form field. Cross-origin requests, refused before authentication, are
// logged at Debug, with the values the client sent clipped: anyone can send them.
//
// A refused sign-in is logged at Warn as "console: sign-in refused", with the remote address
// (r.RemoteAddr: behind a proxy, the proxy's, unless the host sets it from a header it trusts),
// the method, the path and Authenticate's error, from whose text every value the request sent
// (the token, a password, a cookie) is taken out. Only a request without an Authorization
// header while Config.Challenge is set stays at Debug: a browser's first request under basic
// auth is always refused once. The console does not limit sign-in attempts: the host must
// rate-limit its authenticator (per client and per account, or lock out after repeated
// failures), or a token or password can be guessed at the speed of the network.
//
// # CSRF
//
// Writes are POST only, and two independent checks guard them:
//
//   - http.CrossOriginProtection (Go 1.25 and later) refuses a state-changing request that a
//     browser marks as cross-site (Sec-Fetch-Site), or whose Origin is not the Host. It needs
//     no state and stops the classic forged form post from another site. But it lets through
//     requests that carry neither header (old browsers, some proxies and non-browser clients),
//     and it trusts the Host header, which a misconfigured proxy may rewrite.
//   - So every form also carries a token: HMAC-SHA256 over the actor and the time it was
//     issued, under Config.CSRFKey, valid for 12 hours. A page from another site cannot read
//     it, and it is bound to the authenticated actor, so one person's token is refused for
//     another. It needs no session store; a random key is made when Config.CSRFKey is empty,
//     which is fine for one process (a restart only expires the open forms) but replicas behind
//     one load balancer must share a key.
//
// The token travels in the form body only: a token in the query string is ignored. Pages are
// served with a Content-Security-Policy that allows no script and only the console's own inline
// style (by hash), form-action 'self', frame-ancestors 'none' (no clickjacking), no-store
// caching, and no Referer to the external links.
//
// # What is shown
//
// The overview shows, per job of Config.Monitor: OK or FAILING against the job's HealthPolicy
// (reconcile.MonitorJob.Policy), as the health endpoint and the metrics judge it, with the reason
// of every failing check (a failed batch or lane step by a short classified reason — database
// error, external system unavailable, rate limited, authentication rejected by the external system,
// invalid request, cancelled/timeout or other error — never by the failure's text, which may hold
// SQL, host names or a credential a broken server echoed back), the reconciliation lag, the last
// completed cycle, the current cycle's age, the last batch's unverifiable ratio, the stale
// findings, and the open findings by kind, each a link to the list filtered by job and kind.
// Statuses are read through the Monitor, which keeps them for its TTL (30 s) because pgstore's
// Status may scan the job's table and bounds each read by its Timeout; a write through the console
// drops what it keeps (Monitor.Forget). A job whose status cannot be read is shown as STATUS
// UNAVAILABLE, never as OK.
//
// Coverage: where a job's store also reads its coverage (a reconcile.CoverageReader, as pgstore and
// memstore are; reconcile.MonitorJob.Coverage names another), the overview charts how long the
// job's rows have gone unverified: a bar a bucket (≤1h, 1h–6h, 6h–24h, 24h–3d, 3d–7d, >7d for a 24h
// SLO: two round spans below the job's LagSLO, the SLO, two above), the SLO a dashed line labelled
// "SLO 24h", the buckets past it hatched and outlined under a "past the SLO" label, each bar with
// its count; and beside it the job's open findings a day over the last 14 days, each day's value
// written over its point. Both are inline SVG (no script, no style attribute: the
// Content-Security-Policy holds), each an image labelled with its job and described by a sentence
// of what it shows, with the same figures as a table under "The coverage as a table". A store that
// cannot tell without a full scan says why (Coverage.Unknown), and the sentence is shown instead of
// the bars; counts estimated from the sweep's batch records (Coverage.Estimated) are said to be so,
// since a row may then show older than it is. A job whose store reads no coverage has no chart, and
// a failed read shows a line saying so (the error is logged) without touching the job's health.
// Coverage is read like the status, and with it, through the Monitor (Monitor.Coverage): once per
// job per TTL at most, within its Timeout, and forgotten after a write through the console.
//
// The overview's counts link to the findings behind them: each kind's count, the job's open
// findings, and its stale findings (open for more than the threshold the store's status says,
// reconcile.Status.StaleAfter: pgstore.Config.StaleAfter, 24 hours by default; the failing
// stale_findings reason links there too).
//
// The findings list filters by job, kind (a pick list of the kinds the console knows, each
// with its one-line meaning), record, state (open by default) and age (detected more than 1
// hour, 1, 3 or 7 days ago), and says how many findings match (when the store is a
// reconcile.FindingCounter, as pgstore and memstore are). It is sorted by detection, oldest
// first, or newest first (sort=-detected; by age, the same orders the other way round: the
// Detected and Age column headers turn it), Config.PageSize (50) a page, by keyset: the
// "Next page" link continues after the last id shown, in either order. Each row shows the
// finding, its job, record, kind (marked "money" when it involves money), local and external
// state, when it was detected, its age, a link to the external object made by
// Config.ExternalURL (the default, StripeDashboardURL(false), links PaymentIntents (pi_...) to
// the Stripe dashboard and gives other findings no link), its state, and when it was resolved.
//
// Kinds: the console knows the engine's own kinds (CoreKinds), the payout tie-out's
// (tieout.Kinds()) and those of Config.Kinds, which a host fills from its policies
// (stripepolicy.Kinds(), a []reconcile.KindInfo). A
// kind's meaning is shown in the pick list, the list, the overview and the finding's page. A
// finding of a kind marked Money cannot be resolved without a note: the server refuses it
// (400, naming the kind), whatever the form sent.
//
// Bulk resolution: the list's open findings have boxes; the selected ones (at most
// MaxPageSize) are resolved with one resolution and one note, each through the store's
// ResolveFinding on its own, so each has its own event in its history. The form carries the
// token like every write, and everything is checked before anything changes: a finding of
// another job, or one of a money kind without a note, refuses the whole request. A finding
// resolved meanwhile is reported and left as it was.
//
// Export: GET /findings.csv streams the list's filter's findings as CSV (every page, oldest
// first, read from the store MaxPageSize at a time, at most MaxExportRows: a larger filter is
// refused when the store counts), with the kind's meaning, the fields that differ, and times
// in RFC 3339 in the reviewer's zone. Every text is redacted as on the pages, and a cell that
// starts with = + - @ (or a tab or carriage return) is prefixed with ' so that a spreadsheet
// shows it as text rather than running it as a formula.
//
// Time zones: times are shown in Config.TimeZone (UTC by default) until the reviewer picks one
// of Config.TimeZones (DefaultTimeZones) at the foot of any page; the choice is a cookie
// (HttpOnly, SameSite=Lax, scoped to the console's path) set by a POST with the form token,
// and every page names the zone in its header. No script is involved.
//
// The search box (?q=) sets reconcile.FindingQuery.Search: it finds the findings whose external
// id (pi_...) or record id is the term, or whose row holds it in one of the store's search
// columns, such as an order id (pgstore's Config.SearchColumns); whole values, not parts. The
// term is trimmed, at most 200 bytes of text without control characters, refused when it looks
// like a secret key, shown back escaped, and kept by the pages' links along with the other
// filters; the store binds it as a query parameter. A finding's page links to every finding of
// its external object, a search by its id.
//
// A finding that records the fields that differ (reconcile.Finding.Diffs: an amount, a
// currency, a refunded amount) shows them in a small table of the field, the local value and
// the external one, on its page and in the list, as the classifier formatted them (amounts by
// reconcile.FormatAmount, "JPY 1,000" and "KWD 1.500" in their own decimals); the console
// formats no amount of a finding itself.
//
// Payouts: when Config.Store is also a reconcile.GroupReader (pgstore and memstore are), the
// console has payouts pages, linked from the header, over the records a tie-out step commits
// with its findings (package tieout; reconcile.GroupRecord). GET /payouts lists them newest
// first, Config.PageSize a page by keyset (the "Next page" link continues below the last
// record shown), filtered by job (Config.Jobs), account, status and state (not tied out yet;
// not holding or with findings; held without findings), with how many the jobs recorded, how
// many are not tied out yet and how many do not hold. Each row shows the payout, its job and
// account, its status, what it paid, what its lines add up to and the difference (lines minus
// paid), all by reconcile.FormatAmount, its lines, unmatched lines (findings about lines) and
// findings, its state and when it was tied out. GET /payouts/{seq} shows one payout and its
// open findings (those of the records its tie-out found drift in: its lines' and its own),
// each linked to its finding's page, where it is resolved as any other. GET /payouts.csv
// streams the filter's payouts for finance, newest first, at most MaxExportRows, with the
// amounts as money and in minor units (paid_minor, expected_minor: numbers to sum), each text
// redacted and formula-safe as in the findings export. The overview counts the payouts not
// tied out yet and those not holding, each a link to them. A store that is not a GroupReader
// has no payouts pages (404) and no link to them.
//
// A finding's page shows everything the finding records, its kind's meaning, its history
// oldest first (detection, resolutions and reopenings with who, when and why, and its repair
// command's fate: its status and failed attempts, never its last error, which may name hosts
// or hold SQL; "who" is "job <name>" for a detection, the person for a resolution or
// reopening, "repair command <name>" for a command, "reconciler (repair)" when a repair
// closed it), and a
// form: resolve, with one of Config.Resolutions (fixed, accepted, false_positive by default)
// and a note, while it is open; reopen, with a note, once it is resolved.
//
// Everything from the database (record ids, states, diffs, details, notes, actors) is escaped by
// html/template, and anything in it that looks like a Stripe key (sk_live_..., sk_test_...,
// rk_..., whsec_...) is replaced by "[redacted key]": a finding's detail is a gateway's text,
// meant to be free of secrets, and the console does not rely on it. URLs with unsafe schemes
// (javascript:) are replaced, whatever Config.ExternalURL returns. No credentials or
// connection details are ever put on a page.
package console
