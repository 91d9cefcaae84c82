package reconciletest

import (
	"context"
	"slices"
	"testing"

	"github.com/reconcilekit/reconcile"
)

// externalRecordTests are the guarantees a driver that records findings about external
// records of its own (package tieout: a payout's lines, the payout) relies on, through a lane
// commit of outcomes that name no row (NotARow) and are opened once (Once).
var externalRecordTests = []struct {
	name string
	fn   func(t *testing.T, f Fixture)
}{
	{"findings about external records queue their repair commands once, each kind of a record its own finding", testExternalRecordFindings},
	{"a finding about an external record that a person resolved is not opened again, nor its command queued", testExternalRecordOnce},
}

// externalCommit commits outcomes about external records under job's lane "tieout".
func externalCommit(t *testing.T, s LaneStore, job string, outcomes ...reconcile.Outcome) reconcile.CommitResult {
	t.Helper()
	cur, err := s.ReadLane(context.Background(), job, "tieout")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.CommitLane(context.Background(), reconcile.LaneCommit{Job: job, Lane: "tieout", Cursor: cur, Next: "p", End: true, Outcomes: outcomes})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func external(record, kind, command string) reconcile.Outcome {
	d := reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: kind}
	if command != "" {
		d.Verdict, d.Command = reconcile.Repairable, command
	}
	return reconcile.Outcome{RecordID: record, ExternalID: "src_" + record, Local: "not booked", External: "refund", Decision: d, NotARow: true, Once: true}
}

func testExternalRecordFindings(t *testing.T, f Fixture) {
	s := laneStore(t, f)
	// Record "1" is also a row's id: an outcome that names no row is about the external record.
	f.Insert(t, paidRow(1))
	res := externalCommit(t, s, "payouts",
		external("txn_1", "unbooked_refund", "BookRefund"), external("txn_1", "unbooked_refund", "BookRefund"),
		external("po_1", "payout_failed", "ApplyPayoutFailed"), external("po_1", "payout_sum_mismatch", ""),
		external("1", "unbooked_payment", ""))
	if res.Findings != 4 || res.Commands != 2 {
		t.Errorf("commit opened %d findings and %d commands, want 4 and 2", res.Findings, res.Commands)
	}
	res = externalCommit(t, s, "payouts", external("txn_1", "unbooked_refund", "BookRefund"), external("po_1", "payout_failed", "ApplyPayoutFailed"))
	if res.Findings != 0 || res.Commands != 0 {
		t.Errorf("the same findings again opened %d findings and %d commands, want none", res.Findings, res.Commands)
	}
	var got []string
	for _, fd := range Findings(t, f.Reviewer(), "payouts") {
		got = append(got, fd.RecordID+" "+fd.Kind)
	}
	slices.Sort(got)
	if want := []string{"1 unbooked_payment", "po_1 payout_failed", "po_1 payout_sum_mismatch", "txn_1 unbooked_refund"}; !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	var cmds []string
	for _, c := range f.Commands(t, "payouts") {
		cmds = append(cmds, c.Name+" "+c.RecordID)
	}
	slices.Sort(cmds)
	if want := []string{"ApplyPayoutFailed po_1", "BookRefund txn_1"}; !slices.Equal(cmds, want) {
		t.Errorf("commands %v, want %v", cmds, want)
	}
}

func testExternalRecordOnce(t *testing.T, f Fixture) {
	s := laneStore(t, f)
	externalCommit(t, s, "payouts", external("txn_1", "unbooked_refund", "BookRefund"))
	fs := Findings(t, f.Reviewer(), "payouts")
	if len(fs) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	if err := f.Reviewer().ResolveFinding(context.Background(), fs[0].ID, reconcile.Resolution{As: reconcile.ResolutionFixed, By: "finance", Note: "booked by hand"}); err != nil {
		t.Fatal(err)
	}
	if res := externalCommit(t, s, "payouts", external("txn_1", "unbooked_refund", "BookRefund")); res.Findings != 0 || res.Commands != 0 {
		t.Errorf("after a person resolved it: %d findings, %d commands; want none", res.Findings, res.Commands)
	}
	if n := len(f.Commands(t, "payouts")); n != 1 {
		t.Errorf("%d commands queued, want the first one only", n)
	}
}
