package memstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/reconciletest"
)

type fixture struct {
	s *memstore.Store[int64, string]
}

func (f fixture) Store() reconcile.Store[string] { return f.s }

func (f fixture) Insert(t testing.TB, rows ...reconciletest.Row) {
	for _, r := range rows {
		var created time.Time // the store's clock at Put
		updated := time.Now().Add(-time.Hour)
		if r.Recent {
			updated = time.Now()
		}
		if r.UpdatedAhead > 0 {
			updated = time.Now().Add(r.UpdatedAhead)
		}
		if r.CreatedAhead > 0 {
			created = time.Now().Add(r.CreatedAhead)
		}
		f.s.Put(memstore.Row[int64, string]{Key: r.ID, ExternalID: r.ExternalID, Local: r.Local, UpdatedAt: updated, CreatedAt: created})
	}
}

func (f fixture) Delete(t testing.TB, ids ...int64) {
	for _, id := range ids {
		f.s.Delete(id)
	}
}

func (f fixture) Verified(t testing.TB, job string, id int64) (time.Time, string, bool) {
	o, ok := f.s.Observation(job, strconv.FormatInt(id, 10))
	return o.VerifiedAt, o.External, ok
}

func (f fixture) Reviewer() reconcile.Reviewer { return f.s }

func (f fixture) Commands(t testing.TB, job string) []reconcile.Command {
	var out []reconcile.Command
	for _, c := range f.s.Commands() {
		if c.Job == job {
			out = append(out, c.Command)
		}
	}
	return out
}

func TestConformance(t *testing.T) {
	reconciletest.Run(t, func(t *testing.T) reconciletest.Fixture {
		return fixture{memstore.New[int64, string](memstore.Options{})}
	})
}

func TestStringKeysKeepTheirOrder(t *testing.T) {
	s := memstore.New[string, string](memstore.Options{})
	for _, k := range []string{"b", "a c", `d"e`, "a"} {
		s.Put(memstore.Row[string, string]{Key: k, ExternalID: "x_" + k, Local: "paid", UpdatedAt: time.Now().Add(-time.Hour)})
	}
	var seen []string
	gw := reconcile.GatewayFunc[string](func(_ context.Context, id string) (string, error) { seen = append(seen, id); return "succeeded", nil })
	cfg := reconcile.Config[string, string]{Job: "j", Source: s, Sink: s, Gateway: gw, Classifier: reconciletest.Classifier(), BatchSize: 1}
	reconciletest.Cycle(t, cfg, 10)
	want := []string{"x_a", "x_a c", "x_b", `x_d"e`}
	if len(seen) != len(want) {
		t.Fatalf("asked %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("asked %v, want %v", seen, want)
		}
	}
}

func TestNegativeGraceTurnsGraceOffEvenForAFutureUpdatedAt(t *testing.T) {
	s := memstore.New[int64, string](memstore.Options{})
	// Changed a minute ahead of the store's clock, within reconcile.MaxClockSkew.
	s.Put(memstore.Row[int64, string]{Key: 1, ExternalID: "pi_1", Local: "paid", UpdatedAt: time.Now().Add(time.Minute)})
	gw := reconciletest.NewGateway(map[string]string{"pi_1": "succeeded"})
	rep, err := reconcile.RunBatch(context.Background(), reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s,
		Gateway: gw, Classifier: reconciletest.Classifier(), Grace: -1})
	if err != nil || rep.Verdicts[reconcile.InSync] != 1 {
		t.Fatalf("verdicts %v (%v) with the grace period off; want the row asked and in sync", rep.Verdicts, err)
	}
	res, err := s.Match(context.Background(), reconcile.MatchRequest{Job: "sweep", ExternalIDs: []string{"pi_1"}})
	if err != nil || len(res.Rows) != 1 || res.Rows[0].Recent {
		t.Fatalf("Match with no grace: %+v, %v; want the row not recent", res.Rows, err)
	}
}

func TestDeletedRowsLeaveNoFindingsBehind(t *testing.T) {
	s := memstore.New[int64, string](memstore.Options{})
	for i := int64(1); i <= 3; i++ {
		s.Put(memstore.Row[int64, string]{Key: i, ExternalID: "pi_" + strconv.FormatInt(i, 10), Local: "pending", UpdatedAt: time.Now().Add(-time.Hour)})
	}
	// Row 3 is deleted while its batch asks the gateway.
	gw := reconcile.GatewayFunc[string](func(_ context.Context, id string) (string, error) {
		if id == "pi_3" {
			s.Delete(3)
		}
		return "succeeded", nil
	})
	cfg := reconcile.Config[string, string]{Job: "sweep", Source: s, Sink: s, Gateway: gw, Classifier: reconciletest.Classifier()}
	rep, err := reconcile.RunBatch(context.Background(), cfg)
	if err != nil || rep.NewFindings != 2 || rep.NewCommands != 2 {
		t.Fatalf("report %+v (%v); want findings and commands for rows 1 and 2 only", rep, err)
	}
	if _, ok := s.Observation("sweep", "3"); ok {
		t.Fatal("an observation of the deleted row 3 was written")
	}
	// Row 2 is deleted later: the wrap closes its finding and drops its observation.
	s.Delete(2)
	if rep, err := reconcile.RunBatch(context.Background(), cfg); err != nil || !rep.Wrapped {
		t.Fatalf("second batch %+v (%v); want the wrap", rep, err)
	}
	for _, f := range reconciletest.Findings(t, s, "") {
		switch {
		case f.RecordID == "1" && !f.Open():
			t.Fatalf("finding of row 1 closed: %+v", f)
		case f.RecordID == "2" && (f.Open() || f.Resolution != reconcile.ResolutionRowDeleted || f.ResolvedBy != reconcile.ResolvedByReconciler):
			t.Fatalf("finding of deleted row 2: %+v; want resolved as row_deleted by the reconciler", f)
		}
	}
	if _, ok := s.Observation("sweep", "2"); ok {
		t.Fatal("the deleted row 2's observation is still there after the wrap")
	}
	if _, ok := s.Observation("sweep", "1"); !ok {
		t.Fatal("row 1's observation is gone")
	}
}

// Arbitrary gateway answers cost their rows one finding each, with a bounded, valid kind.
func FuzzAnswers(f *testing.F) {
	reconciletest.FuzzAnswers(f, fixture{memstore.New[int64, string](memstore.Options{})})
}
