package reconcile

import (
	"encoding/json"
	"fmt"
	"time"
)

// The JSON form of the health types, for the health endpoint (HealthHandler), command-line
// tools and dashboards: snake_case names, each duration twice (as seconds, a number, for
// machines, and as Go writes it, "1h30m0s", for people), times in RFC 3339 in UTC, and times
// that are not set left out. Health and Check need nothing more than their field tags; Status,
// LaneStatus and Plan hold durations, so they marshal through the wire types below, which
// their UnmarshalJSON reads back.

// statusJSON is Status on the wire.
type statusJSON struct {
	Job                   string         `json:"job"`
	Now                   time.Time      `json:"now,omitzero"`
	LagSeconds            float64        `json:"lag_seconds"`
	Lag                   string         `json:"lag"`
	Rows                  int64          `json:"rows"`
	NewRowsPerHour        int64          `json:"new_rows_per_hour"`
	CycleStartedAt        time.Time      `json:"cycle_started_at,omitzero"`
	LastCycleCompletedAt  time.Time      `json:"last_cycle_completed_at,omitzero"`
	CyclesCompleted       int64          `json:"cycles_completed"`
	LastBatchAt           time.Time      `json:"last_batch_at,omitzero"`
	LastBatchScanned      int            `json:"last_batch_scanned"`
	LastBatchUnverifiable int            `json:"last_batch_unverifiable"`
	OpenFindings          map[string]int `json:"open_findings"`
	OldestOpenFinding     time.Time      `json:"oldest_open_finding,omitzero"`
	StaleFindings         int            `json:"stale_findings"`
	LastFailureAt         time.Time      `json:"last_failure_at,omitzero"`
	LastFailure           string         `json:"last_failure,omitempty"`
	Lanes                 []LaneStatus   `json:"lanes"`
}

// MarshalJSON writes the status in its JSON form (see HealthHandler).
func (s Status) MarshalJSON() ([]byte, error) {
	w := statusJSON{
		Job: s.Job, Now: utc(s.Now), LagSeconds: s.Lag.Seconds(), Lag: s.Lag.String(), Rows: s.Rows, NewRowsPerHour: s.NewRowsPerHour,
		CycleStartedAt: utc(s.CycleStartedAt), LastCycleCompletedAt: utc(s.LastCycleCompletedAt), CyclesCompleted: s.CyclesCompleted,
		LastBatchAt: utc(s.LastBatchAt), LastBatchScanned: s.LastBatchScanned, LastBatchUnverifiable: s.LastBatchUnverifiable,
		OpenFindings: s.OpenFindings, OldestOpenFinding: utc(s.OldestOpenFinding), StaleFindings: s.StaleFindings,
		LastFailureAt: utc(s.LastFailureAt), LastFailure: s.LastFailure, Lanes: s.Lanes,
	}
	// Always an object and a list, so that readers need not tell null from empty.
	if w.OpenFindings == nil {
		w.OpenFindings = map[string]int{}
	}
	if w.Lanes == nil {
		w.Lanes = []LaneStatus{}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the JSON form MarshalJSON writes.
func (s *Status) UnmarshalJSON(b []byte) error {
	var w statusJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	lag, err := durationOf("lag", w.Lag, w.LagSeconds)
	if err != nil {
		return err
	}
	*s = Status{
		Job: w.Job, Now: w.Now, Lag: lag, Rows: w.Rows, NewRowsPerHour: w.NewRowsPerHour,
		CycleStartedAt: w.CycleStartedAt, LastCycleCompletedAt: w.LastCycleCompletedAt, CyclesCompleted: w.CyclesCompleted,
		LastBatchAt: w.LastBatchAt, LastBatchScanned: w.LastBatchScanned, LastBatchUnverifiable: w.LastBatchUnverifiable,
		OpenFindings: w.OpenFindings, OldestOpenFinding: w.OldestOpenFinding, StaleFindings: w.StaleFindings,
		LastFailureAt: w.LastFailureAt, LastFailure: w.LastFailure, Lanes: w.Lanes,
	}
	if len(s.Lanes) == 0 {
		s.Lanes = nil
	}
	return nil
}

// laneStatusJSON is LaneStatus on the wire.
type laneStatusJSON struct {
	Lane            string    `json:"lane"`
	CreatedAt       time.Time `json:"created_at,omitzero"`
	LastRunAt       time.Time `json:"last_run_at,omitzero"`
	PassesCompleted int64     `json:"passes_completed"`
	LastEndAt       time.Time `json:"last_end_at,omitzero"`
	GapAt           time.Time `json:"gap_at,omitzero"`
	GapReason       string    `json:"gap_reason,omitempty"`
	GapOpen         bool      `json:"gap_open"`
	LastFailureAt   time.Time `json:"last_failure_at,omitzero"`
	LastFailure     string    `json:"last_failure,omitempty"`
}

// MarshalJSON writes the lane's status in its JSON form, times in UTC.
func (l LaneStatus) MarshalJSON() ([]byte, error) {
	return json.Marshal(laneStatusJSON{
		Lane: l.Lane, CreatedAt: utc(l.CreatedAt), LastRunAt: utc(l.LastRunAt), PassesCompleted: l.PassesCompleted,
		LastEndAt: utc(l.LastEndAt), GapAt: utc(l.GapAt), GapReason: l.GapReason, GapOpen: l.GapOpen,
		LastFailureAt: utc(l.LastFailureAt), LastFailure: l.LastFailure,
	})
}

// UnmarshalJSON reads the JSON form MarshalJSON writes.
func (l *LaneStatus) UnmarshalJSON(b []byte) error {
	var w laneStatusJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*l = LaneStatus(w)
	return nil
}

// planJSON is Plan on the wire.
type planJSON struct {
	RowsPerHour      float64 `json:"rows_per_hour"`
	BoundBy          string  `json:"bound_by"`
	KeepsUp          bool    `json:"keeps_up"`
	CycleTimeSeconds float64 `json:"cycle_time_seconds"`
	CycleTime        string  `json:"cycle_time"`
	MaxLagSeconds    float64 `json:"max_lag_seconds"`
	MaxLag           string  `json:"max_lag"`
	MeetsSLO         bool    `json:"meets_slo"`
	Verdict          string  `json:"verdict"`
}

// MarshalJSON writes the plan in its JSON form. A MaxLag of the largest Duration (the checks
// do not keep up) is written as such: about 292 years.
func (p Plan) MarshalJSON() ([]byte, error) {
	return json.Marshal(planJSON{
		RowsPerHour: p.RowsPerHour, BoundBy: p.BoundBy, KeepsUp: p.KeepsUp,
		CycleTimeSeconds: p.CycleTime.Seconds(), CycleTime: p.CycleTime.String(),
		MaxLagSeconds: p.MaxLag.Seconds(), MaxLag: p.MaxLag.String(), MeetsSLO: p.MeetsSLO, Verdict: p.Verdict,
	})
}

// UnmarshalJSON reads the JSON form MarshalJSON writes.
func (p *Plan) UnmarshalJSON(b []byte) error {
	var w planJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	cycle, err := durationOf("cycle_time", w.CycleTime, w.CycleTimeSeconds)
	if err != nil {
		return err
	}
	maxLag, err := durationOf("max_lag", w.MaxLag, w.MaxLagSeconds)
	if err != nil {
		return err
	}
	*p = Plan{RowsPerHour: w.RowsPerHour, BoundBy: w.BoundBy, KeepsUp: w.KeepsUp, CycleTime: cycle, MaxLag: maxLag,
		MeetsSLO: w.MeetsSLO, Verdict: w.Verdict}
	return nil
}

// utc is t in UTC, so that every time in the JSON form reads alike; the zero time stays zero.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// durationOf reads a duration from its string form, exact to the nanosecond, or else from its
// seconds.
func durationOf(name, s string, seconds float64) (time.Duration, error) {
	if s == "" {
		return time.Duration(seconds * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("reconcile: %s: %w", name, err)
	}
	return d, nil
}
