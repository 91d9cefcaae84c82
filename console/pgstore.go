package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
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
// pgstore methods, statuses through each job's store.
type PGStore struct {
	db       pgstore.Querier
	jobs     map[string]*pgstore.Store
	findings *pgstore.Store
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
	s.findings = s.jobs[names[0]]
	want := tablesOf(s.findings)
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
	names := make([]string, 0, len(s.jobs))
	for name := range s.jobs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Findings lists findings through pgstore.Store.ListFindings.
func (s *PGStore) Findings(ctx context.Context, q Query) ([]Finding, error) {
	fs, err := s.findings.ListFindings(ctx, pgstore.FindingQuery{
		Job: q.Job, Kind: q.Kind, RecordID: q.RecordID, State: q.State,
		DetectedBefore: q.DetectedBefore, AfterID: q.AfterID, Limit: q.Limit,
	})
	if err != nil {
		return nil, err
	}
	out := make([]Finding, len(fs))
	for i, f := range fs {
		out[i].Finding = f
	}
	s.addExternalIDs(ctx, out)
	return out, nil
}

// Finding reads one finding and its history through pgstore.Store.Finding.
func (s *PGStore) Finding(ctx context.Context, id int64) (Detail, error) {
	d, err := s.findings.Finding(ctx, id)
	if errors.Is(err, pgstore.ErrNoFinding) {
		return Detail{}, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	if err != nil {
		return Detail{}, err
	}
	out := Detail{Finding: Finding{Finding: d.Finding}, History: make([]Event, len(d.History))}
	for i, e := range d.History {
		out.History[i] = Event(e)
	}
	one := []Finding{out.Finding}
	s.addExternalIDs(ctx, one)
	out.Finding = one[0]
	return out, nil
}

// Resolve closes a finding through pgstore.Store.ResolveFinding.
func (s *PGStore) Resolve(ctx context.Context, id int64, r reconcile.Resolution) error {
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

// Reopen opens a finding again through pgstore.Store.ReopenFinding.
func (s *PGStore) Reopen(ctx context.Context, id int64, actor, note string) error {
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
