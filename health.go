package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Status is what monitoring needs of one job, as a store reads it (pgstore.Store.Status).
// Times are the store's clock.
type Status struct {
	Job string `json:"job"`
	// Now is the store's clock when the status was read.
	Now time.Time `json:"now,omitzero"`
	// Lag is the primary SLO: the longest any row has gone without being verified,
	// max(now - coalesce(last verified, created_at)) over the job's rows. Unverifiable rows
	// keep their old time, so an outage makes it grow. In JSON: lag_seconds and lag (the
	// Duration's text).
	Lag time.Duration `json:"-"`
	// Rows is the number of rows the job covers.
	Rows int64 `json:"rows"`
	// NewRowsPerHour is the number of rows created in the last hour, for the planner; -1 if
	// the store cannot tell.
	NewRowsPerHour int64 `json:"new_rows_per_hour"`
	// CycleStartedAt is when the current cycle began; zero before the job's first batch.
	CycleStartedAt time.Time `json:"cycle_started_at,omitzero"`
	// LastCycleCompletedAt is zero until a cycle completes.
	LastCycleCompletedAt time.Time `json:"last_cycle_completed_at,omitzero"`
	CyclesCompleted      int64     `json:"cycles_completed"`
	// LastBatchAt, LastBatchScanned and LastBatchUnverifiable describe the last non-empty batch.
	LastBatchAt           time.Time `json:"last_batch_at,omitzero"`
	LastBatchScanned      int       `json:"last_batch_scanned"`
	LastBatchUnverifiable int       `json:"last_batch_unverifiable"`
	// OpenFindings counts open findings by kind.
	OpenFindings map[string]int `json:"open_findings"`
	// OldestOpenFinding is the detection time of the oldest open finding; zero if none.
	OldestOpenFinding time.Time `json:"oldest_open_finding,omitzero"`
	// StaleFindings counts the findings open longer than StaleAfter: repairs that never
	// applied and reviews nobody did.
	StaleFindings int `json:"stale_findings"`
	// StaleAfter is the store's threshold for StaleFindings (pgstore.Config.StaleAfter,
	// memstore.Options.StaleAfter), so that what shows the count can say, and list, which
	// findings it counts; zero if the store does not say. In JSON: stale_after_seconds and
	// stale_after (the Duration's text), left out when zero.
	StaleAfter time.Duration `json:"-"`
	// LastFailureAt and LastFailure describe the last batch that failed or could not make a
	// call (see FailureRecorder); zero if none.
	LastFailureAt time.Time `json:"last_failure_at,omitzero"`
	LastFailure   string    `json:"last_failure,omitempty"`
	// Lanes describes the job's lanes (see Lane), sorted by name; empty if it has none.
	Lanes []LaneStatus `json:"lanes"`
}

// LaneStatus is what monitoring needs of one lane of a job.
type LaneStatus struct {
	Lane string `json:"lane"`
	// CreatedAt is when the lane first committed a step; LastRunAt when it last did.
	CreatedAt time.Time `json:"created_at,omitzero"`
	LastRunAt time.Time `json:"last_run_at,omitzero"`
	// PassesCompleted counts the steps that reached the feed's End: completed passes of a
	// reverse scan, catch-ups of an event log. LastEndAt is the last of them; zero if none.
	PassesCompleted int64     `json:"passes_completed"`
	LastEndAt       time.Time `json:"last_end_at,omitzero"`
	// GapAt and GapReason describe the last time the lane started again without replaying what
	// it had not read (FeedPage.Gap); zero if never. GapOpen reports that the gap is not yet
	// covered: no sweep cycle that started after GapAt has completed, so changes made during
	// the gap may still be unseen.
	GapAt     time.Time `json:"gap_at,omitzero"`
	GapReason string    `json:"gap_reason,omitempty"`
	GapOpen   bool      `json:"gap_open"`
	// LastFailureAt and LastFailure describe the last step that failed (see
	// LaneFailureRecorder); zero if none.
	LastFailureAt time.Time `json:"last_failure_at,omitzero"`
	LastFailure   string    `json:"last_failure,omitempty"`
}

// Failing reports that the lane's last step failed: a failure is recorded after its last commit.
func (l LaneStatus) Failing() bool {
	return !l.LastFailureAt.IsZero() && (l.LastRunAt.IsZero() || l.LastFailureAt.After(l.LastRunAt))
}

// SinceEnd is the time since the lane last reached its feed's End, or since it first ran if it
// never has.
func (l LaneStatus) SinceEnd(now time.Time) time.Duration {
	if l.LastEndAt.IsZero() {
		return now.Sub(l.CreatedAt)
	}
	return now.Sub(l.LastEndAt)
}

// CycleAge is how long the current cycle has been running.
func (s Status) CycleAge() time.Duration {
	if s.CycleStartedAt.IsZero() {
		return 0
	}
	return s.Now.Sub(s.CycleStartedAt)
}

// SinceLastCycle is the time since the last completed cycle, and false if none has completed.
func (s Status) SinceLastCycle() (time.Duration, bool) {
	if s.LastCycleCompletedAt.IsZero() {
		return 0, false
	}
	return s.Now.Sub(s.LastCycleCompletedAt), true
}

// UnverifiableRatio is the share of the last batch's rows that could not be checked.
func (s Status) UnverifiableRatio() float64 {
	if s.LastBatchScanned == 0 {
		return 0
	}
	return float64(s.LastBatchUnverifiable) / float64(s.LastBatchScanned)
}

// StatusReader reads a job's Status; pgstore.Store is one.
type StatusReader interface {
	Status(ctx context.Context, job string) (Status, error)
}

// DefaultLagSLO is the reconciliation lag a HealthPolicy tolerates when none is set.
const DefaultLagSLO = 72 * time.Hour

// HealthPolicy is what "healthy" means for a job. The zero value is the defaults.
type HealthPolicy struct {
	// LagSLO bounds Status.Lag. Zero means DefaultLagSLO.
	LagSLO time.Duration
	// MaxSinceLastCycle bounds the time since the last completed cycle, and MaxCycleAge the
	// current cycle's age (which is what counts before any cycle completed). Zero means LagSLO.
	MaxSinceLastCycle, MaxCycleAge time.Duration
	// MaxSinceLastBatch bounds the time since a batch last committed rows: a scheduler that
	// stopped, or batches that all fail. Zero means LagSLO/2; negative turns the check off.
	MaxSinceLastBatch time.Duration
	// MaxUnverifiableRatio bounds the last batch's share of rows that could not be checked.
	// Zero means 0.25: a few percent is an API's normal weather, a quarter is an outage or a
	// bad key. Negative turns the check off.
	MaxUnverifiableRatio float64
	// MaxStaleFindings bounds the findings open past the store's threshold
	// (Status.StaleAfter). Zero means none may be; a negative value turns the check off.
	MaxStaleFindings int
	// MaxLaneLag bounds, for each lane, the time since it last reached its feed's End (caught up
	// with an event log, completed a reverse pass). Zero means LagSLO. LaneLag overrides it per
	// lane name: an events lane run every minute should be given much less, such as 15 minutes.
	MaxLaneLag time.Duration
	LaneLag    map[string]time.Duration
	// Schedule, if set, is the job's schedule (BatchSize, BatchesPerHour, RequestsPerSecond,
	// CallsPerRow); Rows and NewRowsPerHour are taken from the Status. The health report then
	// carries the schedule's plan (PlanSchedule), and fails the check "plan" when a cycle can
	// never complete or will take longer than LagSLO.
	Schedule *PlanInput
}

// WithDefaults is p with every zero field given the default its doc names, as EvaluateHealth
// judges by it: for a check of one's own that should agree with the policy's limits.
func (p HealthPolicy) WithDefaults() HealthPolicy {
	if p.LagSLO == 0 {
		p.LagSLO = DefaultLagSLO
	}
	if p.MaxSinceLastCycle == 0 {
		p.MaxSinceLastCycle = p.LagSLO
	}
	if p.MaxCycleAge == 0 {
		p.MaxCycleAge = p.LagSLO
	}
	if p.MaxUnverifiableRatio == 0 {
		p.MaxUnverifiableRatio = 0.25
	}
	if p.MaxSinceLastBatch == 0 {
		p.MaxSinceLastBatch = p.LagSLO / 2
	}
	if p.MaxLaneLag == 0 {
		p.MaxLaneLag = p.LagSLO
	}
	return p
}

// Check is one health criterion.
type Check struct {
	// Name is "lag", "since_last_cycle", "cycle_age", "last_attempt", "since_last_batch",
	// "unverifiable", "stale_findings", "plan", or "lane:" and a lane's name.
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Value and Limit, for people.
	Value string `json:"value"`
	Limit string `json:"limit"`
	// Reason says why the check fails; empty when it passes.
	Reason string `json:"reason,omitempty"`
}

// Health is a job's status judged against a HealthPolicy. Its JSON form (see HealthHandler) has
// the job, ok, the checks, the plan when there is one, and the status it judged.
type Health struct {
	Job string `json:"job"`
	// OK is true when every check passes.
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
	// Plan is the schedule's plan (PlanSchedule) when the policy has a Schedule.
	Plan   *Plan  `json:"plan,omitempty"`
	Status Status `json:"status"`
}

// Reasons lists the failing checks' reasons.
func (h Health) Reasons() []string {
	var r []string
	for _, c := range h.Checks {
		if !c.OK {
			r = append(r, c.Reason)
		}
	}
	return r
}

// String is one line: the job, OK or FAILING, and the reasons.
func (h Health) String() string {
	if h.OK {
		return fmt.Sprintf("%s: OK (lag %s)", h.Job, h.Status.Lag.Round(time.Second))
	}
	return fmt.Sprintf("%s: FAILING: %s", h.Job, strings.Join(h.Reasons(), "; "))
}

// EvaluateHealth judges st against p. A job whose last batch could not verify its rows fails
// with the reason "unverifiable" even while its lag is still within the SLO, so an outage is
// never reported healthy.
func EvaluateHealth(st Status, p HealthPolicy) Health {
	p = p.WithDefaults()
	h := Health{Job: st.Job, Status: st, OK: true}
	add := func(c Check) {
		h.Checks = append(h.Checks, c)
		h.OK = h.OK && c.OK
	}
	round := func(d time.Duration) string { return d.Round(time.Second).String() }

	add(Check{Name: "lag", OK: st.Lag <= p.LagSLO, Value: round(st.Lag), Limit: round(p.LagSLO),
		Reason: fmt.Sprintf("lag: a row has gone %s without being verified, over the SLO of %s", round(st.Lag), round(p.LagSLO))})
	if since, ok := st.SinceLastCycle(); ok {
		add(Check{Name: "since_last_cycle", OK: since <= p.MaxSinceLastCycle, Value: round(since), Limit: round(p.MaxSinceLastCycle),
			Reason: fmt.Sprintf("since_last_cycle: the last cycle completed %s ago, more than %s", round(since), round(p.MaxSinceLastCycle))})
	}
	if st.CycleStartedAt.IsZero() {
		add(Check{Name: "cycle_age", OK: false, Value: "never run", Limit: round(p.MaxCycleAge),
			Reason: "cycle_age: the job has never run a batch"})
	} else {
		add(Check{Name: "cycle_age", OK: st.CycleAge() <= p.MaxCycleAge, Value: round(st.CycleAge()), Limit: round(p.MaxCycleAge),
			Reason: fmt.Sprintf("cycle_age: the current cycle has run %s, more than %s", round(st.CycleAge()), round(p.MaxCycleAge))})
	}
	// The last attempt failed if a failure was recorded after the last batch that committed.
	lastGood := st.LastBatchAt
	if st.LastCycleCompletedAt.After(lastGood) {
		lastGood = st.LastCycleCompletedAt
	}
	failedLast := !st.LastFailureAt.IsZero() && st.LastFailureAt.After(lastGood)
	value := "succeeded"
	if failedLast {
		value = "failed at " + st.LastFailureAt.UTC().Format(time.RFC3339)
	}
	add(Check{Name: "last_attempt", OK: !failedLast, Value: value, Limit: "succeeded",
		Reason: fmt.Sprintf("last_attempt: the last batch failed at %s: %s", st.LastFailureAt.UTC().Format(time.RFC3339), st.LastFailure)})
	if p.MaxSinceLastBatch > 0 && !st.LastBatchAt.IsZero() {
		since := st.Now.Sub(st.LastBatchAt)
		add(Check{Name: "since_last_batch", OK: since <= p.MaxSinceLastBatch, Value: round(since), Limit: round(p.MaxSinceLastBatch),
			Reason: fmt.Sprintf("since_last_batch: no batch has committed rows for %s (the scheduler stopped, or every batch fails)", round(since))})
	}
	ratio := st.UnverifiableRatio()
	if p.MaxUnverifiableRatio >= 0 {
		add(Check{Name: "unverifiable", OK: ratio <= p.MaxUnverifiableRatio,
			Value: fmt.Sprintf("%.0f%% (%d of %d)", 100*ratio, st.LastBatchUnverifiable, st.LastBatchScanned),
			Limit: fmt.Sprintf("%.0f%%", 100*p.MaxUnverifiableRatio),
			Reason: fmt.Sprintf("unverifiable: %d of the last batch's %d rows could not be checked (the external system failed or refused)",
				st.LastBatchUnverifiable, st.LastBatchScanned)})
	}
	if p.MaxStaleFindings >= 0 {
		add(Check{Name: "stale_findings", OK: st.StaleFindings <= p.MaxStaleFindings,
			Value: fmt.Sprint(st.StaleFindings), Limit: fmt.Sprint(p.MaxStaleFindings),
			Reason: fmt.Sprintf("stale_findings: %d findings open %s (dead repairs or reviews nobody did)", st.StaleFindings, staleThreshold(st.StaleAfter))})
	}
	if p.Schedule != nil {
		in := *p.Schedule
		in.Rows, in.LagSLO = st.Rows, p.LagSLO
		if st.NewRowsPerHour > 0 {
			in.NewRowsPerHour = float64(st.NewRowsPerHour)
		}
		if plan, err := PlanSchedule(in); err != nil {
			add(Check{Name: "plan", OK: false, Value: "invalid schedule", Reason: "plan: " + err.Error()})
		} else {
			h.Plan = &plan
			value := round(plan.MaxLag)
			if !plan.KeepsUp {
				value = "falls behind"
			}
			add(Check{Name: "plan", OK: plan.MeetsSLO, Value: value, Limit: round(p.LagSLO), Reason: "plan: " + plan.Verdict})
		}
	}
	for _, l := range st.Lanes {
		since, limit := l.SinceEnd(st.Now), p.MaxLaneLag
		if d, ok := p.LaneLag[l.Lane]; ok && d > 0 {
			limit = d
		}
		c := Check{Name: "lane:" + l.Lane, OK: since <= limit && !l.GapOpen && !l.Failing(), Value: round(since), Limit: round(limit)}
		switch {
		case l.Failing():
			c.Value = "failed at " + l.LastFailureAt.UTC().Format(time.RFC3339)
			c.Reason = fmt.Sprintf("lane:%s: the last step failed at %s: %s", l.Lane, l.LastFailureAt.UTC().Format(time.RFC3339), l.LastFailure)
		case l.GapOpen:
			c.Value = "gap since " + l.GapAt.UTC().Format(time.RFC3339)
			c.Reason = fmt.Sprintf("lane:%s: restarted at %s without replay (%s); the sweep covers what changed before, and has not completed a cycle since",
				l.Lane, l.GapAt.UTC().Format(time.RFC3339), l.GapReason)
		case l.LastEndAt.IsZero():
			c.Reason = fmt.Sprintf("lane:%s: has not reached the end of its feed in the %s since it started, more than %s", l.Lane, round(since), round(limit))
		default:
			c.Reason = fmt.Sprintf("lane:%s: last reached the end of its feed %s ago, more than %s", l.Lane, round(since), round(limit))
		}
		add(c)
	}
	for i := range h.Checks {
		if h.Checks[i].OK {
			h.Checks[i].Reason = ""
		}
	}
	return h
}

// staleThreshold says which findings count as stale: "longer than 24h0m0s", or "past the
// store's threshold" when the store does not say.
func staleThreshold(d time.Duration) string {
	if d <= 0 {
		return "past the store's threshold"
	}
	return "longer than " + d.String()
}

// OpenFindingKinds returns the kinds with open findings, sorted, for stable output.
func (s Status) OpenFindingKinds() []string {
	return slices.Sorted(maps.Keys(s.OpenFindings))
}
