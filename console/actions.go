package console

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/reconcilekit/reconcile"
)

// maxForm bounds a posted form's body.
const maxForm = 64 << 10

// writeForm checks what every write to a finding needs, in this order: POST (405), a finding
// id (400), a form that parses (400) and carries a valid token for this actor (403). It
// answers the request itself when one fails.
func (c *Console) writeForm(w http.ResponseWriter, r *http.Request) (int64, bool) {
	if !c.post(w, r) {
		return 0, false
	}
	id, err := findingID(r)
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "Bad finding id", err.Error())
		return 0, false
	}
	return id, c.form(w, r)
}

// post answers 405 and returns false unless r is a POST.
func (c *Console) post(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		c.fail(w, r, http.StatusMethodNotAllowed, "Method not allowed", "Changes are made with the buttons on the console's pages.")
		return false
	}
	return true
}

// form parses r's form (400 if it cannot) and checks its token for this actor (403).
func (c *Console) form(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, http.StatusBadRequest, "Bad form", "The form could not be read.")
		return false
	}
	// PostForm, not Form: a token in the query string would end up in logs and histories.
	if !c.csrf.valid(actor(r), r.PostForm.Get(tokenField), time.Now()) {
		c.log.WarnContext(r.Context(), "console: form token refused", slog.String("path", clip(r.URL.Path)), slog.String("actor", clip(actor(r))))
		c.fail(w, r, http.StatusForbidden, "Form expired or forged",
			"The form's security token is missing, expired or not yours. Reload the page and try again.")
		return false
	}
	return true
}

// note reads and checks the form's note.
func note(r *http.Request) (string, error) {
	n := strings.TrimSpace(r.PostForm.Get("note"))
	if len(n) > maxNote || !plainText(n, true) {
		return "", userError(fmt.Sprintf("The note must be valid text of at most %d bytes, without control characters other than tabs and line breaks.", maxNote))
	}
	return n, nil
}

// resolutionForm reads a resolve form's resolution and note, for one finding or many; it
// answers 400 itself and returns false unless the resolution is one offered and the note is
// acceptable.
func (c *Console) resolutionForm(w http.ResponseWriter, r *http.Request) (as, n string, ok bool) {
	as = r.PostForm.Get("resolution")
	if !slices.Contains(c.resolutions, as) {
		c.fail(w, r, http.StatusBadRequest, "Bad resolution",
			"Choose one of the resolutions offered: "+strings.Join(c.resolutions, ", ")+".")
		return "", "", false
	}
	n, err := note(r)
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "Bad note", err.Error())
		return "", "", false
	}
	return as, n, true
}

// ownFinding reads finding id, and answers 404 (or 500) itself and returns false unless it
// exists and is of one of the console's jobs: a write to another job's finding is refused as
// if it did not exist. Without Config.Jobs (and a store that lists none) every job is the
// console's.
func (c *Console) ownFinding(w http.ResponseWriter, r *http.Request, id int64) (reconcile.FindingDetail, bool) {
	d, err := c.store.Finding(r.Context(), id)
	switch {
	case errors.Is(err, reconcile.ErrFindingNotFound) || (err == nil && !c.forJob(d.Job)):
		c.fail(w, r, http.StatusNotFound, "No such finding", fmt.Sprintf("There is no finding %d.", id))
		return d, false
	case err != nil:
		c.storeFailed(w, r, "read the finding", err)
		return d, false
	}
	return d, true
}

// needsNote is the message refusing to resolve a finding of kind without a note, or "" if
// it needs none: a kind that involves money does (reconcile.KindInfo.Money).
func (c *Console) needsNote(kind, note string) string {
	if note != "" || !c.kinds.money(kind) {
		return ""
	}
	return fmt.Sprintf("A note is required to resolve a finding of kind %s, which involves money: say how it was settled or why the difference is accepted.", redactSecrets(kind))
}

// done redirects (303) from a write back to the finding's page; relative, for any prefix.
func done(w http.ResponseWriter, id int64) {
	w.Header().Set("Location", findingURL("../../", id))
	w.WriteHeader(http.StatusSeeOther)
}

func (c *Console) resolve(w http.ResponseWriter, r *http.Request) {
	id, ok := c.writeForm(w, r)
	if !ok {
		return
	}
	as, n, ok := c.resolutionForm(w, r)
	if !ok {
		return
	}
	d, ok := c.ownFinding(w, r, id)
	if !ok {
		return
	}
	if msg := c.needsNote(d.Kind, n); msg != "" {
		c.failWithLink(w, r, http.StatusBadRequest, "Note required", msg, findingURL("../../", id), "Back to the finding")
		return
	}
	// The actor is the authenticated one, never a form field.
	err := c.store.ResolveFinding(r.Context(), id, reconcile.Resolution{As: as, By: actor(r), Note: n})
	switch {
	case errors.Is(err, reconcile.ErrFindingNotFound):
		c.fail(w, r, http.StatusNotFound, "No such finding", fmt.Sprintf("There is no finding %d.", id))
		return
	case errors.Is(err, reconcile.ErrAlreadyResolved):
		c.failWithLink(w, r, http.StatusConflict, "Resolved already",
			fmt.Sprintf("Finding %d was resolved already, perhaps by someone else or by a repair. Nothing was changed.", id),
			findingURL("../../", id), "See who resolved it")
		return
	case err != nil:
		c.storeFailed(w, r, "resolve the finding", err)
		return
	}
	c.forget()
	c.log.InfoContext(r.Context(), "console: finding resolved", slog.Int64("finding", id), slog.String("actor", actor(r)), slog.String("resolution", as))
	done(w, id)
}

func (c *Console) reopen(w http.ResponseWriter, r *http.Request) {
	id, ok := c.writeForm(w, r)
	if !ok {
		return
	}
	n, err := note(r)
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "Bad note", err.Error())
		return
	}
	if _, ok := c.ownFinding(w, r, id); !ok {
		return
	}
	err = c.store.ReopenFinding(r.Context(), id, actor(r), n)
	switch {
	case errors.Is(err, reconcile.ErrFindingNotFound):
		c.fail(w, r, http.StatusNotFound, "No such finding", fmt.Sprintf("There is no finding %d.", id))
		return
	case errors.Is(err, reconcile.ErrFoundAgain):
		link, text := "", ""
		if newer, ok := c.newerFinding(r, id); ok {
			link, text = findingURL("../../", newer), fmt.Sprintf("Open finding %d", newer)
		}
		c.failWithLink(w, r, http.StatusConflict, "Found again",
			fmt.Sprintf("The drift of finding %d was found again since it was resolved; the newer finding is the open one. Nothing was changed.", id),
			link, text)
		return
	case errors.Is(err, reconcile.ErrAlreadyOpen):
		c.failWithLink(w, r, http.StatusConflict, "Open already",
			fmt.Sprintf("Finding %d is open already. Nothing was changed.", id), findingURL("../../", id), "Back to the finding")
		return
	case err != nil:
		c.storeFailed(w, r, "reopen the finding", err)
		return
	}
	c.forget()
	c.log.InfoContext(r.Context(), "console: finding reopened", slog.Int64("finding", id), slog.String("actor", actor(r)))
	done(w, id)
}

// newerFinding finds the open finding of the same job, record and kind as id, for the page
// that says the drift was found again.
func (c *Console) newerFinding(r *http.Request, id int64) (int64, bool) {
	d, err := c.store.Finding(r.Context(), id)
	if err != nil {
		return 0, false
	}
	fs, err := c.store.ListFindings(r.Context(), reconcile.FindingQuery{Job: d.Job, Kind: d.Kind, RecordID: d.RecordID, State: reconcile.FindingsOpen, Limit: 1})
	if err != nil || len(fs) == 0 {
		return 0, false
	}
	return fs[0].ID, true
}
