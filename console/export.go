package console

import (
	"encoding/csv"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/shared/safetext"
)

// MaxExportRows bounds a CSV export: a filter that selects more is refused (when the store
// counts) or the file ends with a row saying it was cut.
const MaxExportRows = 100_000

// exportPage is how many findings an export reads from the store at a time.
const exportPage = MaxPageSize

// csvHeader are the export's columns.
var csvHeader = []string{"id", "job", "record_id", "external_id", "kind", "meaning", "local_state", "external_state",
	"differences", "detail", "detected_at", "resolved_at", "resolution", "resolved_by", "resolution_note"}

// export streams the findings the list's filter selects as CSV (GET /findings.csv, the
// list's query), reading them from the store a page at a time, its sort order and paging
// aside (oldest first, every page), at most MaxExportRows. Times are in the reviewer's zone,
// RFC 3339. Every text goes through the same redaction as the pages.
func (c *Console) export(w http.ResponseWriter, r *http.Request) {
	f, ok := c.listFilter(w, r)
	if !ok {
		return
	}
	q := c.query(f, time.Now())
	q.AfterID, q.Newest, q.Limit = 0, false, exportPage
	if counter, ok := c.store.(reconcile.FindingCounter); ok {
		n, err := counter.CountFindings(r.Context(), q)
		if err != nil {
			c.storeFailed(w, r, "count the findings", err)
			return
		}
		if n > MaxExportRows {
			c.fail(w, r, http.StatusBadRequest, "Too many findings to export",
				fmt.Sprintf("The filter selects %d findings; an export holds at most %d. Narrow the filter (by job, kind, state or age).", n, MaxExportRows))
			return
		}
	}
	_, loc := c.zones.of(r)
	x := redactSecrets
	at := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.In(loc).Format(time.RFC3339)
	}
	cw := startCSV(w, "findings")
	cw.Write(csvHeader) //nolint:errcheck // the writer keeps its first error, checked at the end
	written := 0
	for {
		page, err := c.store.ListFindings(r.Context(), q)
		if err != nil {
			c.exportFailed(r, cw, "export the findings", err, written)
			break
		}
		for _, fd := range page {
			if !c.forJob(fd.Job) {
				continue
			}
			if written == MaxExportRows {
				cw.Write([]string{fmt.Sprintf("export cut at %d findings; narrow the filter", MaxExportRows)}) //nolint:errcheck
				page = nil
				break
			}
			var diffs []string
			for _, d := range fd.Diffs {
				diffs = append(diffs, x(d.Field)+": "+x(d.Local)+" ≠ "+x(d.External))
			}
			row := []string{strconv.FormatInt(fd.ID, 10), x(fd.Job), x(fd.RecordID), x(fd.ExternalID), x(fd.Kind), c.kinds.meaning(fd.Kind),
				x(fd.Local), x(fd.External), strings.Join(diffs, "; "), x(fd.Detail), at(fd.DetectedAt), at(fd.ResolvedAt),
				x(fd.Resolution), x(fd.ResolvedBy), x(fd.ResolutionNote)}
			for i := range row {
				row[i] = safetext.CSVCell(row[i])
			}
			cw.Write(row) //nolint:errcheck
			written++
		}
		if len(page) < q.Limit {
			break
		}
		q.AfterID = page[len(page)-1].ID
	}
	c.csvDone(r, cw)
}

// startCSV starts a CSV download named name and the time, and returns its writer.
func startCSV(w http.ResponseWriter, name string) *csv.Writer {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`-`+time.Now().UTC().Format("20060102-150405")+`.csv"`)
	return csv.NewWriter(w)
}

// exportFailed ends an export whose store failed after written rows: the status and part of
// the file are sent, so the file says so, and the log says why.
func (c *Console) exportFailed(r *http.Request, cw *csv.Writer, op string, err error, written int) {
	c.log.ErrorContext(r.Context(), "console: store failed", slog.String("op", op), slog.String("error", err.Error()))
	cw.Write([]string{"export failed: the store failed after " + strconv.Itoa(written) + " rows; the error was logged"}) //nolint:errcheck
}

// csvDone flushes an export, logging a write that failed (the client went away).
func (c *Console) csvDone(r *http.Request, cw *csv.Writer) {
	cw.Flush()
	if err := cw.Error(); err != nil {
		c.log.DebugContext(r.Context(), "console: export cut short", slog.String("error", err.Error()))
	}
}
