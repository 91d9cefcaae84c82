package reconcile

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// PlanInput describes a job's coverage: how many rows, how fast they are checked, how fast new
// ones arrive.
type PlanInput struct {
	// Rows is the number of rows the job covers (N).
	Rows int64
	// BatchSize (B) and BatchesPerHour (R) are the schedule: B×R rows an hour. BatchesPerHour
	// zero means batches run back to back, bounded only by the rate budget.
	BatchSize      int
	BatchesPerHour float64
	// NewRowsPerHour (G) is the arrival rate of rows the job will also have to check.
	NewRowsPerHour float64
	// RequestsPerSecond is the external API budget; zero means unbounded. CallsPerRow is what
	// a row costs in calls: 1 per-object (the default), about 0.01 with a bulk gateway.
	RequestsPerSecond float64
	CallsPerRow       float64
	// LagSLO is the lag the plan must meet. Zero means DefaultLagSLO.
	LagSLO time.Duration
}

// Plan is what a schedule guarantees.
type Plan struct {
	// RowsPerHour is the rate rows are checked at: the schedule's B×R, or the rate budget's
	// 3600·RequestsPerSecond/CallsPerRow, whichever is lower.
	RowsPerHour float64
	// BoundBy names the lower one: "schedule" or "rate budget".
	BoundBy string
	// Completes is false when new rows arrive as fast as rows are checked: a cycle never ends.
	Completes bool
	// CycleTime is N / (rows per hour − G): the time a full cycle takes. Zero when it never
	// completes.
	CycleTime time.Duration
	// MeetsSLO reports that a row is checked at least once within LagSLO: CycleTime ≤ LagSLO.
	MeetsSLO bool
	// Verdict is the plan in one plain sentence.
	Verdict string
}

// PlanCoverage computes the cycle time of a schedule and says whether it can meet the lag SLO.
// The worst lag a row sees is about one cycle time, so a cycle slower than the SLO misses it.
func PlanCoverage(in PlanInput) (Plan, error) {
	for _, f := range []float64{in.BatchesPerHour, in.NewRowsPerHour, in.RequestsPerSecond, in.CallsPerRow} {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return Plan{}, fmt.Errorf("reconcile: plan: input %+v is not finite", in)
		}
	}
	switch {
	case in.Rows < 0 || in.BatchSize < 0 || in.BatchesPerHour < 0 || in.NewRowsPerHour < 0 || in.RequestsPerSecond < 0 || in.CallsPerRow < 0:
		return Plan{}, fmt.Errorf("reconcile: plan: negative input %+v", in)
	case in.BatchesPerHour > 0 && in.BatchSize == 0:
		return Plan{}, errors.New("reconcile: plan: BatchesPerHour is set but BatchSize is zero")
	case in.BatchesPerHour == 0 && in.RequestsPerSecond == 0:
		return Plan{}, errors.New("reconcile: plan: neither a schedule (BatchSize, BatchesPerHour) nor a rate budget (RequestsPerSecond) bounds the checking rate")
	}
	if in.CallsPerRow == 0 {
		in.CallsPerRow = 1
	}
	if in.LagSLO == 0 {
		in.LagSLO = DefaultLagSLO
	}
	p := Plan{RowsPerHour: math.Inf(1)}
	if in.BatchesPerHour > 0 {
		p.RowsPerHour, p.BoundBy = float64(in.BatchSize)*in.BatchesPerHour, "schedule"
	}
	if in.RequestsPerSecond > 0 {
		if budget := 3600 * in.RequestsPerSecond / in.CallsPerRow; budget < p.RowsPerHour {
			p.RowsPerHour, p.BoundBy = budget, "rate budget"
		}
	}
	net := p.RowsPerHour - in.NewRowsPerHour
	if net <= 0 {
		p.Verdict = fmt.Sprintf("a cycle never completes: %.0f rows an hour are checked (%s) and %.0f new rows arrive an hour",
			p.RowsPerHour, p.BoundBy, in.NewRowsPerHour)
		return p, nil
	}
	p.Completes = true
	hours := float64(in.Rows) / net
	// Judged in hours before converting: a cycle of millions of hours would overflow a
	// Duration (and come out negative); it is capped at the largest one for display.
	p.MeetsSLO = hours <= in.LagSLO.Hours()
	if hours >= float64(math.MaxInt64)/float64(time.Hour) {
		p.CycleTime = time.Duration(math.MaxInt64)
	} else {
		p.CycleTime = time.Duration(hours * float64(time.Hour)).Round(time.Second)
	}
	if p.MeetsSLO {
		p.Verdict = fmt.Sprintf("a cycle takes %s (%s-bound), within the lag SLO of %s", p.CycleTime, p.BoundBy, in.LagSLO)
	} else {
		p.Verdict = fmt.Sprintf("a cycle takes %s (%s-bound), longer than the lag SLO of %s: the SLO will be missed", p.CycleTime, p.BoundBy, in.LagSLO)
	}
	return p, nil
}
