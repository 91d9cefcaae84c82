package hosttable

import (
	"database/sql/driver"
	"sync"

	"github.com/jackc/pgx/v5/pgtype"
)

// The arrays a commit binds (QueueResults) encode as []string and []pgtype.Timestamptz do, a
// NULL array for a nil slice, without the allocation pgx makes for each element of those: it
// boxes every element into an interface (pgtype.FlatArray.Index), through reflection for a
// Timestamptz. Here an element is handed over as a pointer into the slice, which an interface
// holds without allocating. Where the parameter's type is not known to pgx (a pool in
// QueryExecModeExec or QueryExecModeSimpleProtocol), each is a driver.Valuer: the array's text,
// as pgx writes the slice's.

// texts is a text[] parameter.
type texts []string

// Dimensions is pgtype.ArrayGetter's: none (NULL) for a nil slice.
func (a texts) Dimensions() []pgtype.ArrayDimension {
	if a == nil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(len(a)), LowerBound: 1}}
}

// Index is pgtype.ArrayGetter's: the i-th element, by reference.
func (a texts) Index(i int) any { return textRef{&a[i]} }

// IndexType is pgtype.ArrayGetter's.
func (a texts) IndexType() any { return textRef{} }

// textRef is a string by reference, a pgtype.TextValuer.
type textRef struct{ s *string }

// TextValue is pgtype.TextValuer's.
func (r textRef) TextValue() (pgtype.Text, error) { return pgtype.Text{String: *r.s, Valid: true}, nil }

// Value is driver.Valuer's: the array's text, as pgx writes a []string's; nil for a nil slice.
func (a texts) Value() (driver.Value, error) { return arrayText(pgtype.TextArrayOID, []string(a)) }

// times is a timestamptz[] parameter.
type times []pgtype.Timestamptz

// Dimensions is pgtype.ArrayGetter's: none (NULL) for a nil slice.
func (a times) Dimensions() []pgtype.ArrayDimension {
	if a == nil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(len(a)), LowerBound: 1}}
}

// Index is pgtype.ArrayGetter's: the i-th element, by reference (a pgtype.TimestamptzValuer).
func (a times) Index(i int) any { return &a[i] }

// IndexType is pgtype.ArrayGetter's.
func (a times) IndexType() any { return (*pgtype.Timestamptz)(nil) }

// Value is driver.Valuer's: the array's text, as pgx writes a []pgtype.Timestamptz's; nil for
// a nil slice.
func (a times) Value() (driver.Value, error) {
	return arrayText(pgtype.TimestamptzArrayOID, []pgtype.Timestamptz(a))
}

// textMap encodes arrayText's arrays: a Map is costly to make and not safe for concurrent use.
var textMap struct {
	sync.Mutex
	m *pgtype.Map
}

// arrayText is v as pgx writes an array of type oid in text format; nil for NULL.
func arrayText(oid uint32, v any) (driver.Value, error) {
	textMap.Lock()
	defer textMap.Unlock()
	if textMap.m == nil {
		textMap.m = pgtype.NewMap()
	}
	buf, err := textMap.m.Encode(oid, pgtype.TextFormatCode, v, nil)
	if err != nil || buf == nil {
		return nil, err
	}
	return string(buf), nil
}
