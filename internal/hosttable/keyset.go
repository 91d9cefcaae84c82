package hosttable

import (
	"fmt"
	"strings"
)

// IDKey is a key that is the id column alone, of a type whose key text RecordScanner writes
// itself (Spec.IDKey).
type IDKey uint8

const (
	// NotIDKey: the read selects the key's JSON text and the id's text, as the server writes them.
	NotIDKey IDKey = iota
	// IntIDKey: an integer id (smallint, integer, bigint), selected as itself.
	IntIDKey
	// TextIDKey: a text or varchar id, selected as itself.
	TextIDKey
	// UUIDIDKey: a uuid id, selected as itself.
	UUIDIDKey
)

// uuidKey is the key of a uuid id alone as jsonb_build_array(id)::text writes it: the uuid in
// lower-case hex, grouped 8-4-4-4-12 as uuid_out writes it, quoted, in brackets.
func uuidKey(u *[16]byte) string {
	const hexDigits = "0123456789abcdef"
	b := make([]byte, 0, 40)
	b = append(b, '[', '"')
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return string(append(b, '"', ']'))
}

// jsonbKey is the key of a text id alone as jsonb_build_array(id)::text writes it: a JSON
// string escaped as PostgreSQL's escape_json does (a control character as \b, \f, \n, \r,
// \t or \u00xx in lower case; a quote and a backslash; nothing else), in brackets.
func jsonbKey(id string) string {
	var b strings.Builder
	b.Grow(len(id) + 4)
	b.WriteString(`["`)
	for i := 0; i < len(id); i++ {
		switch c := id[i]; c {
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < ' ' {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteString(`"]`)
	return b.String()
}

// keysetReads are the keyset reads of the host table, of the whole job or of one key range (a
// pgshard shard): one statement per shape of the range, so that a shard reads exactly what the
// unsharded job would, within its range.
type keysetReads struct {
	spec *Spec
	// sel and order are the select list and ORDER BY ... LIMIT $2 of every keyset read.
	sel, order string
	host       string   // the host table, quoted
	keys       []string // quoted key columns, h."col"
	keyTypes   []string
}

func newKeysetReads(s *Spec) *keysetReads {
	return &keysetReads{spec: s, sel: s.Select, order: s.Order, host: s.Host, keys: s.Keys, keyTypes: s.KeyTypes}
}

// where joins conds and the Filter, its placeholders from $first, into a WHERE clause.
func (r *keysetReads) where(first int, conds ...string) string { return r.spec.where(first, conds...) }

// read returns a keyset read, of the whole job or of one shard. $1 is the grace in seconds and
// $2 the limit; then come the position (if after), the lower bound (if lower), the upper bound
// (if upper) and the cycle's high-water mark (if end), each a JSON array, and then the Filter's
// values. Bounds apply to the first key column: lower inclusive, upper exclusive; the
// high-water mark is a whole key, inclusive. After a position no lower bound is needed: the
// position is in the shard. A separate statement per shape, rather than one with
// "$n IS NULL OR ...", keeps every variant an index range scan under a generic plan.
func (r *keysetReads) read(after, lower, upper, end bool) string {
	var conds []string
	n := 3
	if after {
		conds = append(conds, r.after(n))
		n++
	}
	bounds, n := r.rangeConds(n, lower && !after, upper)
	conds = append(conds, bounds...)
	if end {
		conds = append(conds, r.upTo(n))
		n++
	}
	return r.sel + r.where(n, conds...) + r.order
}

// after is the condition that a row's key lies after the key in $n; upTo, that it lies at or
// before it.
func (r *keysetReads) after(n int) string {
	return fmt.Sprintf("(%s) > (%s)", strings.Join(r.keys, ", "), r.keyParam(n))
}

func (r *keysetReads) upTo(n int) string {
	return fmt.Sprintf("(%s) <= (%s)", strings.Join(r.keys, ", "), r.keyParam(n))
}

// rangeScan is a query of cols of the host table's rows (h) whose keys lie after the key in
// $n, if after, and at or before the key in the next placeholder, bounded as read bounds them,
// in key order. With sorts off (setTimeZone) the order leaves the planner one index range scan
// of the key's index, whatever the statistics; the Filter is left out.
func (r *keysetReads) rangeScan(cols string, n int, after bool) string {
	var conds []string
	if after {
		conds = append(conds, r.after(n))
		n++
	}
	conds = append(conds, r.upTo(n))
	return fmt.Sprintf("SELECT %s FROM %s AS h WHERE %s ORDER BY %s OFFSET 0",
		cols, r.host, strings.Join(conds, " AND "), strings.Join(r.keys, ", "))
}

// highWater returns the query of the last key within the bounds (lower from $1 if lower, then
// upper if upper), the Filter's values after them: a cycle's high-water mark.
func (r *keysetReads) highWater(lower, upper bool) string {
	conds, n := r.rangeConds(1, lower, upper)
	desc := make([]string, len(r.keys))
	for i, k := range r.keys {
		desc[i] = k + " DESC"
	}
	return fmt.Sprintf("SELECT jsonb_build_array(%s)::text FROM %s AS h%s ORDER BY %s LIMIT 1",
		strings.Join(r.keys, ", "), r.host, r.where(n, conds...), strings.Join(desc, ", "))
}

// rangeConds returns the conditions of a shard's bounds on the first key column, with their
// placeholders from $n, and the next placeholder's number.
func (r *keysetReads) rangeConds(n int, lower, upper bool) ([]string, int) {
	var conds []string
	if lower {
		conds = append(conds, fmt.Sprintf("%s >= (($%d::jsonb) ->> 0)::%s", r.keys[0], n, r.keyTypes[0]))
		n++
	}
	if upper {
		conds = append(conds, fmt.Sprintf("%s < (($%d::jsonb) ->> 0)::%s", r.keys[0], n, r.keyTypes[0]))
		n++
	}
	return conds, n
}

// keyParam is a whole key taken from the JSON array in $n, as a row constructor's values.
func (r *keysetReads) keyParam(n int) string {
	vals := make([]string, len(r.keys))
	for i, t := range r.keyTypes {
		vals[i] = fmt.Sprintf("(($%d::jsonb) ->> %d)::%s", n, i, t)
	}
	return strings.Join(vals, ", ")
}

// KeysetRead is the keyset read of that shape (see read): what ReadRange runs.
func (s *Spec) KeysetRead(after, lower, upper, end bool) string {
	return s.keyset.read(after, lower, upper, end)
}

// RangeScan is the query of cols of the rows whose keys lie in a batch's keyset range, from
// $n (see rangeScan): what a sweep's commit checks its rows as read against. Spec must have been
// prepared (Prepare).
func (s *Spec) RangeScan(cols string, n int, after bool) string {
	return s.keyset.rangeScan(cols, n, after)
}

// HighWater is the query of a cycle's high-water mark within those bounds (see highWater).
func (s *Spec) HighWater(lower, upper bool) string { return s.keyset.highWater(lower, upper) }
