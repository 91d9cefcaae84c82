package pgstore

import (
	"fmt"
	"reflect"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile/internal/hosttable"
)

// Op is the operator of a Cond.
type Op string

// The operators a Cond may use. Values are always bound as parameters.
const (
	Eq      Op = "="
	Ne      Op = "<>"
	Lt      Op = "<"
	Le      Op = "<="
	Gt      Op = ">"
	Ge      Op = ">="
	In      Op = "in"          // Value is a non-empty slice; the column equals one of its elements
	NotIn   Op = "not in"      // Value is a non-empty slice; the column equals none of its elements
	IsNull  Op = "is null"     // no Value
	NotNull Op = "is not null" // no Value
	// Within holds when the column is at most Value (a positive time.Duration) before the
	// database's now(), such as "created in the last 90 days".
	Within Op = "within"
	// OlderThan holds when the column is more than Value (a positive time.Duration) before the
	// database's now().
	OlderThan Op = "older than"
)

// Cond is one condition on a column of the host table. Like any SQL comparison, a condition on
// a NULL column is neither true nor false (except IsNull and NotNull); see Filter for how such
// rows are assigned.
type Cond struct {
	// Column is a column of the host table, a plain SQL identifier.
	Column string
	// Op is one of the Op constants.
	Op Op
	// Value is bound as a parameter: a non-empty slice for In and NotIn, a positive
	// time.Duration for Within and OlderThan, nothing for IsNull and NotNull.
	Value any
}

// Filter selects the rows of a tier: a row matches when any group of AnyOf matches, and a
// group matches when all its conditions hold (an OR of ANDs). The zero Filter matches every
// row.
//
// A condition on a NULL column is unknown, and a row whose groups are all false or unknown does
// not match. Not selects exactly the rows the filter without Not does not select, those
// included, so a filter and its Not twin partition the table: every row is in exactly one.
type Filter struct {
	AnyOf [][]Cond
	// Not selects the complement of AnyOf.
	Not bool
}

// clone copies the groups (not the values), so that the caller's slices may change afterwards.
func (f Filter) clone() Filter {
	if f.AnyOf == nil {
		return f
	}
	out := Filter{AnyOf: make([][]Cond, len(f.AnyOf)), Not: f.Not}
	for i, g := range f.AnyOf {
		out.AnyOf[i] = append([]Cond(nil), g...)
	}
	return out
}

// validate checks what can be checked without the catalog.
func (f Filter) validate() error {
	if f.Not && len(f.AnyOf) == 0 {
		return fmt.Errorf("pgstore: config: Filter.Not with no AnyOf would select no row")
	}
	for i, g := range f.AnyOf {
		if len(g) == 0 {
			return fmt.Errorf("pgstore: config: Filter.AnyOf[%d] is empty; a group of no conditions would match every row", i)
		}
		for j, c := range g {
			if err := c.validate(fmt.Sprintf("Filter.AnyOf[%d][%d]", i, j)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c Cond) validate(field string) error {
	if err := checkIdent(field+".Column", c.Column); err != nil {
		return err
	}
	v := reflect.ValueOf(c.Value)
	isNil := c.Value == nil || (v.Kind() == reflect.Pointer && v.IsNil())
	switch c.Op {
	case Eq, Ne, Lt, Le, Gt, Ge:
		if isNil {
			return fmt.Errorf("pgstore: config: %s: %q on %q needs a Value (use IsNull or NotNull for NULL)", field, c.Op, c.Column)
		}
	case In, NotIn:
		if isNil || v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
			return fmt.Errorf("pgstore: config: %s: %q on %q needs a slice Value, not %T", field, c.Op, c.Column, c.Value)
		}
		if _, ok := c.Value.([]byte); ok {
			return fmt.Errorf("pgstore: config: %s: %q on %q needs a slice of values, not a []byte (one bytea)", field, c.Op, c.Column)
		}
		// SQL's = ANY and <> ALL of an empty array are false and true even for a NULL column,
		// unlike every other condition; an empty list is more likely a mistake than a wish.
		if v.Len() == 0 {
			return fmt.Errorf("pgstore: config: %s: %q on %q has an empty list", field, c.Op, c.Column)
		}
	case IsNull, NotNull:
		if c.Value != nil {
			return fmt.Errorf("pgstore: config: %s: %q on %q takes no Value, got %T", field, c.Op, c.Column, c.Value)
		}
	case Within, OlderThan:
		d, ok := c.Value.(time.Duration)
		if !ok {
			return fmt.Errorf("pgstore: config: %s: %q on %q needs a time.Duration Value, not %T", field, c.Op, c.Column, c.Value)
		}
		if d <= 0 {
			return fmt.Errorf("pgstore: config: %s: %q on %q needs a positive duration, not %v", field, c.Op, c.Column, d)
		}
	default:
		return fmt.Errorf("pgstore: config: %s: unknown Op %q on %q", field, c.Op, c.Column)
	}
	return nil
}

// checkFilter checks the filter's columns against the host table's column types.
func (cfg Config) checkFilter(types map[string]string) error {
	for i, g := range cfg.Filter.AnyOf {
		for j, c := range g {
			typ, ok := types[c.Column]
			if !ok {
				return fmt.Errorf("pgstore: config: Filter.AnyOf[%d][%d]: table %s has no column %q", i, j, cfg.hostTable(), c.Column)
			}
			if (c.Op == Within || c.Op == OlderThan) && !isTimeType(typ) {
				return fmt.Errorf("pgstore: config: Filter.AnyOf[%d][%d]: %q needs a timestamp or date column; %q of %s is %s",
					i, j, c.Op, c.Column, cfg.hostTable(), typ)
			}
		}
	}
	return nil
}

func isTimeType(typ string) bool {
	return typ == "timestamp with time zone" || typ == naiveTimestamp || typ == "date"
}

// hostFilter is the filter over the host table aliased h, for hosttable: a timestamp without
// time zone (or a date) compared by Within or OlderThan is in cfg.TimeZone.
func hostFilter(cfg Config, types map[string]string) hosttable.Filter {
	f := hosttable.Filter{Not: cfg.Filter.Not}
	for _, g := range cfg.Filter.AnyOf {
		conds := make([]hosttable.Cond, len(g))
		for j, c := range g {
			conds[j] = hosttable.Cond{Column: "h." + pgx.Identifier{c.Column}.Sanitize(), Op: string(c.Op), Value: c.Value}
			if (c.Op == Within || c.Op == OlderThan) && types[c.Column] != "timestamp with time zone" {
				conds[j].Zone = cfg.TimeZone
			}
		}
		f.AnyOf = append(f.AnyOf, conds)
	}
	return f
}

// renderFilter returns the filter as an SQL condition over the host table aliased h, with
// placeholders numbered from $first, and the values to bind to them in order (see
// hosttable.Filter.Render); "" and no values for the zero Filter.
func renderFilter(cfg Config, types map[string]string, first int) (string, []any) {
	return hostFilter(cfg, types).Render(first)
}
