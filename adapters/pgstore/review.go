package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
)

var _ reconcile.Reviewer = (*Store[string])(nil)

// DefaultStaleAfter is how long a finding may stay open before Status counts it as stale: a
// repair that never applied (its command dead) shows up there.
const DefaultStaleAfter = 24 * time.Hour

// Querier runs statements: a DB, or the host's own pgx.Tx so that resolving a finding commits
// together with the business change that fixed it.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ResolveFinding closes an open finding and records the change in the finding's history
// (reconcile.Reviewer). A closed one is left as it is: reconcile.ErrAlreadyResolved. Once
// resolved, the same drift can be found again.
//
// It takes turns with the commits that open or supersede the record's findings and with the
// repair deliveries of its command (pgoutbox, riverdelivery), under the record's lock: a command
// being applied meanwhile is waited for (the finding is then resolved already), and one that
// comes after finds the finding resolved and is not applied.
func (s *Store[L]) ResolveFinding(ctx context.Context, id int64, r reconcile.Resolution) error {
	if err := r.Validate(); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.own.lockFinding, id, s.cfg.Tables.table("findings")); err != nil {
			return fmt.Errorf("pgstore: resolve finding %d: lock: %w", id, err)
		}
		return s.resolve(ctx, tx, id, r)
	})
	if err == nil {
		s.table.NoteWrite() // committed: a cache of Status read from now on sees it
	}
	return err
}

// ResolveFindingIn is ResolveFinding inside q. Call it from the canonical writer, in the
// transaction of the business change that fixed the drift, so that both commit or neither
// does; q stays usable after reconcile.ErrAlreadyResolved (a repair and a webhook, or a
// person, may both get there). It takes no record lock, unlike ResolveFinding: a canonical
// writer holds its row by then, and commits take the record's lock before the row's; the
// delivery that calls the writer holds the record's lock already.
func (s *Store[L]) ResolveFindingIn(ctx context.Context, q Querier, id int64, r reconcile.Resolution) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := s.resolve(ctx, q, id, r); err != nil {
		return err
	}
	s.table.NoteWrite()
	return nil
}

// resolve resolves finding id in q, counting no write.
func (s *Store[L]) resolve(ctx context.Context, q Querier, id int64, r reconcile.Resolution) error {
	var exists, open bool
	err := q.QueryRow(ctx, s.own.resolveFinding,
		id, r.As, r.By, r.Note).Scan(&exists, &open)
	switch {
	case err != nil:
		return fmt.Errorf("pgstore: resolve finding %d: %w", id, err)
	case !exists:
		return fmt.Errorf("pgstore: resolve finding %d: %w", id, reconcile.ErrFindingNotFound)
	case !open:
		return fmt.Errorf("pgstore: resolve finding %d: %w", id, reconcile.ErrAlreadyResolved)
	}
	return nil
}

// ResolveRecordFindings closes every open finding of the given kinds about one row of this
// store's table (its AggregateType; findings recorded before the column existed have none and
// match any table), in any job over it, and returns their ids. It is the
// webhook's side of the canonical writer: a webhook knows the payment, not the finding, and the
// drift it fixes may have been found by any tier's job. No kinds means every kind. It locks the
// findings in the order commits lock a record's findings, so that it takes turns with them.
func (s *Store[L]) ResolveRecordFindings(ctx context.Context, q Querier, recordID string, kinds []string, r reconcile.Resolution) ([]int64, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, s.own.resolveRecordFindings, recordID, kinds, r.As, r.By, r.Note, s.cfg.AggregateType)
	if err != nil {
		return nil, fmt.Errorf("pgstore: resolve findings of record %s: %w", recordID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("pgstore: resolve findings of record %s: %w", recordID, err)
	}
	s.table.NoteWrite()
	return ids, nil
}

// ReopenFinding opens a resolved finding again (the fix did not hold, or was recorded by
// mistake) and records who did it and why (reconcile.Reviewer). If the same drift has been
// found again since, the newer finding is the open one: reconcile.ErrFoundAgain.
func (s *Store[L]) ReopenFinding(ctx context.Context, id int64, by, note string) error {
	return s.ReopenFindingIn(ctx, s.db, id, by, note)
}

// ReopenFindingIn is ReopenFinding inside q (the host's transaction, perhaps), which stays
// usable after reconcile.ErrFoundAgain or reconcile.ErrAlreadyOpen.
func (s *Store[L]) ReopenFindingIn(ctx context.Context, q Querier, id int64, by, note string) error {
	if by == "" {
		return errors.New("pgstore: reopen finding: the actor is empty")
	}
	var exists, sibling, reopened bool
	err := q.QueryRow(ctx, s.own.reopenFinding,
		id, by, note).Scan(&exists, &sibling, &reopened)
	switch {
	case err != nil:
		// A sibling opened concurrently still trips the unique index; that is rare enough to
		// surface as the database's error.
		return fmt.Errorf("pgstore: reopen finding %d: %w", id, err)
	case !exists:
		return fmt.Errorf("pgstore: reopen finding %d: %w", id, reconcile.ErrFindingNotFound)
	case sibling && !reopened:
		return fmt.Errorf("pgstore: reopen finding %d: %w", id, reconcile.ErrFoundAgain)
	case !reopened:
		return fmt.Errorf("pgstore: reopen finding %d: %w", id, reconcile.ErrAlreadyOpen)
	}
	s.table.NoteWrite()
	return nil
}

// findingColumns are a Finding's, then whether the finding is about a row of this store's
// table (its aggregate type; findings recorded before the column existed have none).
const findingColumns = `f.id, f.job, f.record_id, f.kind, f.local_state, f.external_state, f.detail, f.command,
	f.detected_at, f.resolved_at, coalesce(f.resolution, ''), coalesce(f.resolved_by, ''), coalesce(f.resolution_note, ''),
	f.external_id, f.diffs, coalesce(f.superseded_by, 0), coalesce(f.aggregate_type = $1, true)`

// found is a finding as read, and whether its record is a row of this store's table.
type found struct {
	reconcile.Finding
	ours bool
}

func scanFinding(row pgx.CollectableRow) (found, error) {
	var f found
	var resolved *time.Time
	err := row.Scan(&f.ID, &f.Job, &f.RecordID, &f.Kind, &f.Local, &f.External, &f.Detail, &f.Command,
		&f.DetectedAt, &resolved, &f.Resolution, &f.ResolvedBy, &f.ResolutionNote, &f.ExternalID, &f.Diffs, &f.SupersededBy, &f.ours)
	if resolved != nil {
		f.ResolvedAt = *resolved
	}
	return f, err
}

// ListFindings returns a page of findings, oldest first by id, or newest first when
// fq.Newest (reconcile.Reviewer), each with its Diffs. The findings of this store's table carry
// their rows' external ids. A Search matches a finding's external id or record id, or a value
// of one of Config.SearchColumns in its row, whole.
func (s *Store[L]) ListFindings(ctx context.Context, fq reconcile.FindingQuery) ([]reconcile.Finding, error) {
	fq, err := fq.Normalize()
	if err != nil {
		return nil, fmt.Errorf("pgstore: list findings: %w", err)
	}
	// $1 is the store's aggregate type, which findingColumns reads.
	where, args, err := s.findingsWhere(ctx, fq, []any{s.cfg.AggregateType}, 1)
	if err != nil {
		return nil, err
	}
	order := "f.id"
	if fq.AfterID > 0 {
		args = append(args, fq.AfterID)
		where = append(where, fmt.Sprintf("f.id > $%d", len(args)))
	}
	if fq.Newest {
		order = "f.id DESC"
		if fq.AfterID > 0 {
			where[len(where)-1] = fmt.Sprintf("f.id < $%d", len(args))
		}
	}
	args = append(args, fq.Limit)
	rows, err := s.db.Query(ctx, s.own.listFindings+whereClause(where)+fmt.Sprintf(` ORDER BY %s LIMIT $%d`, order, len(args)), args...)
	if err != nil {
		return nil, s.cfg.Tables.wrap("list findings", err)
	}
	fs, err := pgx.CollectRows(rows, scanFinding)
	if err != nil {
		return nil, s.cfg.Tables.wrap("list findings", err)
	}
	return s.withExternalIDs(ctx, fs), nil
}

var _ reconcile.FindingCounter = (*Store[string])(nil)

// CountFindings returns how many findings fq selects, ignoring its AfterID, Limit and Newest
// (reconcile.FindingCounter). It counts every match, so its cost grows with them: the open
// findings of a job are counted from an index.
func (s *Store[L]) CountFindings(ctx context.Context, fq reconcile.FindingQuery) (int, error) {
	fq, err := fq.Normalize()
	if err != nil {
		return 0, fmt.Errorf("pgstore: count findings: %w", err)
	}
	where, args, err := s.findingsWhere(ctx, fq, nil, 0)
	if err != nil {
		return 0, err
	}
	var n int
	if err := s.db.QueryRow(ctx, s.own.countFindings+whereClause(where), args...).Scan(&n); err != nil {
		return 0, s.cfg.Tables.wrap("count findings", err)
	}
	return n, nil
}

func whereClause(where []string) string {
	if len(where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(where, " AND ")
}

// findingsWhere returns the conditions of fq's filters on the findings as f, its paging aside,
// and args with their values appended. agg is the number of the argument in args that holds the
// store's aggregate type, or 0 if none does (a search then adds it). Only the filters asked for
// are in the statement, so that each shape gets a plan that uses the indexes on open findings.
func (s *Store[L]) findingsWhere(ctx context.Context, fq reconcile.FindingQuery, args []any, agg int) ([]string, []any, error) {
	var where []string
	switch fq.State {
	case reconcile.FindingsOpen:
		where = append(where, "f.resolved_at IS NULL")
	case reconcile.FindingsResolved:
		where = append(where, "f.resolved_at IS NOT NULL")
	}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if fq.Job != "" {
		add("f.job = $%d", fq.Job)
	}
	if len(fq.Jobs) > 0 {
		add("f.job = ANY($%d)", fq.Jobs)
	}
	if fq.Kind != "" {
		add("f.kind = $%d", fq.Kind)
	}
	if fq.RecordID != "" {
		add("f.record_id = $%d", fq.RecordID)
	}
	if !fq.DetectedBefore.IsZero() {
		add("f.detected_at < $%d", fq.DetectedBefore)
	}
	if fq.Search != "" {
		cond, byRow, err := s.searchCond(ctx, fq.Search)
		if err != nil {
			return nil, nil, err
		}
		if byRow && agg == 0 {
			args = append(args, s.cfg.AggregateType)
			agg = len(args)
		}
		args = append(args, fq.Search)
		where = append(where, fmt.Sprintf(cond, len(args), agg))
	}
	return where, args, nil
}

// Finding returns one finding with its history (reconcile.Reviewer): detection, resolutions
// and reopenings from the audit table, and its repair commands' states from the outbox, each
// with its failures and last error; and the findings it superseded.
func (s *Store[L]) Finding(ctx context.Context, id int64) (reconcile.FindingDetail, error) {
	rows, err := s.db.Query(ctx, s.own.finding,
		s.cfg.AggregateType, id)
	if err != nil {
		return reconcile.FindingDetail{}, fmt.Errorf("pgstore: finding %d: %w", id, err)
	}
	f, err := pgx.CollectExactlyOneRow(rows, scanFinding)
	if errors.Is(err, pgx.ErrNoRows) {
		return reconcile.FindingDetail{}, fmt.Errorf("pgstore: finding %d: %w", id, reconcile.ErrFindingNotFound)
	}
	if err != nil {
		return reconcile.FindingDetail{}, fmt.Errorf("pgstore: finding %d: %w", id, err)
	}
	d := reconcile.FindingDetail{Finding: s.withExternalIDs(ctx, []found{f})[0],
		History: []reconcile.FindingEvent{{At: f.DetectedAt, Action: reconcile.ActionDetected, Actor: f.Job}}}
	rows, err = s.db.Query(ctx, s.own.findingHistory, id)
	if err != nil {
		return reconcile.FindingDetail{}, fmt.Errorf("pgstore: history of finding %d: %w", id, err)
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByPos[reconcile.FindingEvent])
	if err != nil {
		return reconcile.FindingDetail{}, fmt.Errorf("pgstore: history of finding %d: %w", id, err)
	}
	d.History = append(d.History, events...)
	rows, err = s.db.Query(ctx, s.own.findingSupersedes, id)
	if err != nil {
		return reconcile.FindingDetail{}, fmt.Errorf("pgstore: findings superseded by %d: %w", id, err)
	}
	if d.Supersedes, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		return reconcile.FindingDetail{}, fmt.Errorf("pgstore: findings superseded by %d: %w", id, err)
	}
	return d, nil
}

// withExternalIDs returns the findings, those opened before findings kept their external id
// (migration 006) given the external ids of their rows if they are about this store's table.
// A failed look-up is logged, not returned: the findings are worth reviewing without them.
func (s *Store[L]) withExternalIDs(ctx context.Context, fs []found) []reconcile.Finding {
	out := make([]reconcile.Finding, len(fs))
	var ids []string
	for i, f := range fs {
		out[i] = f.Finding
		if f.ours && f.ExternalID == "" {
			ids = append(ids, f.RecordID)
		}
	}
	if len(ids) == 0 {
		return out
	}
	ext, err := s.externalIDs(ctx, ids)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "pgstore: reading external ids failed; findings are listed without them",
			slog.String("table", s.cfg.Table), slog.String("error", err.Error()))
		return out
	}
	for i, f := range fs {
		if f.ours && f.ExternalID == "" {
			out[i].ExternalID = ext[f.RecordID]
		}
	}
	return out
}

// searchColumn is the condition of FindingQuery.Search on one of Config.SearchColumns: cond
// has the searched value's placeholder number as %[1]d; valid says which values the column can
// hold (nil: any).
type searchColumn struct {
	cond  string
	valid func(string) bool
}

// searchCond is the condition of FindingQuery.Search, with the searched value's placeholder
// number as %[1]d and the store's aggregate type's as %[2]d (for findingsWhere): the finding's
// external id or record id is it, or, for a finding of this store's table, its row holds it in
// one of Config.SearchColumns. byRow says whether the condition has that last part, the only
// one that reads the aggregate type. Each is a lookup of its own that an index serves, their
// union the findings' ids: as one OR of conditions on the findings, it would scan them all.
func (s *Store[L]) searchCond(ctx context.Context, search string) (cond string, byRow bool, err error) {
	findings := s.cfg.Tables.table("findings")
	union := []string{
		"SELECT s.id FROM " + findings + " AS s WHERE s.external_id = $%[1]d",
		"SELECT s.id FROM " + findings + " AS s WHERE s.record_id = $%[1]d",
	}
	if len(s.cfg.SearchColumns) > 0 {
		st, err := s.statements(ctx)
		if err != nil {
			return "", false, err
		}
		var cols []string
		for _, c := range st.search {
			if c.valid == nil || c.valid(search) {
				cols = append(cols, c.cond)
			}
		}
		if len(cols) > 0 {
			byRow = true
			union = append(union, "SELECT s.id FROM "+findings+" AS s WHERE coalesce(s.aggregate_type = $%[2]d, true) AND s.record_id IN ("+
				st.searchRows+strings.Join(cols, " OR ")+")")
		}
	}
	return "f.id IN (" + strings.Join(union, " UNION ALL ") + ")", byRow, nil
}

var uuidID = regexp.MustCompile(`^(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`)

// externalIDs reads the external ids of rows of the host table by the ids findings record,
// compared in the id column's own type so that its index serves.
func (s *Store[L]) externalIDs(ctx context.Context, ids []string) (map[string]string, error) {
	st, err := s.statements(ctx)
	if err != nil {
		return nil, err
	}
	if st.externalIDsValid != nil {
		// A finding's record id came from this column, but one that the type cannot hold
		// (a finding of another table recorded before aggregate types, say) would fail the
		// whole cast.
		ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !st.externalIDsValid(id) })
	}
	found := map[string]string{}
	if len(ids) == 0 {
		return found, nil
	}
	rows, err := s.db.Query(ctx, st.externalIDs, ids)
	if err != nil {
		return nil, fmt.Errorf("pgstore: external ids from %s: %w", s.hostTable(), err)
	}
	var id, ext string
	_, err = pgx.ForEachRow(rows, []any{&id, &ext}, func() error {
		found[id] = ext
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: external ids from %s: %w", s.hostTable(), err)
	}
	return found, nil
}
