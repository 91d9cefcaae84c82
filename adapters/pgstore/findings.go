package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
)

// ErrNoFinding is returned for a finding id that does not exist.
var ErrNoFinding = errors.New("pgstore: no such finding")

// DefaultStaleAfter is how long a finding may stay open before Status counts it as stale: a
// repair that never applied (its command dead) shows up there.
const DefaultStaleAfter = 24 * time.Hour

// Querier runs statements: a DB, or the host's own pgx.Tx so that resolving a finding commits
// together with the business change that fixed it.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ResolveFinding closes an open finding inside q and records the change in the finding's
// history; it reports whether the finding was open. Call it from the canonical writer, in the
// transaction of the business change that fixed the drift, so that both commit or neither does.
// Resolving a closed finding changes nothing and returns false: a repair and a webhook (or a
// person) may both get there. Once resolved, the same drift can be found again.
func (s *Store) ResolveFinding(ctx context.Context, q Querier, id int64, r reconcile.Resolution) (bool, error) {
	if err := r.Validate(); err != nil {
		return false, err
	}
	var exists, open bool
	err := q.QueryRow(ctx, `WITH upd AS (
			UPDATE `+s.cfg.Tables.table("findings")+` SET resolved_at = now(), resolution = $2, resolved_by = $3, resolution_note = $4
			WHERE id = $1 AND resolved_at IS NULL RETURNING id
		), ev AS (
			INSERT INTO `+s.cfg.Tables.table("finding_events")+` (finding_id, action, actor, resolution, note)
			SELECT id, 'resolved', $3, $2, $4 FROM upd RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM `+s.cfg.Tables.table("findings")+` WHERE id = $1), EXISTS (SELECT 1 FROM ev)`,
		id, r.As, r.By, r.Note).Scan(&exists, &open)
	if err != nil {
		return false, fmt.Errorf("pgstore: resolve finding %d: %w", id, err)
	}
	if !exists {
		return false, fmt.Errorf("%w: %d", ErrNoFinding, id)
	}
	return open, nil
}

// ResolveRecordFindings closes every open finding of the given kinds about one row of this
// store's table (its AggregateType; findings recorded before the column existed have none and
// match any table), in any job over it, and returns their ids. It is the
// webhook's side of the canonical writer: a webhook knows the payment, not the finding, and the
// drift it fixes may have been found by any tier's job. No kinds means every kind.
func (s *Store) ResolveRecordFindings(ctx context.Context, q Querier, recordID string, kinds []string, r reconcile.Resolution) ([]int64, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, `WITH upd AS (
			UPDATE `+s.cfg.Tables.table("findings")+` SET resolved_at = now(), resolution = $3, resolved_by = $4, resolution_note = $5
			WHERE record_id = $1 AND (aggregate_type = $6 OR aggregate_type IS NULL) AND resolved_at IS NULL
				AND (coalesce(cardinality($2::text[]), 0) = 0 OR kind = ANY($2))
			RETURNING id
		), ev AS (
			INSERT INTO `+s.cfg.Tables.table("finding_events")+` (finding_id, action, actor, resolution, note)
			SELECT id, 'resolved', $4, $3, $5 FROM upd
		)
		SELECT id FROM upd ORDER BY id`, recordID, kinds, r.As, r.By, r.Note, s.cfg.AggregateType)
	if err != nil {
		return nil, fmt.Errorf("pgstore: resolve findings of record %s: %w", recordID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("pgstore: resolve findings of record %s: %w", recordID, err)
	}
	return ids, nil
}

// ErrAlreadyOpen is returned when reopening a finding whose drift has since been found again:
// the newer finding is the open one.
var ErrAlreadyOpen = errors.New("pgstore: an open finding of the same job, record and kind exists")

// ReopenFinding opens a resolved finding again (the fix did not hold, or was recorded by
// mistake) and records who did it and why; it reports whether the finding was closed. If the
// same drift has been found again since, the newer finding is the open one: ErrAlreadyOpen, and
// q (the host's transaction, perhaps) is left usable.
func (s *Store) ReopenFinding(ctx context.Context, q Querier, id int64, by, note string) (bool, error) {
	if by == "" {
		return false, errors.New("pgstore: reopen finding: the actor is empty")
	}
	findings := s.cfg.Tables.table("findings")
	var exists, sibling, reopened bool
	err := q.QueryRow(ctx, `WITH f AS (
			SELECT id, job, record_id, kind, resolved_at FROM `+findings+` WHERE id = $1
		), sibling AS (
			SELECT EXISTS (SELECT 1 FROM `+findings+` AS o, f WHERE o.job = f.job AND o.record_id = f.record_id
				AND o.kind = f.kind AND o.resolved_at IS NULL AND o.id <> f.id) AS found
		), upd AS (
			UPDATE `+findings+` AS t SET resolved_at = NULL, resolution = NULL, resolved_by = NULL, resolution_note = NULL
			FROM sibling WHERE t.id = $1 AND t.resolved_at IS NOT NULL AND NOT sibling.found RETURNING t.id
		), ev AS (
			INSERT INTO `+s.cfg.Tables.table("finding_events")+` (finding_id, action, actor, note)
			SELECT id, 'reopened', $2, $3 FROM upd RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM f), (SELECT found FROM sibling), EXISTS (SELECT 1 FROM ev)`,
		id, by, note).Scan(&exists, &sibling, &reopened)
	switch {
	case err != nil:
		// A sibling opened concurrently still trips the unique index; that is rare enough to
		// surface as the database's error.
		return false, fmt.Errorf("pgstore: reopen finding %d: %w", id, err)
	case !exists:
		return false, fmt.Errorf("%w: %d", ErrNoFinding, id)
	case sibling && !reopened:
		return false, fmt.Errorf("pgstore: reopen finding %d: %w", id, ErrAlreadyOpen)
	}
	return reopened, nil
}

const findingColumns = `f.id, f.job, f.record_id, f.kind, f.local_state, f.external_state, f.detail, f.command,
	f.detected_at, f.resolved_at, coalesce(f.resolution, ''), coalesce(f.resolved_by, ''), coalesce(f.resolution_note, '')`

func scanFinding(row pgx.CollectableRow) (reconcile.Finding, error) {
	var f reconcile.Finding
	var resolved *time.Time
	err := row.Scan(&f.ID, &f.Job, &f.RecordID, &f.Kind, &f.Local, &f.External, &f.Detail, &f.Command,
		&f.DetectedAt, &resolved, &f.Resolution, &f.ResolvedBy, &f.ResolutionNote)
	if resolved != nil {
		f.ResolvedAt = *resolved
	}
	return f, err
}

// FindingQuery selects findings for review. The zero value means every open finding, oldest
// first, 100 per page.
type FindingQuery struct {
	// Job and Kind filter when set.
	Job, Kind string
	// RecordID filters to one local row when set.
	RecordID string
	// State is "open" (the default), "resolved" or "all".
	State string
	// DetectedBefore keeps findings detected before this time: DetectedBefore =
	// now - 24h lists those open for more than a day.
	DetectedBefore time.Time
	// AfterID continues from the last id of the previous page (keyset pagination).
	AfterID int64
	// Limit is the page size; zero means 100.
	Limit int
}

// ListFindings returns a page of findings, oldest first by id.
func (s *Store) ListFindings(ctx context.Context, fq FindingQuery) ([]reconcile.Finding, error) {
	if fq.Limit < 0 {
		return nil, fmt.Errorf("pgstore: list findings: limit %d is negative", fq.Limit)
	}
	if fq.Limit == 0 {
		fq.Limit = 100
	}
	// Only the filters asked for are in the statement, so that each shape gets a plan that
	// uses the indexes on open findings.
	where := []string{"f.id > $1"}
	args := []any{fq.AfterID}
	switch fq.State {
	case "", "open":
		where = append(where, "f.resolved_at IS NULL")
	case "resolved":
		where = append(where, "f.resolved_at IS NOT NULL")
	case "all":
	default:
		return nil, fmt.Errorf("pgstore: list findings: state %q is not open, resolved or all", fq.State)
	}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if fq.Job != "" {
		add("f.job = $%d", fq.Job)
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
	args = append(args, fq.Limit)
	rows, err := s.db.Query(ctx, `SELECT `+findingColumns+` FROM `+s.cfg.Tables.table("findings")+` AS f
		WHERE `+strings.Join(where, " AND ")+fmt.Sprintf(` ORDER BY f.id LIMIT $%d`, len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list findings: %w", err)
	}
	fs, err := pgx.CollectRows(rows, scanFinding)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list findings: %w", err)
	}
	return fs, nil
}

// Findings returns a job's findings, open and resolved, oldest first, at most limit of them
// after the given id (0 to start): a keyset page.
func (s *Store) Findings(ctx context.Context, job string, afterID int64, limit int) ([]reconcile.Finding, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("pgstore: findings: limit %d must be positive", limit)
	}
	return s.ListFindings(ctx, FindingQuery{Job: job, State: "all", AfterID: afterID, Limit: limit})
}

// FindingEvent is one entry of a finding's history.
type FindingEvent struct {
	At time.Time
	// Action is "detected", "resolved", "reopened", or for its repair command "command
	// pending", "command done" or "command dead".
	Action     string
	Actor      string
	Resolution string
	Note       string
}

// FindingDetail is one finding with its history, for review.
type FindingDetail struct {
	reconcile.Finding
	// History is oldest first: detection, every resolution and reopening, and the state of
	// its repair commands.
	History []FindingEvent
}

// Finding returns one finding with its history.
func (s *Store) Finding(ctx context.Context, id int64) (FindingDetail, error) {
	rows, err := s.db.Query(ctx, `SELECT `+findingColumns+` FROM `+s.cfg.Tables.table("findings")+` AS f WHERE f.id = $1`, id)
	if err != nil {
		return FindingDetail{}, fmt.Errorf("pgstore: finding %d: %w", id, err)
	}
	f, err := pgx.CollectExactlyOneRow(rows, scanFinding)
	if errors.Is(err, pgx.ErrNoRows) {
		return FindingDetail{}, fmt.Errorf("%w: %d", ErrNoFinding, id)
	}
	if err != nil {
		return FindingDetail{}, fmt.Errorf("pgstore: finding %d: %w", id, err)
	}
	d := FindingDetail{Finding: f, History: []FindingEvent{{At: f.DetectedAt, Action: "detected", Actor: f.Job}}}
	rows, err = s.db.Query(ctx, `SELECT at, action, actor, coalesce(resolution, ''), note FROM (
			SELECT at, action, actor, resolution, note, 0 AS src, id FROM `+s.cfg.Tables.table("finding_events")+` WHERE finding_id = $1
			UNION ALL
			SELECT coalesce(processed_at, dead_at, created_at), 'command ' || status, event_type,
				NULL, coalesce(last_error, ''), 1, id
			FROM `+s.cfg.Tables.table("outbox")+` WHERE finding_id = $1
		) h ORDER BY at, src, id`, id)
	if err != nil {
		return FindingDetail{}, fmt.Errorf("pgstore: history of finding %d: %w", id, err)
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByPos[FindingEvent])
	if err != nil {
		return FindingDetail{}, fmt.Errorf("pgstore: history of finding %d: %w", id, err)
	}
	d.History = append(d.History, events...)
	return d, nil
}
