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
	// The nullable columns scan into values rather than pointers, which pgx would allocate
	// anew for every row that is not NULL.
	var ext, invalid pgtype.Text
	var created pgtype.Timestamptz
	var id int64
	var uuid [16]byte
	var xmin uint32
	var dest []any
	switch st.IDKey {
	case IntIDKey:
		dest = []any{&id}
	case TextIDKey:
		dest = []any{&r.ID}
	case UUIDIDKey:
		dest = []any{&uuid}
	default:
		dest = []any{&r.Key, &r.ID}
	}
	dest = append(dest, &ext, &created, &r.Recent, &invalid, &r.Version)
	if st.XminVersion {
		dest[len(dest)-1] = &xmin
	}
	local := t.locals.Scanner(rows, len(dest))
	dest = append(dest, local.Dest()...)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("read %s: %w", st.Host, err)
		}
		switch st.IDKey {
		case IntIDKey:
			r.ID = strconv.FormatInt(id, 10) // as id::text writes it
			r.Key = "[" + r.ID + "]"
		case TextIDKey:
			r.Key = jsonbKey(r.ID)
		case UUIDIDKey:
			r.Key = uuidKey(&uuid)
			r.ID = r.Key[2:38]
		}
		if st.XminVersion {
			r.Version = strconv.FormatUint(uint64(xmin), 10) // as xmin::text writes it
		}
		r.ExternalID, r.CreatedAt, r.Invalid = ext.String, created.Time, invalid.String
		if why := local.Local(rows, &r.Local); why != "" && r.Invalid == "" {
			r.Invalid = why
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", st.Host, err)
	}
	return out, nil
}

// maxScanRoom bounds the room ScanRecords makes before the rows come.
const maxScanRoom = 10000
