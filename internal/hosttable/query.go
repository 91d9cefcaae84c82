package hosttable

import (
	"fmt"
	"strings"
)

// Query builds one statement over the host table whose own parameters are $1 to $n: the pieces
// it hands out (Where, LagFrom) number the Filter's placeholders after them, and the Stmt it
// makes binds the Filter's values there. Nothing else computes a placeholder's number.
type Query struct {
	spec *Spec
	n    int
}

// Query starts a statement with n parameters of its own.
func (s *Spec) Query(n int) *Query { return &Query{spec: s, n: n} }

// Where joins conds and the Filter into a WHERE clause (with its leading space), or "".
func (q *Query) Where(conds ...string) string { return q.spec.where(q.n+1, conds...) }

// LagFrom is the FROM clause of a lag statement: the Filter's rows (h) with their last
// verification (o.verified_at, unless observations are in host columns) by the jobs in $1,
// which must be one of the statement's own parameters.
func (q *Query) LagFrom() string {
	if q.n < 1 {
		panic("hosttable: a lag statement takes the jobs as $1")
	}
	s := q.spec
	if s.ObserveInHost {
		return fmt.Sprintf("%s AS h%s", s.Host, q.Where("$1::text[] IS NOT NULL"))
	}
	return fmt.Sprintf(`%s AS h LEFT JOIN (
			SELECT record_id, max(verified_at) AS verified_at FROM %s WHERE job = ANY($1::text[]) GROUP BY record_id
		) AS o ON o.record_id = %s::text%s`, s.Host, s.ObservationsTable, s.ID, q.Where())
}

// Stmt is sql, a statement built with q.
func (q *Query) Stmt(sql string) Stmt { return Stmt{SQL: sql, n: q.n, filter: q.spec.filterArgs} }

// Stmt is a statement over the host table and what its parameters take: its own, then the
// Filter's values.
type Stmt struct {
	SQL    string
	n      int
	filter []any
}

// Args returns the statement's arguments: own, which must be as many as its own parameters,
// then the Filter's values.
func (s Stmt) Args(own ...any) []any {
	if len(own) != s.n {
		panic(fmt.Sprintf("hosttable: a statement of %d parameters given %d", s.n, len(own)))
	}
	return append(own, s.filter...)
}

// where joins conds and the Filter, its placeholders from $first, into a WHERE clause.
func (s *Spec) where(first int, conds ...string) string {
	if f, _ := s.Filter.Render(first); f != "" {
		conds = append(conds, f)
	}
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}
