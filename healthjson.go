package reconcile

import (
	"encoding/json"
	"fmt"
	"time"
)

// The JSON form of the health types, for the health endpoint (HealthHandler), command-line
// tools and dashboards, is their field tags: snake_case names, times in RFC 3339, times that
// are not set left out. The methods below add what tags cannot say: each duration twice (as
// seconds, a number, for machines, and as Go writes it, "1h30m0s", for people), every time in
// UTC, and open findings and lanes as {} and [] rather than null. Health and Check need
// nothing beyond their tags.

// durationJSON is a Duration in its two JSON fields; the names are the caller's.
func durationJSON(d time.Duration) (float64, string) { return d.Seconds(), d.String() }

// MarshalJSON writes the status in its JSON form: its tags, with the lag as lag_seconds and lag,
// and the stale threshold, when the store says it, as stale_after_seconds and stale_after.
func (s Status) MarshalJSON() ([]byte, error) {
	type plain Status // the fields and tags, without this method
	p := plain(s)
	for _, t := range []*time.Time{&p.Now, &p.CycleStartedAt, &p.LastCycleCompletedAt, &p.LastBatchAt, &p.OldestOpenFinding, &p.LastFailureAt} {
		*t = utc(*t)
	}
	if p.OpenFindings == nil {
		p.OpenFindings = map[string]int{}
	}
	if p.Lanes == nil {
		p.Lanes = []LaneStatus{}
	}
	w := struct {
		plain
		LagSeconds        float64  `json:"lag_seconds"`
		Lag               string   `json:"lag"`
		StaleAfterSeconds *float64 `json:"stale_after_seconds,omitempty"`
		StaleAfter        string   `json:"stale_after,omitempty"`
	}{plain: p}
	w.LagSeconds, w.Lag = durationJSON(s.Lag)
	if s.StaleAfter != 0 {
		secs, text := durationJSON(s.StaleAfter)
		w.StaleAfterSeconds, w.StaleAfter = &secs, text
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the JSON form MarshalJSON writes.
func (s *Status) UnmarshalJSON(b []byte) error {
	type plain Status
	var w struct {
		plain
		LagSeconds        float64 `json:"lag_seconds"`
		Lag               string  `json:"lag"`
		StaleAfterSeconds float64 `json:"stale_after_seconds"`
		StaleAfter        string  `json:"stale_after"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	lag, err := durationOf("lag", w.Lag, w.LagSeconds)
	if err != nil {
		return err
	}
	staleAfter, err := durationOf("stale_after", w.StaleAfter, w.StaleAfterSeconds)
	if err != nil {
		return err
	}
	*s = Status(w.plain)
	s.Lag, s.StaleAfter = lag, staleAfter
	if len(s.Lanes) == 0 {
		s.Lanes = nil // as stores report a job without lanes
	}
	return nil
}

// MarshalJSON writes the lane's status in its JSON form: its tags, times in UTC.
func (l LaneStatus) MarshalJSON() ([]byte, error) {
	type plain LaneStatus
	p := plain(l)
	for _, t := range []*time.Time{&p.CreatedAt, &p.LastRunAt, &p.LastEndAt, &p.GapAt, &p.LastFailureAt} {
		*t = utc(*t)
	}
	return json.Marshal(p)
}

// MarshalJSON writes the plan in its JSON form: its tags, with cycle_time_seconds and
// cycle_time, max_lag_seconds and max_lag. A MaxLag of the largest Duration (the checks do not
// keep up) is written as such: about 292 years.
func (p Plan) MarshalJSON() ([]byte, error) {
	type plain Plan
	w := struct {
		plain
		CycleTimeSeconds float64 `json:"cycle_time_seconds"`
		CycleTime        string  `json:"cycle_time"`
		MaxLagSeconds    float64 `json:"max_lag_seconds"`
		MaxLag           string  `json:"max_lag"`
	}{plain: plain(p)}
	w.CycleTimeSeconds, w.CycleTime = durationJSON(p.CycleTime)
	w.MaxLagSeconds, w.MaxLag = durationJSON(p.MaxLag)
	return json.Marshal(w)
}

// UnmarshalJSON reads the JSON form MarshalJSON writes.
func (p *Plan) UnmarshalJSON(b []byte) error {
	type plain Plan
	var w struct {
		plain
		CycleTimeSeconds float64 `json:"cycle_time_seconds"`
		CycleTime        string  `json:"cycle_time"`
		MaxLagSeconds    float64 `json:"max_lag_seconds"`
		MaxLag           string  `json:"max_lag"`
	}
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
	*p = Plan(w.plain)
	p.CycleTime, p.MaxLag = cycle, maxLag
	return nil
}

// utc is t in UTC, so that every time in the JSON form reads alike; the zero time stays zero.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// durationOf reads a duration from its text, exact to the nanosecond, or else from its seconds.
func durationOf(name, text string, seconds float64) (time.Duration, error) {
	if text == "" {
		return time.Duration(seconds * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return 0, fmt.Errorf("reconcile: %s: %w", name, err)
	}
	return d, nil
}
