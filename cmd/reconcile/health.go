package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// jobFlags are the flags of status and health: the job, and the host table its store covers.
type jobFlags struct {
	db      dbFlags
	host    hostFlags
	job     string
	lagJobs string
	json    bool
}

func (j *jobFlags) register(s *spec) {
	s.fs.StringVar(&j.job, "job", "", "the `name` of the job (required)")
	s.fs.StringVar(&j.lagJobs, "lag-jobs", "", "other `jobs` whose verifications count for the lag, comma-separated (pgstore.Config.LagJobs)")
	s.fs.BoolVar(&j.json, "json", false, "print JSON instead of text")
	j.host.register(s, "the service's `table` the job covers, such as payments (required: lag and row counts are read from it)")
	j.db.register(s)
}

const jobAbout = `
--table and the column flags describe the job's store as the service configures it
(pgstore.Config): the lag and row counts are read from the service's table, the rest from the
reconciler's tables. A tier's Filter cannot be given here: the rows counted are the whole
table's.`

// readStatus checks the flags and reads the job's status; done reports that there is nothing
// more to do, with the exit code.
func (j *jobFlags) readStatus(ctx context.Context, e *env, help string) (st reconcile.Status, code int, done bool) {
	if j.job == "" {
		return st, e.usageError("--job is required", help), true
	}
	if j.host.table == "" {
		return st, e.usageError("--table is required (the service's table the job covers)", help), true
	}
	cfg := j.host.config(j.db.tables())
	cfg.LagJobs = splitList(j.lagJobs)
	// New does not touch the database: a typed nil pool checks the flags before connecting.
	if _, err := pgstore.New((*pgxpool.Pool)(nil), cfg); err != nil {
		return st, e.usageError(err.Error(), help), true
	}
	pool, err := j.db.connect(ctx, e)
	if err != nil {
		return st, e.failed(err), true
	}
	defer pool.Close()
	store, err := pgstore.New(pool, cfg)
	if err != nil {
		return st, e.failed(err), true
	}
	st, err = store.Status(ctx, j.job)
	if err != nil {
		return st, e.failed(err), true
	}
	return st, 0, false
}

func runStatus(ctx context.Context, e *env, args []string) int {
	s := newSpec("status", "reconcile status --job NAME --table TABLE [flags]", `
status prints what monitoring reads of a job (pgstore.Store.Status): the lag (the longest any
row has gone unverified), rows covered, cycles, the last batch, the last failure, open findings
by kind and the job's lanes. It judges nothing; see "reconcile health".`+"\n"+jobAbout,
		"reconcile status --job payments --table payments",
		"reconcile status --job payments-hot --table payments --lag-jobs payments-cold --json")
	var j jobFlags
	j.register(s)
	pos, code, done := s.parse(e, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return e.usageError(fmt.Sprintf("status: unexpected argument %q", pos[0]), "reconcile status --help")
	}
	st, code, done := j.readStatus(ctx, e, "reconcile status --help")
	if done {
		return code
	}
	if j.json {
		if err := e.printJSON(st); err != nil {
			return e.failed(err)
		}
		return exitOK
	}
	e.print(statusText(st))
	return exitOK
}

// statusText is st for a person.
func statusText(st reconcile.Status) string {
	var b strings.Builder
	round := func(d time.Duration) string { return d.Round(time.Second).String() }
	fmt.Fprintf(&b, "job %s (read at %s)\n", printable(st.Job), timeText(st.Now))
	fmt.Fprintf(&b, "  lag                %s\n", round(st.Lag))
	fmt.Fprintf(&b, "  rows               %d (%d created in the last hour)\n", st.Rows, st.NewRowsPerHour)
	if st.CycleStartedAt.IsZero() {
		fmt.Fprintf(&b, "  cycle              never run\n")
	} else {
		fmt.Fprintf(&b, "  cycle              started %s (%s ago); %d completed, the last at %s\n",
			timeText(st.CycleStartedAt), round(st.CycleAge()), st.CyclesCompleted, timeText(st.LastCycleCompletedAt))
	}
	if st.LastBatchAt.IsZero() {
		fmt.Fprintf(&b, "  last batch         none\n")
	} else {
		fmt.Fprintf(&b, "  last batch         %s: %d rows, %d unverifiable\n", timeText(st.LastBatchAt), st.LastBatchScanned, st.LastBatchUnverifiable)
	}
	if !st.LastFailureAt.IsZero() {
		fmt.Fprintf(&b, "  last failure       %s: %s\n", timeText(st.LastFailureAt), printable(st.LastFailure))
	}
	open := 0
	for _, n := range st.OpenFindings {
		open += n
	}
	fmt.Fprintf(&b, "  open findings      %d", open)
	if open > 0 {
		fmt.Fprintf(&b, " (oldest detected %s; %d stale)", timeText(st.OldestOpenFinding), st.StaleFindings)
	}
	b.WriteString("\n")
	if kinds := st.OpenFindingKinds(); len(kinds) > 0 {
		rows := make([][]string, len(kinds))
		for i, k := range kinds {
			rows[i] = []string{"    " + k, strconv.Itoa(st.OpenFindings[k])}
		}
		b.WriteString(table(rows))
	}
	for _, l := range st.Lanes {
		fmt.Fprintf(&b, "  lane %-13s last run %s; %d passes, last end %s", printable(l.Lane), timeText(l.LastRunAt), l.PassesCompleted, timeText(l.LastEndAt))
		if l.GapOpen {
			fmt.Fprintf(&b, "; gap open since %s (%s)", timeText(l.GapAt), printable(l.GapReason))
		}
		if l.Failing() {
			fmt.Fprintf(&b, "; failing since %s: %s", timeText(l.LastFailureAt), printable(l.LastFailure))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func runHealth(ctx context.Context, e *env, args []string) int {
	s := newSpec("health", "reconcile health --job NAME --table TABLE [flags]", `
health judges the job's status against a health policy (reconcile.EvaluateHealth) and prints
every check with its value and limit, and the reason of each failing one. It exits 0 when the
job is healthy and 1 when it is not, for a cron job or a deploy step:

  reconcile health --job payments --table payments || page-the-on-call`+"\n"+jobAbout,
		"reconcile health --job payments --table payments",
		"reconcile health --job payments --table payments --lag-slo 24h --json")
	var j jobFlags
	j.register(s)
	lagSLO := s.fs.Duration("lag-slo", reconcile.DefaultLagSLO, "the lag the job may reach (HealthPolicy.LagSLO); the cycle limits default to it")
	stale := s.fs.Int("max-stale-findings", 0, "findings open past the store's stale threshold (24h) that are tolerated; negative turns the check off")
	unverifiable := s.fs.Float64("max-unverifiable", 0.25, "the share of the last batch's rows that may be unverifiable; negative turns the check off")
	pos, code, done := s.parse(e, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return e.usageError(fmt.Sprintf("health: unexpected argument %q", pos[0]), "reconcile health --help")
	}
	if *lagSLO <= 0 {
		return e.usageError("health: --lag-slo must be positive", "reconcile health --help")
	}
	if math.IsNaN(*unverifiable) {
		// NaN is neither a limit nor negative: the check would silently be off.
		return e.usageError("health: --max-unverifiable must be a number", "reconcile health --help")
	}
	if *unverifiable == 0 {
		// HealthPolicy reads zero as its default; a limit of nothing at all is a tiny one.
		*unverifiable = 1e-9
	}
	st, code, done := j.readStatus(ctx, e, "reconcile health --help")
	if done {
		return code
	}
	h := reconcile.EvaluateHealth(st, reconcile.HealthPolicy{LagSLO: *lagSLO, MaxStaleFindings: *stale, MaxUnverifiableRatio: *unverifiable})
	if j.json {
		if err := e.printJSON(h); err != nil {
			return e.failed(err)
		}
	} else {
		e.print(healthText(h))
	}
	if !h.OK {
		return exitNegative
	}
	return exitOK
}

// healthText is h for a person: its one-line verdict, then every check.
func healthText(h reconcile.Health) string {
	rows := [][]string{{"CHECK", "OK", "VALUE", "LIMIT", "REASON"}}
	for _, c := range h.Checks {
		ok := "ok"
		if !c.OK {
			ok = "FAIL"
		}
		rows = append(rows, []string{c.Name, ok, orDash(c.Value), orDash(c.Limit), orDash(c.Reason)})
	}
	return printable(h.String()) + "\n\n" + table(rows)
}
