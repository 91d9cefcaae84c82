package pgstore

import (
	"context"
	"encoding/json"
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
	if err := s.checkCursor(b.Cursor); err != nil {
		return b, err
	}
	b.Records, err = s.readRange(ctx, st, req, &b.Cursor, "", "")
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
	query, args := s.rangeRead(st, req, &hint, "", "")
	var records []reconcile.Record[L]
	batch.Queue(query, args...).Query(func(rows pgx.Rows) error {
		records, rowsErr = s.scanRecords(rows)
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
	if err := s.checkCursor(b.Cursor); err != nil {
		return false, err
	}
	b.Records = records
	return true, nil
}

// checkCursor verifies the positions of a cursor read.
func (s *Store[L]) checkCursor(c reconcile.Cursor) error {
	for _, p := range []string{c.Position, c.End} {
		if p == "" {
			continue
		}
		if err := s.checkPosition(p); err != nil {
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

// readRange reads the next rows after cur's position within the bounds of a shard (lower and
// upper, JSON arrays of the first key column; empty is open) and the cycle's high-water mark.
// At a cycle's start it fixes the mark, in cur.End: the last key present now. An empty range
// gives no mark and no rows.
func (s *Store[L]) readRange(ctx context.Context, st *statements, req reconcile.ReadRequest, cur *reconcile.Cursor, lower, upper string) ([]reconcile.Record[L], error) {
	if cur.End == "" {
		var bounds []any
		if lower != "" {
			bounds = append(bounds, lower)
		}
		if upper != "" {
			bounds = append(bounds, upper)
		}
		err := s.db.QueryRow(ctx, st.keyset.highWater(lower != "", upper != ""), append(bounds, st.filterArgs...)...).Scan(&cur.End)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("read the cycle's last key in %s: %w", s.hostTable(), err)
		}
	}
	query, args := s.rangeRead(st, req, cur, lower, upper)
	return s.readRecords(ctx, query, args)
}

// rangeRead returns the keyset read of readRange, cur.End fixed, and its arguments.
func (s *Store[L]) rangeRead(st *statements, req reconcile.ReadRequest, cur *reconcile.Cursor, lower, upper string) (string, []any) {
	args := []any{req.Grace.Seconds(), req.Limit}
	after := cur.Position != ""
	if after {
		args = append(args, cur.Position)
	} else if lower != "" {
		args = append(args, lower)
	}
	if upper != "" {
		args = append(args, upper)
	}
	args = append(append(args, cur.End), st.filterArgs...)
	return st.keyset.read(after, lower != "", upper != "", true), args
}

// checkPosition verifies that a cursor position is a JSON array with one value per key column.
func (s *Store[L]) checkPosition(pos string) error {
	var vals []json.RawMessage
	if err := json.Unmarshal([]byte(pos), &vals); err != nil || len(vals) != len(s.cfg.KeyColumns) {
		return fmt.Errorf("position %q is not a key of %v; was the job's key changed?", pos, s.cfg.KeyColumns)
	}
	return nil
}

// readRecords runs one keyset read and returns its rows as records.
func (s *Store[L]) readRecords(ctx context.Context, query string, args []any) ([]reconcile.Record[L], error) {
	rows, err := s.db.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.hostTable(), err)
	}
	return s.scanRecords(rows)
}

// scanRecords returns the rows of a keyset read as records, and closes them.
func (s *Store[L]) scanRecords(rows pgx.Rows) ([]reconcile.Record[L], error) {
	defer rows.Close()
	var out []reconcile.Record[L]
	var r reconcile.Record[L]
	var ext, invalid *string
	var created *time.Time
	local := newRowScanner[L](s.row, rows, 7)
	dest := append([]any{&r.Key, &r.ID, &ext, &created, &r.Recent, &invalid, &r.Version}, local.dest()...)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("read %s: %w", s.hostTable(), err)
		}
		r.ExternalID, r.CreatedAt, r.Invalid = deref(ext), derefTime(created), deref(invalid)
		if why := local.local(rows, &r.Local); why != "" && r.Invalid == "" {
			r.Invalid = why
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", s.hostTable(), err)
	}
	return out, nil
}

// nullIfEmpty is s, or NULL for an empty s.
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func derefTime(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return *p
}
