package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
)

// A finding superseded by a drift of another kind links to the finding that replaced it, and
// that one to the finding it replaced.
func TestASupersededFindingAndItsSuccessorLinkToEachOther(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	old := w.ids["1"]
	ext := map[string]string{}
	for _, r := range sweepRows {
		ext[r.ext] = r.remote
	}
	ext["pi_1TestMissed0001"] = "canceled" // row 1 is still pending: another drift now
	w.cycle(t, "sweep", ext)
	fs, err := w.store.ListFindings(context.Background(), reconcile.FindingQuery{RecordID: "1"})
	if err != nil || len(fs) != 1 || fs[0].ID == old {
		t.Fatalf("open findings of row 1: %+v, %v; want a new one", fs, err)
	}
	successor := fs[0].ID

	body := w.get(t, fmt.Sprintf("/findings/%d", old), "alice")
	for _, want := range []string{
		`<dd id="resolved">`, `as superseded by reconciler</dd>`,
		fmt.Sprintf(`<dt>Superseded by</dt><dd><a href="../findings/%d" id="superseded-by">finding #%d</a></dd>`, successor, successor),
		fmt.Sprintf(`<td>resolved</td><td class="who">reconciler <span class="muted">(repair)</span></td><td>superseded</td><td class="text">superseded by finding %d: `, successor),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the superseded finding's page lacks %q", want)
		}
	}
	body = w.get(t, fmt.Sprintf("/findings/%d", successor), "alice")
	if want := fmt.Sprintf(`<dt>Replaces</dt><dd id="replaces"><a href="../findings/%d">finding #%d</a></dd>`, old, old); !strings.Contains(body, want) {
		t.Errorf("the successor's page lacks %q", want)
	}
	if strings.Contains(body, `id="superseded-by"`) {
		t.Error("the open successor says it was superseded")
	}
}
