package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
)

// ErrNoFinding is returned for a finding id that does not exist.
var ErrNoFinding = errors.New("pgstore: no such finding")

// Querier runs statements: a DB, or the host's own pgx.Tx so that resolving a finding commits
// together with the business change that fixed it.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ResolveFinding closes an open finding inside q (usually the canonical writer's transaction)
// and reports whether it was open. Resolving a closed finding changes nothing and returns false:
// a repair and a person may both get there. Once resolved, the same drift can be found again.
func (s *Store) ResolveFinding(ctx context.Context, q Querier, id int64, resolution, actor string) (bool, error) {
	if resolution == "" {
		return false, errors.New("pgstore: resolve finding: empty resolution")
	}
	var open bool
	err := q.QueryRow(ctx, `WITH f AS (SELECT id FROM `+s.cfg.Tables.table("findings")+` WHERE id = $1),
		upd AS (UPDATE `+s.cfg.Tables.table("findings")+` SET resolved_at = now(), resolution = $2, resolved_by = $3
			WHERE id = $1 AND resolved_at IS NULL RETURNING id)
		SELECT EXISTS (SELECT 1 FROM upd) FROM f`, id, resolution, actor).Scan(&open)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("%w: %d", ErrNoFinding, id)
	}
	if err != nil {
		return false, fmt.Errorf("pgstore: resolve finding %d: %w", id, err)
	}
	return open, nil
}

const findingColumns = `id, job, record_id, kind, local_state, external_state, detail, command,
	detected_at, resolved_at, coalesce(resolution, '')`

func scanFinding(row pgx.CollectableRow) (reconcile.Finding, error) {
	var f reconcile.Finding
	var resolved *time.Time
	err := row.Scan(&f.ID, &f.Job, &f.RecordID, &f.Kind, &f.Local, &f.External, &f.Detail, &f.Command,
		&f.DetectedAt, &resolved, &f.Resolution)
	if resolved != nil {
		f.ResolvedAt = *resolved
	}
	return f, err
}

// Findings returns a job's findings, open and resolved, oldest first, at most limit of them
// after the given id (0 to start): a keyset page.
func (s *Store) Findings(ctx context.Context, job string, afterID int64, limit int) ([]reconcile.Finding, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("pgstore: findings: limit %d must be positive", limit)
	}
	rows, err := s.db.Query(ctx, `SELECT `+findingColumns+` FROM `+s.cfg.Tables.table("findings")+`
		WHERE job = $1 AND id > $2 ORDER BY id LIMIT $3`, job, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("pgstore: findings: %w", err)
	}
	fs, err := pgx.CollectRows(rows, scanFinding)
	if err != nil {
		return nil, fmt.Errorf("pgstore: findings: %w", err)
	}
	return fs, nil
}
