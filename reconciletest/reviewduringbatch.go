package reconciletest

import (
	"context"
	"testing"

	"github.com/reconcilekit/reconcile"
)

// A person deciding about a finding while a batch that judges its row waits on the external
// system: the commit, its row in sync, closes the finding only if it is open when the commit
// runs, and so once. The person's resolution stands; a finding the person reopened is closed
// as cleared.

// reviewDuringBatchTests are the suite's cases for a person's decisions between a batch's read
// and its commit.
var reviewDuringBatchTests = []struct {
	name string
	fn   func(t *testing.T, f Fixture)
}{
	{"a finding a person resolves while its row's batch waits keeps the person's resolution, resolved once", testResolvedDuringBatch},
	{"a finding a person resolves and reopens while its row's batch waits is closed as cleared by the commit, its row in sync", testReopenedDuringBatch},
}

// openRowFinding opens a paid_locally_not_externally finding of row 1 (of rows 1 and 2, paid)
// and returns it, and the job's config, whose gateway now says both rows are in sync.
func openRowFinding(t *testing.T, f Fixture) (reconcile.Finding, reconcile.Config[string, string], *Gateway) {
	t.Helper()
	f.Insert(t, paidRow(1), paidRow(2))
	gw := NewGateway(map[string]string{"pi_1": "canceled", "pi_2": "succeeded"})
	cfg := Config(f, "sweep", gw, 10)
	Cycle(t, cfg, 3)
	fs := Findings(t, f.Reviewer(), "sweep")
	if len(fs) != 1 || !fs[0].Open() || fs[0].RecordID != "1" {
		t.Fatalf("findings %+v; want row 1's, open", fs)
	}
	gw.Set("pi_1", "succeeded")
	return fs[0], cfg, gw
}

// resolutions returns the resolved and reopened events of finding id.
func resolutions(t *testing.T, f Fixture, id int64) (resolved, reopened []reconcile.FindingEvent) {
	t.Helper()
	d, err := f.Reviewer().Finding(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range d.History {
		switch e.Action {
		case reconcile.ActionResolved:
			resolved = append(resolved, e)
		case reconcile.ActionReopened:
			reopened = append(reopened, e)
		}
	}
	return resolved, reopened
}

func testResolvedDuringBatch(t *testing.T, f Fixture) {
	ctx := context.Background()
	fd, cfg, gw := openRowFinding(t, f)
	cfg.Gateway = &callHook{Gateway: gw, id: "pi_1", fn: func() {
		if err := f.Reviewer().ResolveFinding(ctx, fd.ID, reconcile.Resolution{As: reconcile.ResolutionFixed, By: "alice", Note: "by hand"}); err != nil {
			t.Error(err)
		}
	}}
	if _, err := reconcile.RunBatch(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	d, err := f.Reviewer().Finding(ctx, fd.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Open() || d.Resolution != reconcile.ResolutionFixed || d.ResolvedBy != "alice" {
		t.Errorf("finding %+v; want resolved as fixed by alice", d.Finding)
	}
	if resolved, _ := resolutions(t, f, fd.ID); len(resolved) != 1 {
		t.Errorf("%d resolved events %+v; want the person's alone", len(resolved), resolved)
	}
	if fs := Findings(t, f.Reviewer(), "sweep"); len(fs) != 1 {
		t.Errorf("findings %+v; want the one", fs)
	}
}

func testReopenedDuringBatch(t *testing.T, f Fixture) {
	ctx := context.Background()
	fd, cfg, gw := openRowFinding(t, f)
	cfg.Gateway = &callHook{Gateway: gw, id: "pi_1", fn: func() {
		if err := f.Reviewer().ResolveFinding(ctx, fd.ID, reconcile.Resolution{As: reconcile.ResolutionFixed, By: "alice"}); err != nil {
			t.Error(err)
		}
		if err := f.Reviewer().ReopenFinding(ctx, fd.ID, "alice", "not fixed after all"); err != nil {
			t.Error(err)
		}
	}}
	if _, err := reconcile.RunBatch(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	d, err := f.Reviewer().Finding(ctx, fd.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Open() || d.Resolution != reconcile.ResolutionCleared || d.ResolvedBy != reconcile.ResolvedByReconciler {
		t.Errorf("finding %+v; want cleared by the reconciler: its row is in sync", d.Finding)
	}
	resolved, reopened := resolutions(t, f, fd.ID)
	if len(resolved) != 2 || len(reopened) != 1 || resolved[1].Actor != reconcile.ResolvedByReconciler {
		t.Errorf("history: %d resolved %+v, %d reopened; want the person's, the reconciler's, and one reopening", len(resolved), resolved, len(reopened))
	}
}
