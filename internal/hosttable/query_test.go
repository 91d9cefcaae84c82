package hosttable

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestAQueryNumbersTheFiltersPlaceholdersAfterItsOwn(t *testing.T) {
	s := &Spec{Host: `"payments"`, ID: `h."id"`, ObservationsTable: `"reconcile_observations"`, Filter: Filter{AnyOf: [][]Cond{
		{{Column: `h."status"`, Op: "in", Value: []string{"paid"}}, {Column: `h."created_at"`, Op: "within", Value: time.Hour, Zone: "UTC"}},
		{{Column: `h."refunded"`, Op: "is null"}},
	}}}
	Prepare(s)
	q := s.Query(2)
	where := q.Where(`h."id" > $2`)
	want := ` WHERE h."id" > $2 AND coalesce((h."status" = ANY($3) AND h."created_at" >= (now() - $4::interval) AT TIME ZONE 'UTC') OR (h."refunded" IS NULL), false)`
	if where != want {
		t.Errorf("Where =\n%s\nwant\n%s", where, want)
	}
	if from := q.LagFrom(); !strings.Contains(from, "job = ANY($1::text[])") || !strings.Contains(from, "$3") || strings.Contains(from, "$5") {
		t.Errorf("LagFrom numbers the filter from $3 and takes the jobs in $1; got\n%s", from)
	}
	st := q.Stmt("SELECT 1 FROM payments AS h" + where)
	if got, want := st.Args("a", 1), []any{"a", 1, []string{"paid"}, time.Hour}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Args = %v, want its own two then the filter's two", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("Args with one of two parameters did not panic")
		}
	}()
	st.Args("a")
}

func TestTheZeroFilterAddsNoConditionAndNoValue(t *testing.T) {
	s := &Spec{Host: `"payments"`}
	Prepare(s)
	q := s.Query(1)
	if w := q.Where(); w != "" {
		t.Errorf("Where() = %q, want empty", w)
	}
	if w := q.Where("x"); w != " WHERE x" {
		t.Errorf("Where(x) = %q", w)
	}
	if args := q.Stmt("SELECT 1").Args(7); len(args) != 1 {
		t.Errorf("Args = %v, want only its own", args)
	}
}
