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

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/shared/safetext"
)

// The payouts pages show the groups a tie-out recorded (reconcile.GroupRecord, read through a
// reconcile.GroupReader, which pgstore.Store and memstore.Store are): each payout's expected
// against paid, its unmatched lines (its open findings), the payouts not tied out yet, and a
// CSV of them for finance. A store that is not a GroupReader has no payouts pages.

// groupFilter is the payouts list's query string, as given (validated).
type groupFilter struct {
	Job, Account, Status, State string
	before                      int64
}

// groupStates are the payouts list's state choices.
var groupStates = []option{
	{"", "any"}, {reconcile.GroupsPending, "not tied out yet"}, {reconcile.GroupsNotHeld, "not holding, or with findings"},
	{reconcile.GroupsHeld, "held, no findings"},
}

// parseGroupFilter reads and checks the payouts list's query string; the error is for people.
func parseGroupFilter(q url.Values) (groupFilter, error) {
	f := groupFilter{Job: q.Get("job"), Account: strings.TrimSpace(q.Get("account")), Status: q.Get("status"), State: q.Get("state")}
	for _, v := range []struct{ name, v string }{{"job", f.Job}, {"account", f.Account}, {"status", f.Status}} {
		if len(v.v) > maxField || !plainText(v.v, false) {
			return f, userError(fmt.Sprintf("The %s filter must be valid text of at most %d bytes, without control characters.", v.name, maxField))
		}
		if redactSecrets(v.v) != v.v {
			return f, userError(fmt.Sprintf("The %s filter looks like a secret API key; never paste a key.", v.name))
		}
	}
	if !containsValue(groupStates, f.State) {
		return f, userError("The state filter must be pending, held or not_held.")
	}
	if s := q.Get("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return f, userError("The before parameter must be a payout record's number.")
		}
		f.before = n
	}
	return f, nil
}

// groupsURL returns the link to the payouts list (or, with suffix ".csv", its export) with
// filter f, continuing below before when it is positive.
func groupsURL(root, suffix string, f groupFilter, before int64) string {
	v := url.Values{}
	for k, val := range map[string]string{"job": f.Job, "account": f.Account, "status": f.Status, "state": f.State} {
		if val != "" {
			v.Set(k, val)
		}
	}
	if before > 0 {
		v.Set("before", strconv.FormatInt(before, 10))
	}
	if len(v) == 0 {
		return root + "payouts" + suffix
	}
	return root + "payouts" + suffix + "?" + v.Encode()
}

func groupURL(root string, seq int64) string { return root + "payouts/" + strconv.FormatInt(seq, 10) }

// groupReader is the store's GroupReader; false (and a 404 page) if it is none.
func (c *Console) groupReader(w http.ResponseWriter, r *http.Request) (reconcile.GroupReader, bool) {
	gr, ok := c.store.(reconcile.GroupReader)
	if !ok {
		c.fail(w, r, http.StatusNotFound, "No payouts", "This console's store records no payouts (it is not a reconcile.GroupReader).")
	}
	return gr, ok
}

// groupQuery is the store's query for filter f, limit records.
func (c *Console) groupQuery(f groupFilter, limit int) reconcile.GroupQuery {
	q := reconcile.GroupQuery{Job: f.Job, Account: f.Account, Status: f.Status, State: f.State, BeforeSeq: f.before, Limit: limit}
	if f.Job == "" && len(c.jobs) > 0 {
		q.Jobs = slices.Clone(c.jobs)
	}
	return q
}

// groupFilterOf reads the payouts list's filter from r, and answers 400 itself if it is bad.
func (c *Console) groupFilterOf(w http.ResponseWriter, r *http.Request) (groupFilter, bool) {
	f, err := parseGroupFilter(r.URL.Query())
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "Bad filter", err.Error())
		return f, false
	}
	return f, c.jobFilterOK(w, r, f.Job)
}

// groupView is one payout as the pages show it, every stored text redacted.
type groupView struct {
	Seq                            int64
	URL                            string
	Job, Lane, ID, Account, Status string
	Paid, Expected, Difference     string
	Members, Findings, Unmatched   int
	TiedOut, Held, Itemized, Holds bool
	State                          string
	SeenAt, TiedOutAt              string
	UnmatchedURL                   string
}

// groupState names a record's state for people.
func groupState(g reconcile.GroupRecord) string {
	switch {
	case !g.TiedOut:
		return "not tied out yet"
	case !g.Itemized:
		return "cannot be itemized"
	case g.Held && g.Findings == 0:
		return "held"
	case g.Held:
		return "held, with findings"
	}
	return "does not hold"
}

// amounts are g's paid, expected (its lines' sum) and their difference (expected - paid), as
// money; expected and difference are empty when the lines' sum is not known.
func amounts(g reconcile.GroupRecord) (paid, expected, diff string) {
	paid = reconcile.FormatAmount(g.Amount, g.Currency)
	if !g.TiedOut || !g.ExpectedKnown {
		return paid, "", ""
	}
	expected = reconcile.FormatAmount(g.Expected, g.Currency)
	d := g.Expected - g.Amount
	if (g.Amount > 0 && d > g.Expected) || (g.Amount < 0 && d < g.Expected) {
		return paid, expected, "overflow"
	}
	return paid, expected, reconcile.FormatAmount(d, g.Currency)
}

func (c *Console) groupView(root string, g reconcile.GroupRecord, loc *time.Location) groupView {
	x := redactSecrets
	// The currency is the record's: a hostile one is shown redacted, as the rest.
	g.Currency = x(g.Currency)
	v := groupView{Seq: g.Seq, URL: groupURL(root, g.Seq), Job: x(g.Job), Lane: x(g.Lane), ID: x(g.ID), Account: x(g.Account),
		Status: x(g.Status), Members: g.Members, Findings: g.Findings, Unmatched: g.Unmatched, TiedOut: g.TiedOut,
		Held: g.Held, Itemized: g.Itemized, Holds: g.TiedOut && g.Held && g.Findings == 0, State: groupState(g),
		SeenAt: formatTime(g.SeenAt, loc), TiedOutAt: formatTime(g.TiedOutAt, loc)}
	v.Paid, v.Expected, v.Difference = amounts(g)
	return v
}

// groupsPage is the data of the payouts list.
type groupsPage struct {
	Filter    groupFilter
	Jobs      []string
	States    []option
	Action    string
	Counts    reconcile.GroupCounts
	Rows      []groupView
	ExportURL string
	NextURL   string
	FirstURL  string
}

func (c *Console) groups(w http.ResponseWriter, r *http.Request) {
	gr, ok := c.groupReader(w, r)
	if !ok {
		return
	}
	f, ok := c.groupFilterOf(w, r)
	if !ok {
		return
	}
	q := c.groupQuery(f, c.pageSize+1)
	found, err := gr.ListGroups(r.Context(), q)
	if err != nil {
		c.storeFailed(w, r, "list the payouts", err)
		return
	}
	root := rootOf(r.URL.EscapedPath())
	_, loc := c.zones.of(r)
	data := groupsPage{Filter: f, Jobs: c.jobs, States: groupStates, Action: root + "payouts", ExportURL: groupsURL(root, ".csv", f, 0)}
	if data.Counts, err = gr.CountGroups(r.Context(), q); err != nil {
		c.storeFailed(w, r, "count the payouts", err)
		return
	}
	if len(found) > c.pageSize {
		found = found[:c.pageSize]
		data.NextURL = groupsURL(root, "", f, found[len(found)-1].Seq)
	}
	if f.before > 0 {
		data.FirstURL = groupsURL(root, "", f, 0)
	}
	for _, g := range found {
		if c.forJob(g.Job) {
			data.Rows = append(data.Rows, c.groupView(root, g, loc))
		}
	}
	c.render(w, r, http.StatusOK, "payouts", "Payouts", data)
}

// groupPage is the data of one payout's page.
type groupPage struct {
	groupView
	// Lines are the payout's open findings, its own and its lines'; Resolved counts those of
	// its records that were resolved since.
	Lines    []rowView
	Diffs    bool
	Omitted  int
	ListURL  string
	Meanings bool
}

func (c *Console) group(w http.ResponseWriter, r *http.Request) {
	gr, ok := c.groupReader(w, r)
	if !ok {
		return
	}
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil || seq <= 0 {
		c.fail(w, r, http.StatusBadRequest, "Bad payout number", "A payout record's number is a positive number.")
		return
	}
	g, err := gr.Group(r.Context(), seq)
	if errors.Is(err, reconcile.ErrGroupNotFound) || (err == nil && !c.forJob(g.Job)) {
		c.fail(w, r, http.StatusNotFound, "No such payout", fmt.Sprintf("There is no payout record %d.", seq))
		return
	}
	if err != nil {
		c.storeFailed(w, r, "read the payout", err)
		return
	}
	root := rootOf(r.URL.EscapedPath())
	now := time.Now()
	_, loc := c.zones.of(r)
	data := groupPage{groupView: c.groupView(root, g, loc), ListURL: groupsURL(root, "", groupFilter{Job: g.Job}, 0)}
	// Its open findings: those of the records its tie-out found drift in, each record's in
	// one indexed query (at most reconcile.MaxGroupRecords of them).
	for _, rec := range g.Records {
		fs, err := c.store.ListFindings(r.Context(), reconcile.FindingQuery{Job: g.Job, RecordID: rec, State: reconcile.FindingsOpen,
			Limit: maxLinesPerRecord})
		if err != nil {
			c.storeFailed(w, r, "list the payout's findings", err)
			return
		}
		for _, fd := range fs {
			data.Lines = append(data.Lines, c.view(root, fd, now, loc))
			data.Diffs = data.Diffs || len(fd.Diffs) > 0
		}
	}
	c.render(w, r, http.StatusOK, "payout", "Payout "+data.ID, data)
}

// maxLinesPerRecord bounds the open findings a payout's page shows of one record: a record
// has at most one open finding per kind.
const maxLinesPerRecord = 50

// groupsCSVHeader are the payouts export's columns. The *_minor columns are the amounts in
// minor units, as numbers, for sums; the others are money as people read it.
var groupsCSVHeader = []string{"job", "account", "payout", "status", "state", "currency", "paid", "expected", "difference",
	"paid_minor", "expected_minor", "members", "findings", "unmatched_lines", "held", "tied_out_at", "seen_at"}

// exportGroups streams the payouts the list's filter selects as CSV (GET /payouts.csv), newest
// first, every page, at most MaxExportRows, each text formula-safe (safetext.CSVCell, as the findings export) and redacted.
func (c *Console) exportGroups(w http.ResponseWriter, r *http.Request) {
	gr, ok := c.groupReader(w, r)
	if !ok {
		return
	}
	f, ok := c.groupFilterOf(w, r)
	if !ok {
		return
	}
	q := c.groupQuery(f, exportPage)
	q.BeforeSeq = 0
	_, loc := c.zones.of(r)
	at := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.In(loc).Format(time.RFC3339)
	}
	cw := startCSV(w, "payouts")
	cw.Write(groupsCSVHeader) //nolint:errcheck // the writer keeps its first error, checked at the end
	written := 0
	x := func(s string) string { return safetext.CSVCell(redactSecrets(s)) }
	for {
		page, err := gr.ListGroups(r.Context(), q)
		if err != nil {
			c.exportFailed(r, cw, "export the payouts", err, written)
			break
		}
		for _, g := range page {
			if !c.forJob(g.Job) {
				continue
			}
			if written == MaxExportRows {
				cw.Write([]string{fmt.Sprintf("export cut at %d payouts; narrow the filter", MaxExportRows)}) //nolint:errcheck
				page = nil
				break
			}
			paid, expected, diff := amounts(reconcile.GroupRecord{Amount: g.Amount, Currency: redactSecrets(g.Currency),
				TiedOut: g.TiedOut, ExpectedKnown: g.ExpectedKnown, Expected: g.Expected})
			expMinor := ""
			if g.TiedOut && g.ExpectedKnown {
				expMinor = strconv.FormatInt(g.Expected, 10)
			}
			held := ""
			if g.TiedOut {
				held = strconv.FormatBool(g.Held)
			}
			// The numbers are the console's own: never a formula, and a negative one stays a
			// number.
			cw.Write([]string{x(g.Job), x(g.Account), x(g.ID), x(g.Status), groupState(g), x(g.Currency), safetext.CSVCell(paid),
				safetext.CSVCell(expected), safetext.CSVCell(diff), strconv.FormatInt(g.Amount, 10), expMinor, strconv.Itoa(g.Members),
				strconv.Itoa(g.Findings), strconv.Itoa(g.Unmatched), held, at(g.TiedOutAt), at(g.SeenAt)}) //nolint:errcheck
			written++
		}
		if len(page) < q.Limit {
			break
		}
		q.BeforeSeq = page[len(page)-1].Seq
	}
	cw.Flush()
	c.csvDone(r, cw)
}
