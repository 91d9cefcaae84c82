package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
)

// Read returns the rows the Filter selects after the job's cursor, in key order, judging grace
// by the database clock.
func (s *Store[L]) Read(ctx context.Context, req reconcile.ReadRequest) (reconcile.Batch[L], error) {
	var b reconcile.Batch[L]
	if req.Limit <= 0 {
		return b, fmt.Errorf("pgstore: limit %d must be positive", req.Limit)
	}
	st, err := s.statements(ctx)
	if err != nil {
		return b, err
	}
	err = s.db.QueryRow(ctx, st.readCursor, req.Job).Scan(&b.Cursor.Position, &b.Cursor.Version, &b.Cursor.End)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return b, s.cfg.Tables.wrap("read cursor", err)
	}
	for _, p := range []string{b.Cursor.Position, b.Cursor.End} {
		if p == "" {
			continue
		}
		if err := st.spec.CheckPosition(p); err != nil {
			return b, fmt.Errorf("pgstore: read cursor: %w", err)
		}
	}
	b.Records, err = s.table.ReadRange(ctx, req, &b.Cursor, "", "")
	if err != nil {
		return b, fmt.Errorf("pgstore: %w", err)
	}
	return b, nil
}

// nullIfEmpty is s, or NULL for an empty s.
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func derefTime(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return *p
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
