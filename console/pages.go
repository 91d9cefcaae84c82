package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reconcilekit/reconcile"
)

// maxField bounds every free-text parameter: job, kind, record id, search, resolution.
const maxField = 200

// userError is a message for the person at the browser: it says what was wrong with the
// request, and is shown as it is.
type userError string

func (e userError) Error() string { return string(e) }

// maxNote bounds a resolution's or reopening's note.
const maxNote = 2000

// plainText reports whether s is valid UTF-8 without C0 control characters: PostgreSQL refuses
// a NUL in text, and the others have no business in a filter or an audit history. A note
// (multiline) may have tabs and line breaks.
func plainText(s string, multiline bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 && !(multiline && (b == '\t' || b == '\n' || b == '\r')) {
			return false
		}
	}
	return true
}

// forJob reports whether the console is for job's findings: Config.Jobs (or the store's), or
// any job when there are none.
func (c *Console) forJob(job string) bool {
	return len(c.jobs) == 0 || slices.Contains(c.jobs, job)
}

// overviewPage is the data of the overview.
type overviewPage struct {
	Jobs        []jobView
	FindingsURL string
	// Payouts counts the payouts the store recorded, nil when it records none (or none yet);
	// PayoutsErr is set when counting them failed.
	Payouts    *payoutCounts
	PayoutsErr bool
}

// payoutCounts are the overview's payout figures, each linked to the payouts it counts.
type payoutCounts struct {
	reconcile.GroupCounts
	URL, PendingURL, NotHeldURL string
}

type jobView struct {
	Name        string
	Err         bool
	OK          bool
	Reasons     []reasonView
	Lag         string
	LastCycle   string
	CycleAge    string
	Unverify    string
	Stale       int
	StaleURL    string
	Open        int
	Kinds       []kindView
	FindingsURL string
	// Coverage is the job's chart, nil when its store reads none; CoverageErr is set when
	// reading it failed.
	Coverage    *coverageChart
	CoverageErr bool
}

// reasonView is a failing check's reason, linked to the findings behind it when it has any
// (stale findings).
type reasonView struct {
	Text, URL string
}

type kindView struct {
	Kind    string
	Meaning string
	N       int
	URL     string
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	root := rootOf(r.URL.EscapedPath())
	_, loc := c.zones.of(r)
	data := overviewPage{FindingsURL: listURL(root, filter{State: reconcile.FindingsOpen}, 0)}
	for i, js := range c.readStatuses(r.Context()) {
		v := jobView{Name: js.Job, FindingsURL: listURL(root, filter{Job: js.Job, State: reconcile.FindingsOpen}, 0)}
		if js.Err != nil {
			// The page says only that the read failed; the log says why.
			c.log.ErrorContext(r.Context(), "console: read job status", "job", js.Job, "error", js.Err.Error())
			v.Err = true
			data.Jobs = append(data.Jobs, v)
			continue
		}
		// The Monitor hands out the status as it may be shown: failures by their reasons
		// (reconcile.FailureReason), keys redacted.
		h, st := js.Health, js.Health.Status
		if st.StaleAfter > 0 {
			// The stale findings are the job's open findings detected more than the store's
			// threshold ago, which its status says.
			v.StaleURL = listURL(root, filter{Job: js.Job, State: reconcile.FindingsOpen, Age: shortDuration(st.StaleAfter)}, 0)
		}
		v.OK = h.OK
		for _, chk := range h.Checks {
			if chk.OK {
				continue
			}
			rv := reasonView{Text: chk.Reason}
			if chk.Name == "stale_findings" {
				rv.URL = v.StaleURL
			}
			v.Reasons = append(v.Reasons, rv)
		}
		v.Lag = formatDuration(st.Lag)
		if since, ok := st.SinceLastCycle(); ok {
			v.LastCycle = fmt.Sprintf("%s (%s ago)", formatTime(st.LastCycleCompletedAt, loc), formatDuration(since))
		} else {
			v.LastCycle = "never"
		}
		if st.CycleStartedAt.IsZero() {
			v.CycleAge = "not started"
		} else {
			v.CycleAge = formatDuration(st.CycleAge())
		}
		v.Unverify = fmt.Sprintf("%.0f%% (%d of %d rows of the last batch)", 100*st.UnverifiableRatio(), st.LastBatchUnverifiable, st.LastBatchScanned)
		v.Stale = st.StaleFindings
		for _, k := range st.OpenFindingKinds() {
			// The link filters by the kind, unless the kind held a key (the Monitor redacted
			// it): the redacted kind matches no finding, so the link lists the job's open
			// findings instead.
			f := filter{Job: js.Job, Kind: k, State: reconcile.FindingsOpen}
			if strings.Contains(k, redactedKey) {
				f.Kind = ""
			}
			v.Open += st.OpenFindings[k]
			v.Kinds = append(v.Kinds, kindView{Kind: k, Meaning: c.kinds.meaning(k), N: st.OpenFindings[k], URL: listURL(root, f, 0)})
		}
		if js.hasCov {
			v.Coverage, v.CoverageErr = c.coverageView(r, js, i, loc)
		}
		data.Jobs = append(data.Jobs, v)
	}
	data.Payouts, data.PayoutsErr = c.payoutCounts(r, root)
	c.render(w, r, http.StatusOK, "overview", "Overview", data)
}

// payoutCounts counts the payouts of the console's jobs the store recorded, for the overview:
// nil if it records none; true if counting failed (logged).
func (c *Console) payoutCounts(r *http.Request, root string) (*payoutCounts, bool) {
	gr, ok := c.store.(reconcile.GroupReader)
	if !ok {
		return nil, false
	}
	n, err := gr.CountGroups(r.Context(), c.groupQuery(groupFilter{}, 0))
	if err != nil {
		c.log.ErrorContext(r.Context(), "console: count payouts", "error", err.Error())
		return nil, true
	}
	if n.Recorded == 0 {
		return nil, false
	}
	return &payoutCounts{GroupCounts: n, URL: groupsURL(root, "", groupFilter{}, 0),
		PendingURL: groupsURL(root, "", groupFilter{State: reconcile.GroupsPending}, 0),
		NotHeldURL: groupsURL(root, "", groupFilter{State: reconcile.GroupsNotHeld}, 0)}, false
}

// coverageView is js's coverage chart, or true when it could not be read or drawn (logged).
func (c *Console) coverageView(r *http.Request, js jobStatus, idx int, loc *time.Location) (*coverageChart, bool) {
	err := js.covErr
	if err == nil {
		cov := js.cov
		cov.Job, cov.Unknown = js.Job, redactSecrets(cov.Unknown)
		var ch coverageChart
		if ch, err = newCoverageChart(cov, js.Policy.LagSLO, idx, loc); err == nil {
			return &ch, false
		}
	}
	c.log.ErrorContext(r.Context(), "console: read job coverage", "job", js.Job, "error", err.Error())
	return nil, true
}

// shortDuration is d as the age filter takes it, without zero units: 24h, 90m, 36h.
func shortDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// filter is the findings list's query string, as given (validated).
type filter struct {
	Job, Kind, Record, State, Age string
	// Search is the search box (q): an external id, a record id or a value of one of the
	// store's search columns, such as an order id (FindingQuery.Search).
	Search string
	// Sort is the order: "detected" (the default, oldest first) or "-detected", "age"
	// (youngest first) or "-age". Both are the order of detection, one way or the other.
	Sort  string
	age   time.Duration
	after int64
}

// newest reports whether the list is newest first.
func (f filter) newest() bool { return f.Sort == "-detected" || f.Sort == "age" }

// sorts are the sort order's choices.
var sorts = []option{
	{"detected", "detected, oldest first"}, {"-detected", "detected, newest first"},
	{"age", "age, youngest first"}, {"-age", "age, oldest first"},
}

// ages are the age filter's choices; any other positive duration is accepted too.
var ages = []option{
	{"", "any age"}, {"1h", "older than 1 hour"}, {"24h", "older than 1 day"},
	{"72h", "older than 3 days"}, {"168h", "older than 7 days"},
}

type option struct{ Value, Label string }

// parseFilter reads and checks the list's query string; the error is for people.
func parseFilter(q url.Values) (filter, error) {
	f := filter{Job: q.Get("job"), Kind: q.Get("kind"), Record: q.Get("record"), State: q.Get("state"), Age: q.Get("age"),
		// An id pasted from elsewhere often brings a space along; the store matches whole values.
		Search: strings.TrimSpace(q.Get("q"))}
	for name, v := range map[string]string{"job": f.Job, "kind": f.Kind, "record": f.Record, "search": f.Search} {
		if len(v) > maxField || !plainText(v, false) {
			return f, userError(fmt.Sprintf("The %s filter must be valid text of at most %d bytes, without control characters.", name, maxField))
		}
	}
	for name, v := range map[string]string{"job": f.Job, "kind": f.Kind, "record": f.Record, "search": f.Search} {
		if redactSecrets(v) != v {
			// Filters are shown on the page and carried in its links: no key goes there.
			return f, userError(fmt.Sprintf("The %s filter looks like a secret API key. Search by a payment's id, a record id or an order id; never paste a key.", name))
		}
	}
	switch f.State {
	case "":
		f.State = reconcile.FindingsOpen
	case reconcile.FindingsOpen, reconcile.FindingsResolved, reconcile.FindingsAll:
	default:
		return f, userError("The state filter must be open, resolved or all.")
	}
	if f.Age != "" {
		d, err := time.ParseDuration(f.Age)
		if err != nil || d <= 0 || d > 100*365*24*time.Hour {
			return f, userError("The age filter must be a positive duration such as 24h.")
		}
		f.age = d
	}
	switch f.Sort = q.Get("sort"); f.Sort {
	case "":
		f.Sort = "detected"
	case "detected", "-detected", "age", "-age":
	default:
		return f, userError("The sort order must be detected, -detected, age or -age.")
	}
	if s := q.Get("after"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return f, userError("The after parameter must be a finding id.")
		}
		f.after = n
	}
	return f, nil
}

// listPage is the data of the findings list.
type listPage struct {
	Filter   filter
	Jobs     []string // the job filter's choices; empty: a text field
	Kinds    []kindOption
	Meaning  string // the meaning of the kind filtered by
	States   []option
	Ages     []option
	Sorts    []option
	Rows     []rowView
	NextURL  string
	FirstURL string
	// ClearURL is the list with the same filters and no search, when there is one.
	ClearURL string
	// Diffs is set when a row has fields that differ: the list then has their column.
	Diffs  bool
	Action string
	// Total is how many findings the filter selects, every page; Counted says whether the
	// store counted them (it is a reconcile.FindingCounter).
	Total   int
	Counted bool
	// ExportURL is the CSV export of the same filter.
	ExportURL string
	// DetectedSortURL and AgeSortURL are the list in the other order of the column.
	DetectedSortURL, AgeSortURL string
	// Open is set when a row is open: the list then has the bulk resolution form.
	Open        bool
	Resolutions []string
	ResolveURL  string
	MaxNote     int
}

type rowView struct {
	ID          int64
	URL         string
	Job         string
	RecordID    string
	Kind        string
	Meaning     string
	Money       bool
	Local       string
	External    string
	Detected    string
	Age         string
	ExternalID  string
	ExternalURL string
	Open        bool
	Resolved    string
	Resolution  string
	ResolvedBy  string
	Diffs       []reconcile.Diff
}

func (c *Console) view(root string, f reconcile.Finding, now time.Time, loc *time.Location) rowView {
	// Every stored text is redacted (redactSecrets); the link is made from the finding as it is.
	x := redactSecrets
	v := rowView{
		ID: f.ID, URL: findingURL(root, f.ID), Job: x(f.Job), RecordID: x(f.RecordID), Kind: x(f.Kind),
		Meaning: c.kinds.meaning(f.Kind), Money: c.kinds.money(f.Kind),
		Local: x(f.Local), External: x(f.External), Detected: formatTime(f.DetectedAt, loc), Age: formatDuration(now.Sub(f.DetectedAt)),
		ExternalID: x(f.ExternalID), ExternalURL: c.externalURL(f),
		Open: f.Open(), Resolution: x(f.Resolution), ResolvedBy: x(f.ResolvedBy),
	}
	if !f.Open() {
		v.Resolved = formatTime(f.ResolvedAt, loc)
	}
	for _, d := range f.Diffs {
		// The values are the classifier's, formatted already ("JPY 1,000"): shown as they are.
		v.Diffs = append(v.Diffs, reconcile.Diff{Field: x(d.Field), Local: x(d.Local), External: x(d.External)})
	}
	return v
}

// listFilter reads the list's filter from r's query, and answers 400 itself if it is bad.
func (c *Console) listFilter(w http.ResponseWriter, r *http.Request) (filter, bool) {
	f, err := parseFilter(r.URL.Query())
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "Bad filter", err.Error())
		return f, false
	}
	return f, c.jobFilterOK(w, r, f.Job)
}

// jobFilterOK reports whether job ("" for all) is one of this console's jobs, and answers 400
// itself if it is not.
func (c *Console) jobFilterOK(w http.ResponseWriter, r *http.Request, job string) bool {
	if job != "" && !c.forJob(job) {
		c.fail(w, r, http.StatusBadRequest, "Bad filter", "The job filter must be one of this console's jobs: "+strings.Join(c.jobs, ", ")+".")
		return false
	}
	return true
}

// query is the store's query for filter f, a page of the list.
func (c *Console) query(f filter, now time.Time) reconcile.FindingQuery {
	q := reconcile.FindingQuery{Job: f.Job, Kind: f.Kind, RecordID: f.Record, Search: f.Search, State: f.State,
		Newest: f.newest(), AfterID: f.after, Limit: c.pageSize + 1}
	if f.Job == "" && len(c.jobs) > 0 {
		q.Jobs = slices.Clone(c.jobs)
	}
	if f.age > 0 {
		q.DetectedBefore = now.Add(-f.age)
	}
	return q
}

func (c *Console) list(w http.ResponseWriter, r *http.Request) {
	f, ok := c.listFilter(w, r)
	if !ok {
		return
	}
	now := time.Now()
	_, loc := c.zones.of(r)
	q := c.query(f, now)
	found, err := c.store.ListFindings(r.Context(), q)
	if err != nil {
		c.storeFailed(w, r, "list the findings", err)
		return
	}
	root := rootOf(r.URL.EscapedPath())
	data := listPage{Filter: f, Jobs: c.jobs, Action: root + "findings", Kinds: c.kinds.options(f.Kind), Meaning: c.kinds.meaning(f.Kind),
		States: []option{{reconcile.FindingsOpen, "open"}, {reconcile.FindingsResolved, "resolved"}, {reconcile.FindingsAll, "all"}},
		Ages:   ages, Sorts: sorts, ExportURL: exportURL(root, f),
		Resolutions: c.resolutions, ResolveURL: root + "resolve", MaxNote: maxNote}
	if counter, ok := c.store.(reconcile.FindingCounter); ok {
		if data.Total, err = counter.CountFindings(r.Context(), q); err != nil {
			c.storeFailed(w, r, "count the findings", err)
			return
		}
		data.Counted = true
	}
	resorted := func(s string) string {
		g := f
		g.Sort = s
		return listURL(root, g, 0)
	}
	data.DetectedSortURL, data.AgeSortURL = resorted("-detected"), resorted("-age")
	switch f.Sort {
	case "-detected":
		data.DetectedSortURL = resorted("detected")
	case "-age":
		data.AgeSortURL = resorted("age")
	}
	if f.Age != "" && !containsValue(ages, f.Age) {
		data.Ages = append(append([]option(nil), ages...), option{f.Age, "older than " + f.Age})
	}
	if len(found) > c.pageSize {
		found = found[:c.pageSize]
		data.NextURL = listURL(root, f, found[len(found)-1].ID)
	}
	if f.after > 0 {
		data.FirstURL = listURL(root, f, 0)
	}
	if f.Search != "" {
		unsearched := f
		unsearched.Search = ""
		data.ClearURL = listURL(root, unsearched, 0)
	}
	for _, fd := range found {
		// The store was asked for the console's jobs only; a store that ignores Query.Jobs
		// still shows nothing else (its pages may then be short).
		if c.forJob(fd.Job) {
			data.Rows = append(data.Rows, c.view(root, fd, now, loc))
			data.Diffs = data.Diffs || len(fd.Diffs) > 0
			data.Open = data.Open || fd.Open()
		}
	}
	c.render(w, r, http.StatusOK, "list", "Findings", data)
}

func containsValue(opts []option, v string) bool {
	return slices.ContainsFunc(opts, func(o option) bool { return o.Value == v })
}

// detailPage is the data of a finding's page.
type detailPage struct {
	rowView
	Detail         string
	Command        string
	ResolutionNote string
	History        []eventView
	Resolutions    []string
	ResolveURL     string
	ReopenURL      string
	ListURL        string
	// SearchURL lists every finding of the same external object, open or resolved: a search
	// by its id. Empty when the finding has none the search box would take.
	SearchURL string
	MaxNote   int
	// NoteRequired is set for a kind that involves money: resolving it needs a note.
	NoteRequired bool
	// SupersededBy links the finding that replaced this one (resolved as superseded); Replaces
	// the findings this one replaced.
	SupersededBy *findingLink
	Replaces     []findingLink
}

// findingLink is a link to another finding.
type findingLink struct {
	ID  int64
	URL string
}

type eventView struct {
	At, Action, Actor, Resolution, Note string
	// By says what the actor is: "job" for a detection, "repair" for the reconciler's own
	// resolution or a command, "" for a person.
	By string
}

// isCommandEvent reports whether e is about a repair command ("command pending", "command
// dead", "command redriven" ...).
func isCommandEvent(e reconcile.FindingEvent) bool {
	return strings.HasPrefix(e.Action, "command ")
}

// failedAttempts says how often a command failed; nothing if it has not.
func failedAttempts(n int) string {
	switch {
	case n <= 0:
		return ""
	case n == 1:
		return "1 failed attempt"
	}
	return fmt.Sprintf("%d failed attempts", n)
}

// findingID reads the {id} path segment; the error is for people.
func findingID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, userError("A finding id is a positive number.")
	}
	return id, nil
}

func (c *Console) detail(w http.ResponseWriter, r *http.Request) {
	id, err := findingID(r)
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "Bad finding id", err.Error())
		return
	}
	d, err := c.store.Finding(r.Context(), id)
	if errors.Is(err, reconcile.ErrFindingNotFound) || (err == nil && !c.forJob(d.Job)) {
		c.fail(w, r, http.StatusNotFound, "No such finding", fmt.Sprintf("There is no finding %d.", id))
		return
	}
	if err != nil {
		c.storeFailed(w, r, "read the finding", err)
		return
	}
	root := rootOf(r.URL.EscapedPath())
	_, loc := c.zones.of(r)
	data := detailPage{
		rowView: c.view(root, d.Finding, time.Now(), loc), NoteRequired: c.kinds.money(d.Kind), Detail: redactSecrets(d.Detail), Command: redactSecrets(d.Command),
		ResolutionNote: redactSecrets(d.ResolutionNote), Resolutions: c.resolutions, MaxNote: maxNote,
		ResolveURL: findingURL(root, id) + "/resolve", ReopenURL: findingURL(root, id) + "/reopen",
		ListURL: listURL(root, filter{Job: d.Job, State: reconcile.FindingsOpen}, 0),
	}
	if d.SupersededBy > 0 {
		data.SupersededBy = &findingLink{d.SupersededBy, findingURL(root, d.SupersededBy)}
	}
	for _, id := range d.Supersedes {
		data.Replaces = append(data.Replaces, findingLink{id, findingURL(root, id)})
	}
	if id := d.ExternalID; id != "" && id == strings.TrimSpace(id) && len(id) <= maxField && plainText(id, false) && redactSecrets(id) == id {
		data.SearchURL = listURL(root, filter{Search: id, State: reconcile.FindingsAll}, 0)
	}
	for _, e := range d.History {
		x := redactSecrets
		ev := eventView{At: formatTime(e.At, loc), Action: x(e.Action), Actor: x(e.Actor), Resolution: x(e.Resolution), Note: x(e.Note)}
		switch {
		case isCommandEvent(e):
			// A command's note is its last error, which may name hosts or hold SQL: the page
			// shows its status (the action) and how often it failed, never the text.
			ev.Note = failedAttempts(e.Failures)
			if e.Action != reconcile.ActionCommandRedriven {
				ev.By = "repair command"
			}
		case e.Action == reconcile.ActionDetected:
			// The store records the job that found the drift as the detection's actor.
			ev.By = "job"
		case e.Actor == reconcile.ResolvedByReconciler:
			ev.By = "repair"
		}
		data.History = append(data.History, ev)
	}
	c.render(w, r, http.StatusOK, "detail", fmt.Sprintf("Finding %d", id), data)
}
