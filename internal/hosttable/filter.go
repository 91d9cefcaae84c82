package hosttable

import (
	"fmt"
	"strings"
)

// Filter is a store's row filter (pgstore.Filter) over the host table aliased h, checked
// against the catalog: a row matches when any group of AnyOf matches, all of whose conditions
// hold; Not selects the complement.
type Filter struct {
	AnyOf [][]Cond
	Not   bool
}

// Cond is one condition of a Filter.
type Cond struct {
	// Column is the host column, quoted and qualified: h."col".
	Column string
	// Op is a pgstore.Op: "=", "<>", "<", "<=", ">", ">=", "in", "not in", "is null",
	// "is not null", "within" or "older than".
	Op string
	// Value is bound as a parameter (none for "is null" and "is not null").
	Value any
	// Zone, for "within" and "older than" on a column that is not a timestamptz (a timestamp
	// without time zone or a date), is the zone the column's values are in.
	Zone string
}

// Render returns the filter as an SQL condition, with placeholders numbered from $first, and
// the values to bind to them in order; "" and no values for the zero Filter. A filter renders as
// coalesce((g1) OR (g2), false) and its Not as NOT coalesce(...): a row on which the filter is
// unknown (NULLs) is outside the filter and inside its complement, never in neither.
//
// "within" and "older than" compare with now() - Value, the database's clock. For a column in
// a Zone the limit is converted to that zone rather than the column to timestamptz, so an
// index on the column still serves the comparison.
func (f Filter) Render(first int) (string, []any) {
	if len(f.AnyOf) == 0 {
		return "", nil
	}
	var args []any
	param := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", first+len(args)-1)
	}
	groups := make([]string, len(f.AnyOf))
	for i, g := range f.AnyOf {
		conds := make([]string, len(g))
		for j, c := range g {
			col := c.Column
			switch c.Op {
			case "in":
				conds[j] = fmt.Sprintf("%s = ANY(%s)", col, param(c.Value))
			case "not in":
				conds[j] = fmt.Sprintf("%s <> ALL(%s)", col, param(c.Value))
			case "is null", "is not null":
				conds[j] = fmt.Sprintf("%s %s", col, strings.ToUpper(c.Op))
			case "within", "older than":
				op := ">="
				if c.Op == "older than" {
					op = "<"
				}
				limit := fmt.Sprintf("now() - %s::interval", param(c.Value))
				if c.Zone != "" {
					limit = fmt.Sprintf("(%s) AT TIME ZONE '%s'", limit, c.Zone)
				}
				conds[j] = fmt.Sprintf("%s %s %s", col, op, limit)
			default:
				conds[j] = fmt.Sprintf("%s %s %s", col, c.Op, param(c.Value))
			}
		}
		groups[i] = "(" + strings.Join(conds, " AND ") + ")"
	}
	sql := "coalesce(" + strings.Join(groups, " OR ") + ", false)"
	if f.Not {
		sql = "NOT " + sql
	}
	return sql, args
}
