package console

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/reconcilekit/reconcile"
)

// Defaults of Config.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// DefaultResolutions are offered in the resolve form when Config.Resolutions is empty: what a
// person may decide. reconcile.ResolutionRepaired is left to repair commands.
var DefaultResolutions = []string{reconcile.ResolutionFixed, reconcile.ResolutionAccepted, reconcile.ResolutionFalsePositive}

// Config configures a Console. Store and Authenticate are required; every other field's zero
// value works.
type Config struct {
	// Store lists, reads, resolves and reopens findings: a *pgstore.Store[L] (any of those over
	// the shared reconciler tables: it reads every job's findings, and the external ids of
	// its own table's), or the host's wrapper (to resolve through its own canonical writer,
	// say). The console tells a missing finding (404) and a change that changed nothing (409)
	// by reconcile.ErrFindingNotFound, ErrAlreadyResolved, ErrAlreadyOpen and ErrFoundAgain.
	// Required.
	Store reconcile.Reviewer
	// Authenticate returns the actor making the request (a login, recorded as the author of
	// resolutions and reopenings), or an error to refuse it. Every request goes through it,
	// reads included. It is the host's: a session cookie, a header set by an authenticating
	// proxy, basic auth. An empty actor counts as a refusal, and so does one with control
	// characters or invalid UTF-8, which could not be recorded. The console does not limit
	// attempts: Authenticate must rate-limit them. A refusal is logged at Warn (see the
	// package doc). Required.
	Authenticate func(r *http.Request) (actor string, err error)
	// Challenge, when set, is sent as WWW-Authenticate with a 401 to a refused request, such
	// as `Basic realm="reconcile"` for a browser to ask for a password. Empty means a refused
	// request gets a 403.
	Challenge string
	// BasePath is the path the console is mounted under when the host does not strip it
	// (mux.Handle("/review/", h) with BasePath "/review"). Empty means the request path is
	// the console's own (the host mounts it with http.StripPrefix, or at the root). Links
	// are relative, so both work under any prefix.
	BasePath string

	// Monitor reads and judges the jobs the overview shows, in its order, each by its own
	// policy, with the coverage chart of each job whose store reads one (the Monitor's
	// cache and timeout bound both): give it the Monitor the health endpoint and the metrics
	// use. The console tells it of every resolution and reopening (Monitor.Forget), so that
	// the overview, the health answer and the gauges show them at once. Nil means an overview
	// without jobs.
	Monitor *reconcile.Monitor
	// Jobs are the jobs whose findings the console is for: the findings list, the finding
	// pages and the writes are limited to their findings (another job's finding is a 404, a
	// filter by another job a 400). Empty means the Monitor's jobs; with neither, findings are
	// not limited by job. A FanOut's accounts' jobs (payments@acct_...) are not the Monitor's,
	// which judges the fan-out as one: list them here, and a payout tie-out's job (whose
	// payouts the payouts pages show) unless the Monitor judges it.
	Jobs []string

	// Resolutions are the words a person may resolve a finding with. Empty means
	// DefaultResolutions.
	Resolutions []string
	// Kinds say what the finding kinds of the host's policies mean, for the kind pick list,
	// the list and the finding pages; a finding of a kind marked Money cannot be resolved
	// without a note. The engine's own kinds (CoreKinds) are known without them; an entry
	// here redefines one. A host on Stripe passes stripepolicy.Kinds().
	Kinds []reconcile.KindInfo
	// TimeZone is the zone times are shown in until a reviewer chooses one (an IANA name such
	// as "Europe/Berlin"). Empty means UTC.
	TimeZone string
	// TimeZones are the zones a reviewer may choose from; the choice is kept in a cookie.
	// Empty means DefaultTimeZones (those the system's zone database has).
	TimeZones []string
	// ExternalURL links a finding to its external object; an empty string means no link.
	// html/template drops URLs with unsafe schemes (javascript:) whatever it returns. Nil
	// means StripeDashboardURL(false).
	ExternalURL func(reconcile.Finding) string
	// PageSize is the number of findings per page. Zero means DefaultPageSize; at most
	// MaxPageSize.
	PageSize int

	// CSRFKey signs the forms' anti-forgery tokens; at least 32 bytes. Empty means a random
	// key made by New: tokens then die with the process, and replicas behind one load
	// balancer must share a key instead.
	CSRFKey []byte
	// TrustedOrigins may post cross-origin (http.CrossOriginProtection.AddTrustedOrigin), such
	// as "https://admin.example.com" when a proxy changes the Host header.
	TrustedOrigins []string

	// Logger reports store failures and refused requests. Nil means slog.Default().
	Logger *slog.Logger
}

// Console is the review console, an http.Handler. It is safe for concurrent use.
type Console struct {
	store        reconcile.Reviewer
	monitor      *reconcile.Monitor
	authenticate func(*http.Request) (string, error)
	challenge    string
	base         string
	jobs         []string
	resolutions  []string
	kinds        kindTable
	zones        zones
	externalURL  func(reconcile.Finding) string
	pageSize     int
	csrf         *tokens
	origins      *http.CrossOriginProtection
	log          *slog.Logger
	mux          *http.ServeMux
}

// New validates cfg and returns the console.
func New(cfg Config) (*Console, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("console: Config.Store is nil")
	case cfg.Authenticate == nil:
		return nil, errors.New("console: Config.Authenticate is nil; the console needs the host's authentication and will not serve without it")
	case cfg.PageSize < 0 || cfg.PageSize > MaxPageSize:
		return nil, fmt.Errorf("console: Config.PageSize %d is not between 0 and %d", cfg.PageSize, MaxPageSize)
	case len(cfg.CSRFKey) > 0 && len(cfg.CSRFKey) < 32:
		return nil, fmt.Errorf("console: Config.CSRFKey has %d bytes; at least 32 are needed", len(cfg.CSRFKey))
	case strings.ContainsAny(cfg.Challenge, "\r\n"):
		return nil, errors.New("console: Config.Challenge has a line break")
	}
	base, err := basePath(cfg.BasePath)
	if err != nil {
		return nil, err
	}
	c := &Console{
		store: cfg.Store, monitor: cfg.Monitor, authenticate: cfg.Authenticate, challenge: cfg.Challenge, base: base,
		jobs: slices.Clone(cfg.Jobs), resolutions: slices.Clone(cfg.Resolutions), externalURL: cfg.ExternalURL,
		pageSize: cfg.PageSize, log: cfg.Logger,
	}
	if len(c.jobs) == 0 && c.monitor != nil {
		c.jobs = c.monitor.Jobs()
	}
	for _, j := range c.jobs {
		if j == "" {
			return nil, errors.New("console: Config.Jobs has an empty job name")
		}
		if !plainText(j, false) {
			return nil, fmt.Errorf("console: Config.Jobs has the job name %q with control characters or invalid UTF-8", j)
		}
	}
	if len(c.resolutions) == 0 {
		c.resolutions = slices.Clone(DefaultResolutions)
	}
	for _, r := range c.resolutions {
		if r == "" || len(r) > maxField || !plainText(r, false) {
			return nil, fmt.Errorf("console: Config.Resolutions has an empty or overlong word %q", r)
		}
	}
	if c.kinds, err = newKindTable(cfg.Kinds); err != nil {
		return nil, err
	}
	if c.zones, err = newZones(cfg.TimeZone, cfg.TimeZones); err != nil {
		return nil, err
	}
	if c.externalURL == nil {
		c.externalURL = StripeDashboardURL(false)
	}
	if c.pageSize == 0 {
		c.pageSize = DefaultPageSize
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	key := cfg.CSRFKey
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("console: make a CSRF key: %w", err)
		}
	}
	c.csrf = &tokens{key: slices.Clone(key)}
	c.origins = http.NewCrossOriginProtection()
	for _, o := range cfg.TrustedOrigins {
		if err := c.origins.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("console: Config.TrustedOrigins: %w", err)
		}
	}

	c.mux = http.NewServeMux()
	c.mux.HandleFunc("GET /{$}", c.overview)
	c.mux.HandleFunc("GET /findings", c.list)
	c.mux.HandleFunc("GET /findings.csv", c.export)
	c.mux.HandleFunc("/resolve", c.resolveSelected)
	c.mux.HandleFunc("/timezone", c.setZone)
	c.mux.HandleFunc("GET /findings/{id}", c.detail)
	c.mux.HandleFunc("/findings/{id}/resolve", c.resolve)
	c.mux.HandleFunc("/findings/{id}/reopen", c.reopen)
	c.mux.HandleFunc("GET /payouts", c.groups)
	c.mux.HandleFunc("GET /payouts.csv", c.exportGroups)
	c.mux.HandleFunc("GET /payouts/{seq}", c.group)
	c.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, http.StatusNotFound, "Not found", "There is no such page in the review console.")
	})
	return c, nil
}

func basePath(p string) (string, error) {
	if p == "" || p == "/" {
		return "", nil
	}
	u, err := url.Parse(p)
	if err != nil || !strings.HasPrefix(p, "/") || u.Path != p || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("console: Config.BasePath %q is not a plain absolute path such as /review", p)
	}
	return strings.TrimSuffix(p, "/"), nil
}

type actorKey struct{}

// actor returns the actor Authenticate named for the request.
func actor(r *http.Request) string {
	a, _ := r.Context().Value(actorKey{}).(string)
	return a
}

// maxLogValue bounds a value a request sent (its path, its Origin) in a log record.
const maxLogValue = 200

// clip cuts s to at most maxLogValue bytes, on a character boundary, for a log record: a
// request's values are the client's, and before authentication anyone's.
func clip(s string) string {
	if len(s) <= maxLogValue {
		return s
	}
	cut := maxLogValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// ServeHTTP serves the console. Every request is checked, in this order: the path is under
// BasePath, a state-changing request is not cross-origin, and Authenticate accepts it. A
// Console not made by New answers 500.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if c == nil || c.mux == nil {
		http.Error(w, "console not configured", http.StatusInternalServerError)
		return
	}
	if c.base != "" {
		p, rp := strings.TrimPrefix(r.URL.Path, c.base), strings.TrimPrefix(r.URL.RawPath, c.base)
		under := len(p) < len(r.URL.Path) && (p == "" || p[0] == '/') && (r.URL.RawPath == "" || len(rp) < len(r.URL.RawPath))
		if !under {
			c.fail(w, r, http.StatusNotFound, "Not found", "There is no such page in the review console.")
			return
		}
		r2 := new(http.Request)
		*r2 = *r
		r2.URL = new(url.URL)
		*r2.URL = *r.URL
		r2.URL.Path, r2.URL.RawPath = p, rp
		r = r2
	}
	if err := c.origins.Check(r); err != nil {
		// Debug, and clipped: this is before authentication, so anyone can make these.
		c.log.DebugContext(r.Context(), "console: cross-origin request refused",
			slog.String("method", clip(r.Method)), slog.String("path", clip(r.URL.Path)), slog.String("origin", clip(r.Header.Get("Origin"))))
		c.fail(w, r, http.StatusForbidden, "Cross-origin request refused",
			"This request came from another site. Changes can only be made from the console's own pages.")
		return
	}
	who, err := c.authenticate(r)
	if err == nil && !plainText(who, false) {
		// It would be recorded in the audit history, and PostgreSQL refuses a NUL.
		who, err = "", errors.New("the actor has control characters or invalid UTF-8")
	}
	if err != nil || who == "" {
		if err == nil {
			err = errors.New("no actor")
		}
		// A failed sign-in is a Warn, for the host's alerting: the console does not limit
		// guesses, the host's authenticator must. But a browser's first request under basic
		// auth, without credentials, is always refused once: Debug. Either way the error's
		// text is logged without anything the request sent, which may be the token.
		level := slog.LevelWarn
		if c.challenge != "" && r.Header.Get("Authorization") == "" {
			level = slog.LevelDebug
		}
		c.log.LogAttrs(r.Context(), level, "console: sign-in refused",
			slog.String("remote_addr", clip(r.RemoteAddr)), slog.String("method", clip(r.Method)),
			slog.String("path", clip(r.URL.Path)), slog.String("error", clip(scrubSent(err.Error(), r))))
		status := http.StatusForbidden
		if c.challenge != "" {
			w.Header().Set("WWW-Authenticate", c.challenge)
			status = http.StatusUnauthorized
		}
		c.fail(w, r, status, "Not signed in", "The review console needs you to sign in, with an account allowed to review findings.")
		return
	}
	if r.URL.Path == "" {
		// Mounted with http.StripPrefix and asked for the prefix itself: relative links need
		// the trailing slash. RequestURI is the path as the client sent it.
		u, err := url.ParseRequestURI(r.RequestURI)
		if err != nil || u.Path == "" {
			c.fail(w, r, http.StatusNotFound, "Not found", "There is no such page in the review console.")
			return
		}
		u.Path, u.RawPath = u.Path+"/", ""
		w.Header().Set("Location", u.EscapedPath())
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	if clean := cleanPath(r.URL.Path); clean != r.URL.Path {
		// http.ServeMux would redirect to the clean path as the console sees it, without the
		// prefix it is mounted under: outside the console.
		c.redirectClean(w, r, clean)
		return
	}
	c.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), actorKey{}, who)))
}

// cleanPath is p as http.ServeMux cleans it: no . or .. elements, no repeated slashes, a
// trailing slash kept.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// redirectClean redirects r, whose path (the console's, its base stripped) is not clean, to the
// clean path under the same prefix: BasePath, and whatever a host's http.StripPrefix took, which
// is the part of the path the client sent (RequestURI) before the console's. The redirect keeps
// the query, and the method (307), as http.ServeMux's does.
func (c *Console) redirectClean(w http.ResponseWriter, r *http.Request, clean string) {
	prefix := c.base
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil {
		if sent, own := u.EscapedPath(), r.URL.EscapedPath(); strings.HasSuffix(sent, own) {
			prefix = sent[:len(sent)-len(own)]
		}
	}
	loc := prefix + (&url.URL{Path: clean}).EscapedPath()
	if strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, "/\\") {
		// Never a scheme-relative URL, which would lead to another host.
		loc = "/" + strings.TrimLeft(loc, "/\\")
	}
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusTemporaryRedirect)
}

// minSentValue is the length from which a value a request sent is taken out of a log record's
// text by scrubSent: shorter ones are not credentials, and would mangle the text.
const minSentValue = 6

// scrubSent returns text with every value r sent that could be a credential replaced by
// "[redacted]": each header's value and its words (a bearer token, a cookie's value), a
// basic-auth password and its encoding, and the query's values; and with anything that looks
// like a Stripe key redacted. It is for the Authenticate error's text, which a host may have
// made out of the presented token.
func scrubSent(text string, r *http.Request) string {
	var sent []string
	add := func(v string) {
		if len(v) >= minSentValue {
			sent = append(sent, v)
		}
	}
	for _, vs := range r.Header {
		for _, v := range vs {
			add(v)
			for _, f := range strings.FieldsFunc(v, func(c rune) bool { return strings.ContainsRune(" ,;=\t\"", c) }) {
				add(f)
			}
		}
	}
	if user, pass, ok := r.BasicAuth(); ok {
		add(pass)
		add(user + ":" + pass)
	}
	for _, vs := range r.URL.Query() {
		for _, v := range vs {
			add(v)
		}
	}
	// The longest first, so that a value is replaced whole rather than around a part of it.
	slices.SortFunc(sent, func(a, b string) int { return len(b) - len(a) })
	for _, v := range sent {
		text = strings.ReplaceAll(text, v, "[redacted]")
	}
	return redactSecrets(text)
}
