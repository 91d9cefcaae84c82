package pgstore

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/reconcilekit/reconcile/internal/hosttable"
)

// rowType is how a Store[L] reads a row's local state L: the text of the state column when L
// is a string type, or the host columns that a struct L's fields map to.
type rowType struct {
	// text reports that L is a string type, read from Config.StateColumn as text.
	text bool
	// fields are a struct L's mapped fields, in field order.
	fields []rowField
}

// rowField is one field of a struct L and the host column it is read from.
type rowField struct {
	name   string // the field's name, as Go spells it (Embedded.Field for a promoted one)
	column string
	index  []int // for reflect.Value.FieldByIndex
	typ    reflect.Type
}

var naiveType = reflect.TypeFor[pgtype.Timestamp]()

// newRowType maps L to host columns: a string type is the state column; a struct's exported
// fields are columns named by their db tag, or by their lowercased name when untagged; db:"-"
// skips a field, and an untagged exported embedded struct contributes its own fields. columns
// (Config.Columns) renames fields' columns, or skips a field ("-").
func newRowType[L any](columns map[string]string) (*rowType, error) {
	typ := reflect.TypeFor[L]()
	switch typ.Kind() {
	case reflect.String:
		if len(columns) > 0 {
			return nil, fmt.Errorf("pgstore: config: Columns names struct fields, and the row type %v is a string (its column is StateColumn)", typ)
		}
		return &rowType{text: true}, nil
	case reflect.Struct:
	default:
		return nil, fmt.Errorf("pgstore: row type %v is neither a string nor a struct", typ)
	}
	rt := &rowType{}
	rt.addFields(typ, nil, "")
	if err := rt.rename(typ, columns); err != nil {
		return nil, err
	}
	if len(rt.fields) == 0 {
		return nil, fmt.Errorf("pgstore: row type %v has no field mapped to a column (exported, not db:\"-\")", typ)
	}
	seen := map[string]string{}
	for _, f := range rt.fields {
		if err := checkIdent("column of struct field "+f.name, f.column); err != nil {
			return nil, err
		}
		if other, ok := seen[f.column]; ok {
			return nil, fmt.Errorf("pgstore: row type %v: struct fields %s and %s both map to column %q", typ, other, f.name, f.column)
		}
		seen[f.column] = f.name
	}
	return rt, nil
}

// rename gives the fields that columns names (Config.Columns) their column, and drops those
// it maps to "-". A name that is no mapped field of typ is an error: a typo would otherwise
// read the tag's column silently.
func (rt *rowType) rename(typ reflect.Type, columns map[string]string) error {
	if len(columns) == 0 {
		return nil
	}
	used := map[string]bool{}
	kept := rt.fields[:0]
	for _, f := range rt.fields {
		if c, ok := columns[f.name]; ok {
			used[f.name] = true
			if c == "-" {
				continue
			}
			f.column = c
		}
		kept = append(kept, f)
	}
	rt.fields = kept
	for _, name := range slices.Sorted(maps.Keys(columns)) {
		if !used[name] {
			return fmt.Errorf("pgstore: config: Columns names %q, which is no field of row type %v mapped to a column", name, typ)
		}
	}
	return nil
}

// addFields adds the mapped fields of struct type t, found at index under L, their names
// prefixed. An unexported embedded struct is skipped like any unexported field: reflect cannot
// set what is reached through it.
func (rt *rowType) addFields(t reflect.Type, index []int, prefix string) {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, tagged := sf.Tag.Lookup("db")
		if tag == "-" || !sf.IsExported() {
			continue
		}
		idx := append(append([]int(nil), index...), i)
		if sf.Anonymous && !tagged && sf.Type.Kind() == reflect.Struct {
			rt.addFields(sf.Type, idx, prefix+sf.Name+".")
			continue
		}
		col, _, _ := strings.Cut(tag, ",")
		if col == "" {
			col = strings.ToLower(sf.Name)
		}
		rt.fields = append(rt.fields, rowField{name: prefix + sf.Name, column: col, index: idx, typ: sf.Type})
	}
}

// selectList is what the keyset reads and Match select for L, after their own columns: the
// state column as text, or each mapped column in its own type. A timestamp without time zone is
// taken to be in cfg.TimeZone, as the store reads every naive time, and comes as a timestamptz
// (into a time.Time, *time.Time, sql.NullTime or pgtype.Timestamptz), unless its field keeps
// it as stored: a pgtype.Timestamp or a string.
func (rt *rowType) selectList(p *sqlParts) string {
	if rt.text {
		return p.q(p.cfg.StateColumn) + "::text"
	}
	cols := make([]string, len(rt.fields))
	for i, f := range rt.fields {
		cols[i] = p.q(f.column)
		if p.types[f.column] == naiveTimestamp && !keepsNaive(f.typ) {
			cols[i] = p.ts(f.column)
		}
	}
	return strings.Join(cols, ", ")
}

// keepsNaive reports whether a field of type t takes a timestamp without time zone as stored,
// its wall clock with no zone: a pgtype.Timestamp or a string, or a pointer to one.
func keepsNaive(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t == naiveType || t.Kind() == reflect.String
}

// rowScanner reads the local state of each row of one result, whose L columns (selectList)
// start at index first. A struct's fields are decoded one by one from the raw values, with
// scan plans made once per result as pgx's own Scan does: a value one field cannot take (NULL
// into an int64, say) makes that row invalid instead of failing the whole result, as
// rows.Scan would.
type rowScanner[L any] struct {
	rt    *rowType
	first int
	state pgtype.Text // the state column's text, when L is a string type (a value: no allocation a row)
	m     *pgtype.Map
	plans []pgtype.ScanPlan
}

// rowLocals is a Store[L]'s hosttable.Locals: how its reads scan L.
type rowLocals[L any] struct{ rt *rowType }

func (r rowLocals[L]) Scanner(rows pgx.Rows, first int) hosttable.LocalScanner[L] {
	return newRowScanner[L](r.rt, rows, first)
}

func newRowScanner[L any](rt *rowType, rows pgx.Rows, first int) *rowScanner[L] {
	s := &rowScanner[L]{rt: rt, first: first}
	if rt.text {
		return s
	}
	if c := rows.Conn(); c != nil {
		s.m = c.TypeMap()
	} else {
		s.m = pgtype.NewMap()
	}
	return s
}

// Dest returns the scan destinations of L's columns for rows.Scan: the state's text, or nil
// for each of a struct's columns (decoded by local from the raw values).
func (s *rowScanner[L]) Dest() []any {
	if s.rt.text {
		return []any{&s.state}
	}
	return make([]any, len(s.rt.fields))
}

// Local sets *dst to the current row's local state, and returns why it cannot be read, or "".
func (s *rowScanner[L]) Local(rows pgx.Rows, dst *L) string {
	if s.rt.text {
		v := s.state.String // "" for NULL
		if p, ok := any(dst).(*string); ok {
			*p = v
		} else {
			reflect.ValueOf(dst).Elem().SetString(v)
		}
		return ""
	}
	if s.plans == nil {
		fds := rows.FieldDescriptions()[s.first:]
		s.plans = make([]pgtype.ScanPlan, len(s.rt.fields))
		for i, f := range s.rt.fields {
			s.plans[i] = s.m.PlanScan(fds[i].DataTypeOID, fds[i].Format, reflect.New(f.typ).Interface())
		}
	}
	// Every field is scanned (a NULL sets a pointer field to nil), so nothing of the previous
	// row stays in *dst unless a field fails; then none of the row does.
	v := reflect.ValueOf(dst).Elem()
	raw := rows.RawValues()[s.first:]
	for i, f := range s.rt.fields {
		if err := s.plans[i].Scan(raw[i], v.FieldByIndex(f.index).Addr().Interface()); err != nil {
			var zero L
			*dst = zero
			return fmt.Sprintf("column %s (struct field %s): %v", f.column, f.name, err)
		}
	}
	return ""
}

// checkSample decodes a few rows of the host table, if it has any, into L's fields, so that a
// field whose Go type cannot hold its column's type (text into an int64, say) fails Check
// instead of making every row an invalid_row finding. A field fails only if none of the
// sampled values of its column fits it: a value that does not fit while others do (a fraction
// in a numeric column read as int64) is a fault of its row, an invalid_row finding when the
// row is read, and the row sampled first must not stop every job over the table. NULLs are not
// judged either: a NULL that its field cannot take is a fault of that row too.
func (rt *rowType) checkSample(ctx context.Context, db DB, p *sqlParts) error {
	if rt.text {
		return nil
	}
	rows, err := db.Query(ctx, "SELECT "+rt.selectList(p)+" FROM "+p.host+" AS h LIMIT "+strconv.Itoa(sampleRows))
	if err != nil {
		return fmt.Errorf("pgstore: read a row of %s: %w", p.host, err)
	}
	defer rows.Close()
	m := pgtype.NewMap()
	if c := rows.Conn(); c != nil {
		m = c.TypeMap()
	}
	fails := make([]error, len(rt.fields)) // the first failure of each field none of whose values fit yet
	fits := make([]bool, len(rt.fields))
	for rows.Next() {
		fds, raw := rows.FieldDescriptions(), rows.RawValues()
		for i, f := range rt.fields {
			if raw[i] == nil || fits[i] {
				continue
			}
			plan := m.PlanScan(fds[i].DataTypeOID, fds[i].Format, reflect.New(f.typ).Interface())
			if err := plan.Scan(raw[i], reflect.New(f.typ).Interface()); err != nil {
				if fails[i] == nil {
					fails[i] = fmt.Errorf("pgstore: struct field %s (%v) cannot hold column %s (%s) of %s: %w",
						f.name, f.typ, f.column, p.types[f.column], p.host, err)
				}
				continue
			}
			fits[i], fails[i] = true, nil
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, err := range fails {
		if err != nil {
			return err
		}
	}
	return nil
}

// sampleRows is how many rows checkSample decodes.
const sampleRows = 10
