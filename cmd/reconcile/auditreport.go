package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/internal/shared/safetext"
)

// quotedTable is the audited table's name, quoted, schema-qualified if the flags name one.
func quotedTable(cfg pgstore.Config) string {
	if cfg.Schema != "" {
		return pgx.Identifier{cfg.Schema, cfg.Table}.Sanitize()
	}
	return pgx.Identifier{cfg.Table}.Sanitize()
}

// terminal reports whether w is a terminal, where progress is one line redrawn in place, and
// its width in columns (80 when it cannot be told).
func terminal(w io.Writer) (tty bool, cols int) {
	if s, ok := w.(scrubber); ok {
		w = s.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false, 0
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false, 0
	}
	if cols = termWidth(f); cols <= 0 {
		cols = 80
	}
	return true, cols
}

// progress shows how far the audit is: a line redrawn at most five times a second on a
// terminal, a plain line every ten seconds elsewhere (a log, a CI job).
type progress struct {
	w     io.Writer
	tty   bool
	cols  int // the terminal's width: a wider line would wrap, and the next redraw not erase it
	t     *tally
	total int64 // the table's estimated rows; 0 unknown
	last  time.Time
	drawn bool
}

func newProgress(w io.Writer, tty bool, cols int, t *tally, total int64) *progress {
	return &progress{w: w, tty: tty, cols: cols, t: t, total: total, last: time.Now()}
}

func (p *progress) update() {
	now := time.Now()
	every := 10 * time.Second
	if p.tty {
		every = 200 * time.Millisecond
	}
	if now.Sub(p.last) < every {
		return
	}
	p.last = now
	p.draw(now)
}

func (p *progress) draw(now time.Time) {
	t := p.t
	elapsed := now.Sub(t.start)
	// The parts, most telling first: on a terminal narrower than them all, the last ones that
	// do not fit are left out rather than the line wrapping.
	rows := fmt.Sprintf("%s rows read", count(t.rows))
	if p.total > 0 {
		rows += fmt.Sprintf(" of ~%s", count(int(p.total)))
	}
	parts := []string{rows}
	if p.total > int64(t.rows) && t.rows > 0 {
		eta := time.Duration(float64(elapsed) * float64(p.total-int64(t.rows)) / float64(t.rows))
		parts = append(parts, "ETA "+eta.Round(time.Second).String())
	}
	parts = append(parts, count(t.found)+" findings", count(t.verified)+" verified",
		fmt.Sprintf("%s Stripe calls (%.1f/s)", count(t.calls), float64(t.calls)/max(elapsed.Seconds(), 0.001)))
	if !p.tty {
		fmt.Fprintln(p.w, strings.Join(parts, ", "))
		return
	}
	line := parts[0]
	if r := []rune(line); p.cols > 1 && len(r) >= p.cols {
		line = string(r[:p.cols-2]) + "…"
	}
	for _, part := range parts[1:] {
		if p.cols > 0 && utf8.RuneCountInString(line)+2+utf8.RuneCountInString(part) >= p.cols {
			break
		}
		line += ", " + part
	}
	fmt.Fprint(p.w, "\r\x1b[K"+line)
	p.drawn = true
}

// done ends the progress line on a terminal.
func (p *progress) done() {
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// count is n with thousands separators.
func count(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// kindMeanings are the meanings of every kind the audit may report.
func kindMeanings() map[string]reconcile.KindInfo {
	m := map[string]reconcile.KindInfo{}
	for _, k := range slices.Concat(reconcile.CoreKinds(), stripepolicy.Kinds()) {
		m[k.Kind] = k
	}
	return m
}

// meaning is kind's meaning; an unexpected pair of states has none in the tables.
func meaning(kinds map[string]reconcile.KindInfo, kind string) string {
	if k, ok := kinds[kind]; ok {
		return k.Meaning
	}
	if kind == otherKinds {
		return fmt.Sprintf("Findings of more kinds than the %s counted apart (pairs of states no rule covers, each a kind): listed with their kinds, to --max-findings.", count(maxKinds))
	}
	if strings.HasPrefix(kind, "unexpected:") {
		return "A pair of states the policy has no rule for (a status the table uses that the policy does not know?): a person decides."
	}
	return ""
}

// exitCode is the audit's exit code: 1 if it found drift, else 0 only if it completed and
// verified every row it did not find in flight.
func (t *tally) exitCode() int {
	switch {
	case t.found > 0:
		return exitNegative
	case !t.complete || t.unverifiable > 0:
		return exitError
	}
	return exitOK
}

// outcome is the run's ending in one sentence.
func (t *tally) outcome() string {
	switch {
	case t.interrupted:
		return "interrupted (Ctrl-C): what was found so far"
	case t.failure != nil:
		return "stopped by a failure (said on standard error)"
	case t.gaveUp != "":
		return "stopped: " + t.gaveUp
	}
	return "complete"
}

// whyUnverified is the first failure of Stripe's calls when rows went unverified or the audit
// gave up, "" otherwise: a call that failed when every row was verified after all (a list
// refused, its rows retrieved one at a time) explains nothing.
func (t *tally) whyUnverified() string {
	if t.unverifiable > 0 || t.gaveUp != "" {
		return t.firstFailure
	}
	return ""
}

// rowSecurityNote says what the rows read were when row-level security hid others.
const rowSecurityNote = "the table's row-level security binds this role: only the rows its policies let it see were read"

// verdict is the last line of the text report.
func (t *tally) verdict() string {
	v := t.verdictRows()
	if t.rowSecurity && t.found == 0 {
		// "In sync" would be said of the table; it is said of the rows the role could see.
		v += " But " + rowSecurityNote + "."
	}
	return v
}

func (t *tally) verdictRows() string {
	switch {
	case t.found > 0:
		return fmt.Sprintf("Drift found: %s findings (exit 1).", count(t.found))
	case !t.complete:
		return fmt.Sprintf("No drift found in the %s rows read, but the audit did not complete: it cannot say the table is in sync (exit 3).", count(t.rows))
	case t.unverifiable > 0:
		return fmt.Sprintf("No drift found, but %s rows could not be verified: it cannot say they are in sync (exit 3).", count(t.unverifiable))
	}
	if t.inFlight > 0 {
		return fmt.Sprintf("No drift: every row read that was not in flight is in sync with Stripe (exit 0); %s rows changed within --grace were not judged (run again later, or with --grace 0).",
			count(t.inFlight))
	}
	return "No drift: every row read is in sync with Stripe (exit 0)."
}

// report prints the summary and the findings, as the flags ask, and returns the exit code.
func (e *env) report(a *auditFlags, t *tally, object string) int {
	now := time.Now()
	kinds := kindMeanings()
	var err error
	switch {
	case a.json:
		err = e.printJSON(auditJSON(a, t, now, kinds))
	case a.csv:
		e.printErr("%s", summaryText(a, t, now, kinds, object))
		err = e.printCSV(t.findings, kinds)
	default:
		err = e.write(summaryText(a, t, now, kinds, object) + findingsText(t.findings))
	}
	if err != nil {
		// A report lost (a full disk, a closed output) must not exit as a written one would:
		// "> drift.csv" and exit 1 would send someone to an empty file.
		e.printErr("reconcile: audit: the report could not be written (%s): exit 3, whatever the audit found\n", err.Error())
		return exitError
	}
	if !a.json {
		// The failure is said once, here, next to the verdict it explains; --json says it in
		// "stopped".
		if t.failure != nil {
			e.printErr("reconcile: audit stopped by a failure: %s\n", t.failure.Error())
		}
		e.printErr("%s\n", t.verdict())
	}
	return t.exitCode()
}

func summaryText(a *auditFlags, t *tally, now time.Time, kinds map[string]reconcile.KindInfo, object string) string {
	var b strings.Builder
	elapsed := now.Sub(t.start).Round(time.Millisecond)
	fmt.Fprintf(&b, "Audit of %s against Stripe's %s objects (%s): %s, in %s\n", printable(displayTable(a.storeConfig(nil))), object, a.policyName(),
		printable(t.outcome()), elapsed)
	rows := [][]string{
		{"  rows read", count(t.rows), ""},
		{"  verified", count(t.verified), "Stripe answered; judged against its state"},
		{"  in flight", count(t.inFlight), fmt.Sprintf("changed within --grace %s, or Stripe still moving: not judged", a.grace)},
		{"  unverifiable", count(t.unverifiable), "Stripe could not be asked (rate limit, outage, timeout): not known to be in sync"},
		{"  lag", t.lag(now).Round(time.Second).String(), "since the creation of the oldest row this run did not verify (in flight, unverifiable, unreadable)"},
		{"  Stripe calls", count(t.calls), callRate(t, now)},
		{"  findings", count(t.found), unlisted(t)},
	}
	b.WriteString(trimLines(table(rows)))
	if t.rowSecurity {
		fmt.Fprintf(&b, "  %s\n", rowSecurityNote)
	}
	if why := t.whyUnverified(); why != "" {
		// Why the rows were not verified: a key, a proxy, a URL or an outage each has its fix.
		fmt.Fprintf(&b, "  first failure from Stripe: %s\n", printable(why))
	}
	if len(t.byKind) > 0 {
		b.WriteString("\nFindings by kind:\n")
		kr := [][]string{{"  KIND", "COUNT", "MEANING"}}
		for _, k := range sortedKinds(t.byKind) {
			kr = append(kr, []string{"  " + k, count(t.byKind[k]), orDash(meaning(kinds, k))})
		}
		b.WriteString(trimLines(table(kr)))
	}
	return b.String()
}

// unlisted says how many findings were counted but not kept (--max-findings), if any.
func unlisted(t *tally) string {
	if n := t.found - len(t.findings); n > 0 {
		return fmt.Sprintf("the first %s are listed; %s more are counted by kind only (--max-findings)", count(len(t.findings)), count(n))
	}
	return ""
}

// callRate says how fast the audit called Stripe, and how often it was told to slow down.
func callRate(t *tally, now time.Time) string {
	s := fmt.Sprintf("%d batches rate limited", t.rateLimited)
	if d := now.Sub(t.start).Seconds(); d >= 1 {
		s = fmt.Sprintf("%.1f/s; ", float64(t.calls)/d) + s
	}
	return s
}

// trimLines drops the spaces a table leaves after a row's last cell.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// sortedKinds are the kinds found, most frequent first.
func sortedKinds(by map[string]int) []string {
	ks := make([]string, 0, len(by))
	for k := range by {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(x, y string) int {
		if by[x] != by[y] {
			return by[y] - by[x]
		}
		return strings.Compare(x, y)
	})
	return ks
}

func findingsText(fs []auditFinding) string {
	if len(fs) == 0 {
		return ""
	}
	rows := [][]string{{"  RECORD", "EXTERNAL", "KIND", "OURS", "STRIPE", "DIFFERENCES", "DETAIL"}}
	for _, f := range fs {
		rows = append(rows, []string{"  " + f.RecordID, orDash(f.ExternalID), f.Kind, orDash(f.Local), orDash(f.External),
			orDash(diffsText(f.Diffs)), orDash(f.Detail)})
	}
	return "\nFindings:\n" + trimLines(table(rows))
}

// diffsText is the differing fields as one text: "amount: USD 10.00 ≠ USD 12.00; ...".
func diffsText(ds []reconcile.Diff) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.Field + ": " + d.Local + " ≠ " + d.External
	}
	return strings.Join(parts, "; ")
}

// auditSummaryJSON is the --json output.
type auditSummaryJSON struct {
	Table        string          `json:"table"`
	Object       string          `json:"object"`
	Money        bool            `json:"money"`
	Complete     bool            `json:"complete"`
	Interrupted  bool            `json:"interrupted,omitempty"`
	Stopped      string          `json:"stopped,omitempty"`
	Rows         int             `json:"rows"`
	Verified     int             `json:"verified"`
	InFlight     int             `json:"in_flight"`
	Unverifiable int             `json:"unverifiable"`
	LagSeconds   float64         `json:"lag_seconds"`
	Calls        int             `json:"stripe_calls"`
	RateLimited  int             `json:"rate_limited_batches"`
	Seconds      float64         `json:"seconds"`
	Kinds        []auditKindJSON `json:"kinds"`
	Findings     []auditFinding  `json:"findings"`
	// NotListed counts the findings beyond --max-findings, counted in Kinds only.
	NotListed int `json:"findings_not_listed"`
	// FirstFailure is the first error a call to Stripe failed with: why rows are unverifiable.
	FirstFailure string `json:"first_failure,omitempty"`
	// RowSecurity: the table's row-level security binds the role; only the rows it may see
	// were read.
	RowSecurity bool   `json:"row_security,omitempty"`
	ExitCode    int    `json:"exit_code"`
	Verdict     string `json:"verdict"`
}

type auditKindJSON struct {
	Kind    string `json:"kind"`
	Count   int    `json:"count"`
	Meaning string `json:"meaning,omitempty"`
	Money   bool   `json:"money"`
}

func auditJSON(a *auditFlags, t *tally, now time.Time, kinds map[string]reconcile.KindInfo) auditSummaryJSON {
	out := auditSummaryJSON{Table: displayTable(a.storeConfig(nil)), Object: a.object, Money: a.money, Complete: t.complete,
		Interrupted: t.interrupted, Rows: t.rows, Verified: t.verified, InFlight: t.inFlight, Unverifiable: t.unverifiable,
		LagSeconds: t.lag(now).Seconds(), Calls: t.calls, RateLimited: t.rateLimited, Seconds: now.Sub(t.start).Seconds(),
		Kinds: []auditKindJSON{}, Findings: t.findings, NotListed: t.found - len(t.findings), FirstFailure: t.whyUnverified(),
		RowSecurity: t.rowSecurity, ExitCode: t.exitCode(), Verdict: t.verdict()}
	if out.Findings == nil {
		out.Findings = []auditFinding{}
	}
	switch {
	case t.failure != nil:
		out.Stopped = "stopped by a failure: " + t.failure.Error()
	case !t.complete && !t.interrupted:
		out.Stopped = t.outcome()
	}
	for _, k := range sortedKinds(t.byKind) {
		out.Kinds = append(out.Kinds, auditKindJSON{Kind: k, Count: t.byKind[k], Meaning: meaning(kinds, k), Money: kinds[k].Money})
	}
	return out
}

// auditCSVHeader are the --csv columns.
var auditCSVHeader = []string{"record_id", "external_id", "kind", "meaning", "verdict", "local_state", "external_state", "differences", "detail"}

// printCSV writes the findings as CSV, every cell redacted and formula-safe as the console's
// export writes them (safetext.CSVCell), and with its control characters escaped as text
// output escapes them (a CSV file is often read on a terminal first), the whole file in one
// write.
func (e *env) printCSV(fs []auditFinding, kinds map[string]reconcile.KindInfo) error {
	var b strings.Builder
	w := csv.NewWriter(&b)
	if err := w.Write(auditCSVHeader); err != nil {
		return err
	}
	for _, f := range fs {
		row := []string{f.RecordID, f.ExternalID, f.Kind, meaning(kinds, f.Kind), f.Verdict, f.Local, f.External, diffsText(f.Diffs), f.Detail}
		for i := range row {
			row[i] = safetext.CSVCell(printable(row[i]))
		}
		if err := w.Write(row); err != nil {
			return err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	_, err := io.WriteString(e.stdout, b.String())
	return err
}
