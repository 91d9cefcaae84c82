package prommetrics

import (
	"context"
	"time"

	"github.com/reconcilekit/reconcile"
)

// GatewayCalls counts calls by outcome class and observes their duration: d itself for a
// Fetch (calls is 1), d/calls for a FetchBatch that made several, so that one observation is
// the mean time per call of that invocation.
func (m *Metrics) GatewayCalls(job string, calls int, d time.Duration, class string) {
	if calls <= 0 {
		return
	}
	job = m.touch(job)
	m.gatewayCalls.WithLabelValues(job, labelValue(class)).Add(float64(calls))
	m.callDuration.WithLabelValues(job).Observe(d.Seconds() / float64(calls))
}

// BatchDone counts the batch by outcome and observes its duration; a successful batch also
// adds its rows per verdict and the findings and commands its commit added.
func (m *Metrics) BatchDone(job string, rep reconcile.Report, err error) {
	m.forget() // even a failed batch records its failure
	job = m.touch(job)
	m.batchDuration.WithLabelValues(job).Observe(rep.Duration.Seconds())
	m.batches.WithLabelValues(job, outcome(rep, err)).Inc()
	if rep.RateLimited {
		m.rateLimited.WithLabelValues(job).Inc()
	}
	if err != nil {
		return // nothing was written
	}
	for v, n := range rep.Verdicts {
		if n > 0 {
			m.rows.WithLabelValues(job, labelValue(v.String())).Add(float64(n))
		}
	}
	if rep.NewFindings > 0 {
		m.findingsOpened.WithLabelValues(job).Add(float64(rep.NewFindings))
	}
	if rep.NewCommands > 0 {
		m.commandsQueued.WithLabelValues(job).Add(float64(rep.NewCommands))
	}
}

// outcome is the batch's outcome label, by what reconcile.AfterBatch decides. The Observer is
// not given the batch's context: a cancelled batch counts as an error, as a failed one does.
func outcome(rep reconcile.Report, err error) string {
	switch reconcile.AfterBatch(context.Background(), rep, err) {
	case reconcile.AfterConflict:
		return OutcomeConflict
	case reconcile.AfterFailure, reconcile.AfterStop:
		return OutcomeError
	case reconcile.AfterDeferred, reconcile.AfterIdle:
		return OutcomeDeferred
	case reconcile.AfterCycle:
		return OutcomeWrapped
	default: // AfterProgress, AfterRateLimit, AfterOutage: rows were committed
		return OutcomeOK
	}
}

// touch returns job as a label value and, the first time a job is seen, creates its series at
// zero for every verdict, outcome and class, so that rate() and absence checks work from the
// first batch rather than from the first occurrence of each label.
func (m *Metrics) touch(job string) string {
	job = labelValue(job)
	if _, seen := m.seen.Load(job); seen {
		return job
	}
	for _, v := range reconcile.Verdicts {
		m.rows.WithLabelValues(job, v.String())
	}
	for _, o := range outcomes {
		m.batches.WithLabelValues(job, o)
	}
	for _, c := range classes {
		m.gatewayCalls.WithLabelValues(job, c)
	}
	m.batchDuration.WithLabelValues(job)
	m.callDuration.WithLabelValues(job)
	m.findingsOpened.WithLabelValues(job)
	m.commandsQueued.WithLabelValues(job)
	m.rateLimited.WithLabelValues(job)
	m.seen.Store(job, struct{}{})
	return job
}

// CommandAttempted counts one attempt of the repair dispatcher by command and outcome
// (reconcile.CommandObserver). An applied command changed the findings: the Monitor's cached
// statuses are dropped.
func (m *Metrics) CommandAttempted(a reconcile.CommandAttempt) {
	m.forget()
	cmd := labelValue(a.Command)
	if _, seen := m.seenCommands.Load(cmd); !seen {
		for _, o := range reconcile.AttemptOutcomes {
			m.attempts.WithLabelValues(cmd, o)
		}
		m.seenCommands.Store(cmd, struct{}{})
	}
	m.attempts.WithLabelValues(cmd, labelValue(a.Outcome)).Inc()
}

// forget tells the Monitor of a write observed: what it keeps may be out of date.
func (m *Metrics) forget() {
	if m.monitor != nil {
		m.monitor.Forget()
	}
}
