package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// PGConfig configures NewPGStore.
type PGConfig struct {
	// DB runs resolutions and reopenings and reads external ids: the pool the stores use.
	// Required.
	DB pgstore.Querier
	// Jobs maps each job to the store over its rows: the job's Status is read through it, and
	// the external ids of its findings come from its table. The stores must share their
	// Tables (the reconciler's own tables), where every job's findings are. Required.
	Jobs map[string]*pgstore.Store
	// Logger reports external-id look-ups that failed; the findings are then shown without
	// their external links. Nil means slog.Default().
	Logger *slog.Logger
}

// PGStore is a Store over pgstore: findings, history, resolutions and reopenings through the
// pgstore methods, statuses through each job's store. It is for the jobs of PGConfig.Jobs
// only: the findings of other jobs in the same tables are not listed, and are not found by id
// (ErrNotFound), for reading or writing.
type PGStore struct {
	db       pgstore.Querier
	jobs     map[string]*pgstore.Store
	names    []string // the jobs, sorted
	findings *pgstore.Store
	outbox   string // the repair commands' table, quoted
	log      *slog.Logger

	mu      sync.Mutex
	lookups map[*pgstore.Store]*idLookup // built on first use, per store
}

var (
	_ Store     = (*PGStore)(nil)
	_ JobLister = (*PGStore)(nil)
)

// NewPGStore returns a Store over pgstore.
func NewPGStore(cfg PGConfig) (*PGStore, error) {
	if cfg.DB == nil {
		return nil, errors.New("console: PGConfig.DB is nil")
	}
	if len(cfg.Jobs) == 0 {
		return nil, errors.New("console: PGConfig.Jobs is empty")
	}
	s := &PGStore{db: cfg.DB, jobs: make(map[string]*pgstore.Store, len(cfg.Jobs)), log: cfg.Logger,
		lookups: map[*pgstore.Store]*idLookup{}}
	if s.log == nil {
		s.log = slog.Default()
	}
	names := make([]string, 0, len(cfg.Jobs))
	for name, st := range cfg.Jobs {
		if name == "" || st == nil {
			return nil, fmt.Errorf("console: PGConfig.Jobs: job %q has no store", name)
		}
		s.jobs[name] = st
		names = append(names, name)
	}
	slices.Sort(names)
	s.names = names
	s.findings = s.jobs[names[0]]
	want := tablesOf(s.findings)
	s.outbox = pgx.Identifier{want.Prefix + "outbox"}.Sanitize()
	if want.Schema != "" {
		s.outbox = pgx.Identifier{want.Schema, want.Prefix + "outbox"}.Sanitize()
	}
	for _, name := range names[1:] {
		if got := tablesOf(s.jobs[name]); got != want {
			return nil, fmt.Errorf("console: PGConfig.Jobs: job %s keeps its findings in %+v, job %s in %+v; the console reads one set of tables",
				names[0], want, name, got)
		}
	}
	return s, nil
}

func tablesOf(s *pgstore.Store) pgstore.Tables {
	t := s.Config().Tables
	if t.Prefix == "" {
		t.Prefix = "reconcile_"
	}
	return t
}

// Jobs returns the configured jobs, sorted.
func (s *PGStore) Jobs() []string {
	return slices.Clone(s.names)
}

// selectJobs returns the configured jobs q asks for, sorted.
func (s *PGStore) selectJobs(q Query) []string {
	switch {
	case q.Job != "":
		if _, ok := s.jobs[q.Job]; ok && (len(q.Jobs) == 0 || slices.Contains(q.Jobs, q.Job)) {
			return []string{q.Job}
		}
		return nil
	case len(q.Jobs) > 0:
		return slices.DeleteFunc(slices.Clone(s.names), func(j string) bool { return !slices.Contains(q.Jobs, j) })
	}
	return s.names
}

// Findings lists the configured jobs' findings through pgstore.Store.ListFindings: one query
// per job (each served by the findings' indexes), merged by id into one keyset page.
func (s *PGStore) Findings(ctx context.Context, q Query) ([]Finding, error) {
	var fs []reconcile.Finding
	for _, job := range s.selectJobs(q) {
		page, err := s.findings.ListFindings(ctx, pgstore.FindingQuery{
			Job: job, Kind: q.Kind, RecordID: q.RecordID, State: q.State,
			DetectedBefore: q.DetectedBefore, AfterID: q.AfterID, Limit: q.Limit,
		})
		if err != nil {
			return nil, err
		}
		fs = append(fs, page...)
	}
	slices.SortFunc(fs, func(a, b reconcile.Finding) int { return cmp.Compare(a.ID, b.ID) })
	limit := q.Limit
	if limit == 0 {
		limit = 100 // ListFindings' default
	}
	fs = fs[:min(len(fs), limit)]
	out := make([]Finding, len(fs))
	for i, f := range fs {
		out[i].Finding = f
	}
	s.addExternalIDs(ctx, out)
	return out, nil
}

// Finding reads one finding and its history through pgstore.Store.Finding. A finding of a job
// that is not configured is not found. The repair commands' events carry their status and
// failures, never their last error.
func (s *PGStore) Finding(ctx context.Context, id int64) (Detail, error) {
	d, err := s.findings.Finding(ctx, id)
	if errors.Is(err, pgstore.ErrNoFinding) {
		return Detail{}, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	if err != nil {
		return Detail{}, err
	}
	if _, ok := s.jobs[d.Job]; !ok {
		return Detail{}, fmt.Errorf("%w: %d is a finding of job %q, which is not configured", ErrNotFound, id, d.Job)
	}
	cmds, err := s.commandEvents(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	out := Detail{Finding: Finding{Finding: d.Finding}, History: mergeHistory(d.History, cmds)}
	one := []Finding{out.Finding}
	s.addExternalIDs(ctx, one)
	out.Finding = one[0]
	return out, nil
}

// commandEvents reads the events of a finding's repair commands as pgstore's history has them
// (the same time and action), with their failures instead of their last error.
func (s *PGStore) commandEvents(ctx context.Context, id int64) ([]Event, error) {
	rows, err := s.db.Query(ctx, `SELECT coalesce(processed_at, dead_at, created_at), 'command ' || status, event_type, failures
		FROM `+s.outbox+` WHERE finding_id = $1 ORDER BY 1, id`, id)
	if err != nil {
		return nil, fmt.Errorf("console: repair commands of finding %d: %w", id, err)
	}
	var events []Event
	var e Event
	_, err = pgx.ForEachRow(rows, []any{&e.At, &e.Action, &e.Actor, &e.Failures}, func() error {
		events = append(events, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("console: repair commands of finding %d: %w", id, err)
	}
	return events, nil
}

// fromOutbox reports whether an event of pgstore's history is a repair command's own (its note
// the command's last error), not one of the audit table's ("command redriven" is a person's).
func fromOutbox(e pgstore.FindingEvent) bool {
	return strings.HasPrefix(e.Action, "command ") && e.Action != "command redriven"
}

// mergeHistory is pgstore's history with its commands' events replaced by cmds, in its order:
// the detection first, then by time, the audit's events before the commands' at the same time.
func mergeHistory(history []pgstore.FindingEvent, cmds []Event) []Event {
	out := make([]Event, 0, len(history)+len(cmds))
	var audit []Event
	for i, e := range history {
		if fromOutbox(e) {
			continue
		}
		ev := Event{At: e.At, Action: e.Action, Actor: e.Actor, Resolution: e.Resolution, Note: e.Note}
		if i == 0 {
			out = append(out, ev) // the detection
			continue
		}
		audit = append(audit, ev)
	}
	for len(audit) > 0 || len(cmds) > 0 {
		if len(cmds) == 0 || (len(audit) > 0 && !cmds[0].At.Before(audit[0].At)) {
			out, audit = append(out, audit[0]), audit[1:]
		} else {
			out, cmds = append(out, cmds[0]), cmds[1:]
		}
	}
	return out
}

// ownFinding returns an error wrapping ErrNotFound unless finding id exists and is of a
// configured job.
func (s *PGStore) ownFinding(ctx context.Context, id int64) error {
	if id <= 0 {
		return fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	// The first finding from id on: id itself, if it exists.
	fs, err := s.findings.ListFindings(ctx, pgstore.FindingQuery{State: StateAll, AfterID: id - 1, Limit: 1})
	if err != nil {
		return err
	}
	if len(fs) == 0 || fs[0].ID != id {
		return fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if _, ok := s.jobs[fs[0].Job]; !ok {
		return fmt.Errorf("%w: %d is a finding of job %q, which is not configured", ErrNotFound, id, fs[0].Job)
	}
	return nil
}

// Resolve closes a finding of a configured job through pgstore.Store.ResolveFinding.
func (s *PGStore) Resolve(ctx context.Context, id int64, r reconcile.Resolution) error {
	if err := s.ownFinding(ctx, id); err != nil {
		return err
	}
	open, err := s.findings.ResolveFinding(ctx, s.db, id, r)
	switch {
	case errors.Is(err, pgstore.ErrNoFinding):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case err != nil:
		return err
	case !open:
		return fmt.Errorf("%w: %d", ErrAlreadyResolved, id)
	}
	return nil
}

// Reopen opens a finding of a configured job again through pgstore.Store.ReopenFinding.
func (s *PGStore) Reopen(ctx context.Context, id int64, actor, note string) error {
	if err := s.ownFinding(ctx, id); err != nil {
		return err
	}
	closed, err := s.findings.ReopenFinding(ctx, s.db, id, actor, note)
	switch {
	case errors.Is(err, pgstore.ErrNoFinding):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, pgstore.ErrAlreadyOpen):
		return fmt.Errorf("%w: %w", ErrFoundAgain, err)
	case err != nil:
		return err
	case !closed:
		return fmt.Errorf("%w: %d", ErrAlreadyOpen, id)
	}
	return nil
}

// Status reads the job's status through its own store.
func (s *PGStore) Status(ctx context.Context, job string) (reconcile.Status, error) {
	st, ok := s.jobs[job]
	if !ok {
		return reconcile.Status{}, fmt.Errorf("console: no store is configured for job %q", job)
	}
	return st.Status(ctx, job)
}

// addExternalIDs fills in the external ids of fs from the host tables of their jobs' stores.
// A failed look-up is logged, not returned: the findings are worth showing without links.
func (s *PGStore) addExternalIDs(ctx context.Context, fs []Finding) {
	byStore := map[*pgstore.Store][]string{}
	for _, f := range fs {
		if st, ok := s.jobs[f.Job]; ok {
			byStore[st] = append(byStore[st], f.RecordID)
		}
	}
	for st, ids := range byStore {
		found, err := s.lookup(st).externalIDs(ctx, s.db, ids)
		if err != nil {
			s.log.WarnContext(ctx, "console: reading external ids failed; findings are shown without links",
				slog.String("table", st.Config().Table), slog.String("error", err.Error()))
			continue
		}
		for i := range fs {
			if s.jobs[fs[i].Job] == st {
				fs[i].ExternalID = found[fs[i].RecordID]
			}
		}
	}
}

func (s *PGStore) lookup(st *pgstore.Store) *idLookup {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.lookups[st]
	if !ok {
		l = &idLookup{cfg: st.Config()}
		s.lookups[st] = l
	}
	return l
}

// idLookup reads the external ids of rows of one host table, by the id findings record.
type idLookup struct {
	cfg pgstore.Config

	mu    sync.Mutex
	query string         // built once the id column's type is known
	valid *regexp.Regexp // ids the column's type can hold; nil: any
}

var (
	integerID = regexp.MustCompile(`^-?[0-9]{1,19}$`)
	uuidID    = regexp.MustCompile(`^(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`)
)

// prepare reads the id column's type from the catalog, so that the look-up compares in that
// type (and uses its index) rather than as text.
func (l *idLookup) prepare(ctx context.Context, db pgstore.Querier) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.query != "" {
		return nil
	}
	host := pgx.Identifier{l.cfg.Table}
	if l.cfg.Schema != "" {
		host = pgx.Identifier{l.cfg.Schema, l.cfg.Table}
	}
	var typ string
	err := db.QueryRow(ctx, `SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute AS a
		WHERE a.attrelid = to_regclass($1) AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped`,
		host.Sanitize(), l.cfg.IDColumn).Scan(&typ)
	if err != nil {
		return fmt.Errorf("console: type of %s.%s: %w", host.Sanitize(), l.cfg.IDColumn, err)
	}
	switch typ {
	case "smallint", "integer", "bigint":
		l.valid = integerID
	case "uuid":
		l.valid = uuidID
	}
	id, ext := pgx.Identifier{l.cfg.IDColumn}.Sanitize(), pgx.Identifier{l.cfg.ExternalIDColumn}.Sanitize()
	// typ is the catalog's own spelling of the column's type.
	l.query = fmt.Sprintf(`SELECT h.%s::text, coalesce(h.%s::text, '') FROM %s AS h WHERE h.%s = ANY($1::text[]::%s[])`,
		id, ext, host.Sanitize(), id, typ)
	return nil
}

func (l *idLookup) externalIDs(ctx context.Context, db pgstore.Querier, ids []string) (map[string]string, error) {
	if err := l.prepare(ctx, db); err != nil {
		return nil, err
	}
	if l.valid != nil {
		// A finding's record id came from this column, but one that the type cannot hold
		// (findings of another table under the same job name, say) would fail the whole cast.
		ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !l.valid.MatchString(id) })
	}
	if len(ids) == 0 {
		return map[string]string{}, nil
	}
	rows, err := db.Query(ctx, l.query, ids)
	if err != nil {
		return nil, fmt.Errorf("console: external ids from %s: %w", l.cfg.Table, err)
	}
	found := map[string]string{}
	var id, ext string
	_, err = pgx.ForEachRow(rows, []any{&id, &ext}, func() error {
		found[id] = ext
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("console: external ids from %s: %w", l.cfg.Table, err)
	}
	return found, nil
}
