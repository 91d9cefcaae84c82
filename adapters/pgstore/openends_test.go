package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgstore"
)

// The findings statement reads the job's open findings from the least judged record to the
// greatest, up to one more than n, the count of judged records with duplicates (its upper
// bound), and looks every record up alone when it read more than n. Records with several open
// findings of several kinds at the ends of that range, at exactly n and at n + 1, a record
// between them not judged, records outside it, and no judged record at all (the range's ends
// NULL): each judged record's findings are closed, the others' stay open.
func TestSeveralOpenFindingsAtTheEndsOfTheRangeAreClosedWhereverTheReadStops(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		open    []string // "record kind", opened before the commit
		judged  []int    // records judged in sync (a record twice counts twice)
		drifted []int    // records judged with a finding (lost)
		unasked []int    // records with a finding not from a verified judgment (deciding nothing)
		stay    []string // the open findings that stay open
	}{
		{name: "two kinds at the low end, n exactly", open: []string{"1 a", "1 b"}, judged: []int{1, 3}},
		{name: "two kinds at the low end and one at the high end, n + 1", open: []string{"1 a", "1 b", "3 c"}, judged: []int{1, 3}},
		{name: "two kinds at each end and one between, cut short", open: []string{"1 a", "1 b", "2 x", "3 c", "3 d"}, judged: []int{1, 3},
			stay: []string{"2 x"}},
		{name: "judged with a finding at one end and in sync at the other, n exactly", open: []string{"1 a", "3 c"}, judged: []int{3},
			drifted: []int{1}},
		{name: "judged with a finding at both ends, the range cut", open: []string{"1 a", "1 b", "2 x", "3 c"}, drifted: []int{1, 3},
			stay: []string{"2 x"}},
		{name: "only a finding that decides nothing: no range at all", open: []string{"1 a", "3 c"}, unasked: []int{1},
			stay: []string{"1 a", "3 c"}},
		{name: "findings only beyond the range's ends", open: []string{"0 a", "4 b", "5 c"}, judged: []int{1, 3},
			stay: []string{"0 a", "4 b", "5 c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pool, s := newStore(t, pgstore.Config{})
			insertPayments(t, pool, ids(0, 5)...)
			ctx := context.Background()
			for _, f := range c.open {
				rec, kind, _ := strings.Cut(f, " ")
				exec(t, pool, `INSERT INTO reconcile_findings (job, record_id, kind, local_state) VALUES ('sweep', $1, $2, 'paid')`, rec, kind)
			}
			outcomes := append(judge(rangeInSync, c.judged...), judge(rangeLost, c.drifted...)...)
			for _, o := range judge(rangeLost, c.unasked...) {
				o.Verified = false
				outcomes = append(outcomes, o)
			}
			b, err := s.Read(ctx, reconcile.ReadRequest{Job: "sweep", Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Commit(ctx, reconcile.Commit{Job: "sweep", Cursor: b.Cursor, Wrap: true, Outcomes: outcomes}); err != nil {
				t.Fatal(err)
			}
			var stay []string
			rows, err := pool.Query(ctx, `SELECT record_id || ' ' || kind FROM reconcile_findings
				WHERE resolved_at IS NULL AND kind <> $1 ORDER BY 1`, rangeLost.Kind)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var f string
				if err := rows.Scan(&f); err != nil {
					t.Fatal(err)
				}
				stay = append(stay, f)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if strings.Join(stay, ", ") != strings.Join(c.stay, ", ") {
				t.Fatalf("open after the commit: %v; want %v", stay, c.stay)
			}
		})
	}
}
