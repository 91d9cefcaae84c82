package reconcile

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// PlanInput describes a job's schedule: how many rows, how fast they are checked, how fast new
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
//
// A cycle covers the rows present when it starts (Cursor.End) and then ends, so its time
// depends on N alone: the rows that arrive meanwhile are the next cycle's. A row present for a
// whole cycle is checked within CycleTime of the cycle's start. A row that arrives during a
// cycle waits for the next one; if its key sorts after the others' (a serial id, a creation
// time), it is checked at that cycle's end: MaxLag.
type Plan struct {
	// RowsPerHour is the rate rows are checked at: the schedule's B×R, or the rate budget's
	// 3600·RequestsPerSecond/CallsPerRow, whichever is lower.
	RowsPerHour float64 `json:"rows_per_hour"`
	// BoundBy names the lower one: "schedule" or "rate budget".
	BoundBy string `json:"bound_by"`
	// KeepsUp is false when new rows arrive as fast as rows are checked (G ≥ RowsPerHour):
	// every cycle still ends, but each is longer than the one before, without bound.
	KeepsUp bool `json:"keeps_up"`
	// CycleTime is the time a cycle over the N rows present now takes: (⌊N/B⌋+1)/R on a
	// schedule (the last batch is short, and ends the cycle), N·CallsPerRow/RequestsPerSecond
	// on a rate budget, whichever is longer.
	CycleTime time.Duration `json:"-"`
	// MaxLag is the longest a row goes unchecked: CycleTime without new rows, and
	// CycleTime·(2 + G/RowsPerHour) with them (the rest of the cycle under way, then the whole
	// next cycle, which is longer by the rows that arrived). The largest Duration when the
	// checks do not keep up. It assumes every ask is answered: a row answered Unavailable (or
	// behind a rate limit) waits for the next cycle, so each such answer adds up to a cycle to
	// that row's lag. The health lag check measures the real lag; this is the plan's floor.
	MaxLag time.Duration `json:"-"`
	// MeetsSLO reports that every row is checked within LagSLO: MaxLag ≤ LagSLO.
	MeetsSLO bool `json:"meets_slo"`
	// Verdict is the plan in one plain sentence.
	Verdict string `json:"verdict"`
}

// PlanSchedule computes the cycle time of a schedule and says whether it can meet the lag SLO:
// the lag a schedule predicts, where a CoverageReader measures the lag the rows have.
func PlanSchedule(in PlanInput) (Plan, error) {
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
	var hours float64 // the cycle time
	if in.BatchesPerHour > 0 {
		p.RowsPerHour, p.BoundBy = float64(in.BatchSize)*in.BatchesPerHour, "schedule"
		hours = float64(in.Rows/int64(in.BatchSize)+1) / in.BatchesPerHour
	}
	if in.RequestsPerSecond > 0 {
		if budget := 3600 * in.RequestsPerSecond / in.CallsPerRow; budget < p.RowsPerHour {
			p.RowsPerHour, p.BoundBy = budget, "rate budget"
		}
		hours = max(hours, float64(in.Rows)/(3600*in.RequestsPerSecond/in.CallsPerRow))
	}
	p.KeepsUp = p.RowsPerHour > in.NewRowsPerHour
	lagHours := hours
	switch {
	case !p.KeepsUp:
		lagHours = math.Inf(1)
	case in.NewRowsPerHour > 0:
		lagHours = hours * (2 + in.NewRowsPerHour/p.RowsPerHour)
	}
	// Judged in hours before converting: a cycle of millions of hours would overflow a
	// Duration (and come out negative); it is capped at the largest one for display.
	p.CycleTime, p.MaxLag = hoursToDuration(hours), hoursToDuration(lagHours)
	p.MeetsSLO = lagHours <= in.LagSLO.Hours()
	switch {
	case !p.KeepsUp:
		p.Verdict = fmt.Sprintf("the checks fall behind: %.0f rows an hour are checked (%s) and %.0f new rows arrive an hour, so each cycle (%s now) is longer than the last",
			p.RowsPerHour, p.BoundBy, in.NewRowsPerHour, p.CycleTime)
	case p.MeetsSLO:
		p.Verdict = fmt.Sprintf("a cycle takes %s (%s-bound) and no row goes unchecked longer than %s, within the lag SLO of %s",
			p.CycleTime, p.BoundBy, p.MaxLag, in.LagSLO)
	default:
		p.Verdict = fmt.Sprintf("a cycle takes %s (%s-bound) and a row may go unchecked for %s, longer than the lag SLO of %s: the SLO will be missed",
			p.CycleTime, p.BoundBy, p.MaxLag, in.LagSLO)
	}
	return p, nil
}

// hoursToDuration converts h hours to a Duration rounded to the second, capped at the largest.
func hoursToDuration(h float64) time.Duration {
	if h >= float64(math.MaxInt64)/float64(time.Hour) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(h * float64(time.Hour)).Round(time.Second)
}
