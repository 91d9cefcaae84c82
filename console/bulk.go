package console

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/reconcilekit/reconcile"
)

// bulkPage is the data of the page that reports a bulk resolution.
type bulkPage struct {
	Resolution string
	Results    []bulkResult
	Resolved   int
	ListURL    string
}

type bulkResult struct {
	ID      int64
	URL     string
	Kind    string
	Outcome string
	OK      bool
}

// resolveSelected resolves the findings selected on the list (POST /resolve: id, repeated,
// resolution, note) with one resolution and note, each through Store.ResolveFinding on its
// own, so each gets its own event in its history. Everything is checked before anything is
// changed: the form and its token, the resolution, the note, that every finding is one of the
// console's, and that a finding of a kind that involves money has a note. A finding resolved
// meanwhile (by someone else, or a repair) is reported and left as it is.
func (c *Console) resolveSelected(w http.ResponseWriter, r *http.Request) {
	if !c.post(w, r) || !c.form(w, r) {
		return
	}
	var ids []int64
	for _, s := range r.PostForm["id"] {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			c.fail(w, r, http.StatusBadRequest, "Bad finding id", "A finding id is a positive number.")
			return
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	switch {
	case len(ids) == 0:
		c.fail(w, r, http.StatusBadRequest, "Nothing selected", "Select the findings to resolve with the boxes in the list's first column.")
		return
	case len(ids) > MaxPageSize:
		c.fail(w, r, http.StatusBadRequest, "Too many findings", fmt.Sprintf("At most %d findings can be resolved at once.", MaxPageSize))
		return
	}
	as, n, ok := c.resolutionForm(w, r)
	if !ok {
		return
	}
	root := rootOf(r.URL.EscapedPath())
	kinds := make([]string, len(ids))
	var money []string
	for i, id := range ids {
		d, ok := c.ownFinding(w, r, id)
		if !ok {
			return
		}
		kinds[i] = redactSecrets(d.Kind)
		if c.needsNote(d.Kind, n) != "" {
			money = append(money, fmt.Sprintf("#%d (%s)", id, kinds[i]))
		}
	}
	if len(money) > 0 {
		c.fail(w, r, http.StatusBadRequest, "Note required",
			"A note is required to resolve findings of kinds that involve money: "+strings.Join(money, ", ")+
				". Say how they were settled or why the difference is accepted. Nothing was changed.")
		return
	}
	data := bulkPage{Resolution: as, ListURL: root + "findings"}
	for i, id := range ids {
		res := bulkResult{ID: id, URL: findingURL(root, id), Kind: kinds[i]}
		// The actor is the authenticated one, never a form field.
		err := c.store.ResolveFinding(r.Context(), id, reconcile.Resolution{As: as, By: actor(r), Note: n})
		switch {
		case err == nil:
			res.OK, res.Outcome = true, "resolved as "+as
			data.Resolved++
			c.log.InfoContext(r.Context(), "console: finding resolved", slog.Int64("finding", id), slog.String("actor", actor(r)), slog.String("resolution", as))
		case errors.Is(err, reconcile.ErrAlreadyResolved):
			res.Outcome = "resolved already (by someone else or a repair); left as it was"
		case errors.Is(err, reconcile.ErrFindingNotFound):
			res.Outcome = "no such finding"
		default:
			c.log.ErrorContext(r.Context(), "console: store failed", slog.String("op", "resolve the finding"), slog.Int64("finding", id), slog.String("error", err.Error()))
			res.Outcome = "not resolved: the store failed (the error was logged)"
		}
		data.Results = append(data.Results, res)
	}
	if data.Resolved > 0 {
		c.forget()
	}
	c.render(w, r, http.StatusOK, "bulk", fmt.Sprintf("Resolved %d of %d findings", data.Resolved, len(ids)), data)
}
