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
	if hint, ok := s.hint(req.Job); ok {
		read, err := s.readAhead(ctx, st, req, hint, &b)
		if err != nil || read {
			return b, err
		}
	} else {
		err = s.db.QueryRow(ctx, st.readCursor, req.Job).Scan(&b.Cursor.Position, &b.Cursor.Version, &b.Cursor.End)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return b, s.cfg.Tables.wrap("read cursor", err)
		}
	}
	if err := checkCursor(st, b.Cursor); err != nil {
		return b, err
	}
	b.Records, err = s.table.ReadRange(ctx, req, &b.Cursor, "", "")
	if err != nil {
		return b, fmt.Errorf("pgstore: %w", err)
	}
	return b, nil
}

// ReadFrom reads the rows the Filter selects after cur, as Read does after the job's cursor,
// but neither reads nor writes the reconciler's tables, which need not exist: it is a keyset
// pass over the host table whose cursor the caller keeps (the command line's audit keeps it in
// memory, with a role that may only SELECT the host table). It needs SELECT on the host table
// and the catalog, nothing more. At a cycle's start (cur.End empty) it fixes the cycle's
// high-water mark, the last key present now; the Batch's Cursor is cur with that End. The
// caller moves its Position to the last record's Key for the next call; a Batch shorter than
// req.Limit is the cycle's end. req.Job is not read.
func (s *Store[L]) ReadFrom(ctx context.Context, req reconcile.ReadRequest, cur reconcile.Cursor) (reconcile.Batch[L], error) {
	b := reconcile.Batch[L]{Cursor: cur}
	if req.Limit <= 0 {
		return b, fmt.Errorf("pgstore: limit %d must be positive", req.Limit)
	}
	st, err := s.prepare(ctx, false)
	if err != nil {
		return b, err
	}
	if err := checkCursor(st, b.Cursor); err != nil {
		return b, err
	}
	b.Records, err = s.hostOnly.ReadRange(ctx, req, &b.Cursor, "", "")
	if err != nil {
		return b, fmt.Errorf("pgstore: %w", err)
	}
	return b, nil
}

// readAhead reads the job's cursor into b.Cursor and, in the same round trip, the rows after
// hint, the cursor this store's last commit of the job left. Only if the cursor is still hint
// are they the batch's rows (read is true); otherwise another process moved it, and the
// caller reads again from b.Cursor. As when the two reads take turns, the rows are read after
// the cursor, by a statement of their own.
func (s *Store[L]) readAhead(ctx context.Context, st *statements, req reconcile.ReadRequest, hint reconcile.Cursor, b *reconcile.Batch[L]) (read bool, err error) {
	batch := &pgx.Batch{}
	var cursorErr, rowsErr error
	batch.Queue(st.readCursor, req.Job).QueryRow(func(r pgx.Row) error {
		cursorErr = r.Scan(&b.Cursor.Position, &b.Cursor.Version, &b.Cursor.End)
		if errors.Is(cursorErr, pgx.ErrNoRows) {
			cursorErr = nil
		}
		return nil
	})
	query, args := st.spec.RangeRead(req, &hint, "", "")
	var records []reconcile.Record[L]
	batch.Queue(query, args...).Query(func(rows pgx.Rows) error {
		records, rowsErr = s.table.ScanRecords(st.spec, rows, req.Limit)
		return nil
	})
	if err := s.db.SendBatch(ctx, batch).Close(); err != nil && cursorErr == nil && rowsErr == nil {
		cursorErr = err
	}
	switch {
	case cursorErr != nil:
		return false, s.cfg.Tables.wrap("read cursor", cursorErr)
	case b.Cursor != hint:
		return false, nil
	case rowsErr != nil:
		return false, fmt.Errorf("pgstore: %w", rowsErr)
	}
	if err := checkCursor(st, b.Cursor); err != nil {
		return false, err
	}
	b.Records = records
	return true, nil
}

// checkCursor verifies the positions of a cursor read.
func checkCursor(st *statements, c reconcile.Cursor) error {
	for _, p := range []string{c.Position, c.End} {
		if p == "" {
			continue
		}
		if err := st.spec.CheckPosition(p); err != nil {
			return fmt.Errorf("pgstore: read cursor: %w", err)
		}
	}
	return nil
}

// hint returns the cursor the store's last commit of job left, if it knows one from which a
// read needs no other statement (the cycle's high-water mark fixed).
func (s *Store[L]) hint(job string) (reconcile.Cursor, bool) {
	s.hintsMu.Lock()
	defer s.hintsMu.Unlock()
	c, ok := s.hints[job]
	return c, ok && c.End != ""
}

// setHint records the cursor a commit of job left (none: forget it).
func (s *Store[L]) setHint(job string, c *reconcile.Cursor) {
	s.hintsMu.Lock()
	defer s.hintsMu.Unlock()
	if c == nil {
		delete(s.hints, job)
		return
	}
	if s.hints == nil {
		s.hints = map[string]reconcile.Cursor{}
	}
	s.hints[job] = *c
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
