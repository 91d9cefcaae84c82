package hosttable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/reconcilekit/reconcile"
)

// ReadRange reads the next rows after cur's position within the bounds of a key range (lower
// and upper, JSON arrays of the first key column; empty is open) and the cycle's high-water
// mark. At a cycle's start it fixes the mark, in cur.End: the last key present now. An empty
// range gives no mark and no rows.
func (t *Table[L]) ReadRange(ctx context.Context, req reconcile.ReadRequest, cur *reconcile.Cursor, lower, upper string) ([]reconcile.Record[L], error) {
	st, err := t.Spec(ctx)
	if err != nil {
		return nil, err
	}
	if cur.End == "" {
		var bounds []any
		if lower != "" {
			bounds = append(bounds, lower)
		}
		if upper != "" {
			bounds = append(bounds, upper)
		}
		err := t.db.QueryRow(ctx, st.keyset.highWater(lower != "", upper != ""), append(bounds, st.filterArgs...)...).Scan(&cur.End)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("read the cycle's last key in %s: %w", st.Host, err)
		}
	}
	query, args := st.RangeRead(req, cur, lower, upper)
	rows, err := t.db.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", st.Host, err)
	}
	return t.ScanRecords(st, rows, req.Limit)
}

// RangeRead returns ReadRange's keyset read of the rows after cur's position, cur.End (the
// cycle's high-water mark) fixed, and its arguments.
func (s *Spec) RangeRead(req reconcile.ReadRequest, cur *reconcile.Cursor, lower, upper string) (string, []any) {
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
	args = append(append(args, cur.End), s.filterArgs...)
	return s.keyset.read(after, lower != "", upper != "", true), args
}

// CheckPosition verifies that a cursor position is a JSON array with one value per key column.
func (s *Spec) CheckPosition(pos string) error {
	var vals []json.RawMessage
	if err := json.Unmarshal([]byte(pos), &vals); err != nil || len(vals) != len(s.KeyNames) {
		return fmt.Errorf("position %q is not a key of %v; was the job's key changed?", pos, s.KeyNames)
	}
	return nil
}

// ScanRecords returns the rows of a keyset read (RangeRead) of at most limit rows as records,
// and closes them.
func (t *Table[L]) ScanRecords(st *Spec, rows pgx.Rows, limit int) ([]reconcile.Record[L], error) {
	defer rows.Close()
	// Room for a full read, within reason: a batch is read whole, and growing the slice as it
	// fills copied it over and over.
	out := make([]reconcile.Record[L], 0, min(max(limit, 0), maxScanRoom))
	var r reconcile.Record[L]
	sc := t.Scanner(st, rows)
	for rows.Next() {
		if err := sc.Scan(&r); err != nil {
			return nil, fmt.Errorf("read %s: %w", st.Host, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", st.Host, err)
	}
	return out, nil
}

// RecordScanner reads records from the rows of a statement whose select list is a keyset
// read's (Spec.Select's) up to the local state's columns, then the caller's own columns.
type RecordScanner[L any] struct {
	st    *Spec
	rows  pgx.Rows
	dest  []any
	local LocalScanner[L]
	// The row's columns. The nullable ones scan into values rather than pointers, which pgx
	// would allocate anew for every row that is not NULL.
	key, id      string
	intID        int64
	uuid         [16]byte
	ext, invalid pgtype.Text
	created      pgtype.Timestamptz
	recent       bool
	version      string
	xmin         uint32
}

// Scanner returns the reader of rows' records (Spec.Select's columns) and of extra, the
// destinations of the columns the statement selects after them.
func (t *Table[L]) Scanner(st *Spec, rows pgx.Rows, extra ...any) *RecordScanner[L] {
	s := &RecordScanner[L]{st: st, rows: rows}
	switch st.IDKey {
	case IntIDKey:
		s.dest = []any{&s.intID}
	case TextIDKey:
		s.dest = []any{&s.id}
	case UUIDIDKey:
		s.dest = []any{&s.uuid}
	default:
		s.dest = []any{&s.key, &s.id}
	}
	s.dest = append(s.dest, &s.ext, &s.created, &s.recent, &s.invalid, &s.version)
	if st.XminVersion {
		s.dest[len(s.dest)-1] = &s.xmin
	}
	s.local = t.locals.Scanner(rows, len(s.dest))
	s.dest = append(append(s.dest, s.local.Dest()...), extra...)
	return s
}

// Scan sets *r to the current row's record, writing the key, id and version text that the
// statement left to the reader as the server writes it, and the extra destinations.
func (s *RecordScanner[L]) Scan(r *reconcile.Record[L]) error {
	if err := s.rows.Scan(s.dest...); err != nil {
		return err
	}
	switch s.st.IDKey {
	case IntIDKey:
		r.ID = strconv.FormatInt(s.intID, 10) // as id::text writes it
		r.Key = "[" + r.ID + "]"
	case TextIDKey:
		r.Key, r.ID = jsonbKey(s.id), s.id
	case UUIDIDKey:
		r.Key = uuidKey(&s.uuid)
		r.ID = r.Key[2:38]
	default:
		r.Key, r.ID = s.key, s.id
	}
	r.Version = s.version
	if s.st.XminVersion {
		r.Version = strconv.FormatUint(uint64(s.xmin), 10) // as xmin::text writes it
	}
	r.ExternalID, r.CreatedAt, r.Recent, r.Invalid = s.ext.String, s.created.Time, s.recent, s.invalid.String
	if why := s.local.Local(s.rows, &r.Local); why != "" && r.Invalid == "" {
		r.Invalid = why
	}
	return nil
}

// maxScanRoom bounds the room ScanRecords makes before the rows come.
const maxScanRoom = 10000
