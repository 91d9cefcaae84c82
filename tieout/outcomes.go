package tieout

import "github.com/reconcilekit/reconcile"

// Outcomes turns findings into the outcomes a reconcile.LaneSink commits: each names no local
// row (NotARow: its record is a line, a group or a booked id) and is opened once per (job,
// record, kind) (Once: a payout's lines do not change, so a finding a person resolved is not
// opened again when the payout is tied out again). They are made storable (see
// reconcile.StorableOutcomes).
func Outcomes(findings []Finding) []reconcile.Outcome {
	out := make([]reconcile.Outcome, 0, len(findings))
	for _, f := range findings {
		out = append(out, reconcile.Outcome{RecordID: f.Record, ExternalID: f.ExternalID, Local: f.Local, External: f.External,
			Decision: f.Decision, NotARow: true, Once: true})
	}
	reconcile.StorableOutcomes(out)
	return out
}
