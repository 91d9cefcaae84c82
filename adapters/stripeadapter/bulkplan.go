package stripeadapter

import (
	"math"
	"slices"
	"time"

	"github.com/reconcilekit/reconcile"
)

// listWindow is one creation-time range a bulk fetch lists, planned from the rows' own
// created_at: a batch whose rows come in groups far apart, relative to how far apart its rows
// usually are, never lists the time between them (another batch's objects, or nobody's).
type listWindow struct {
	// from and to bound the list's created filter, whole seconds, inclusive: the rows'
	// created_at widened by the skew, the upper bound rounded up.
	from, to int64
	// rows are the window's rows, oldest first (in the batch's order among equals).
	rows []string
	// top is the second the newest row was created in.
	top int64
	// denseTop: at least minMatchesPerPage rows were created in that second, as in an import.
	// Newest first, the list would meet the rest of the import first (the next batches'
	// objects, as many as there are), so the window is read from its oldest row up.
	denseTop bool
	// marginPages is how many pages the skew above the newest row holds at the rows' own
	// rate (at least one, at most a page per hundred rows): pages wholly above the rows that
	// a read newest first passes without counting them barren. They are the next batch's
	// objects, kept in the look-ahead.
	marginPages int
}

// planWindows groups rows (each with a creation time and a distinct id) into the windows
// of a bulk fetch, oldest first. Rows share a window unless more than twice the skew lies
// between them and more than a hundred times the rows' usual spacing (the median time between
// two of the seconds they were created in): if the account makes objects at the rows' rate,
// such a gap holds more than a page of others, and two windows cost at most a call more. A
// window of one row is left out: one retrieve costs no more than one list call.
func planWindows(rows []reconcile.Lookup, skew time.Duration) []listWindow {
	sorted := slices.Clone(rows)
	slices.SortStableFunc(sorted, func(a, b reconcile.Lookup) int { return a.CreatedAt.Compare(b.CreatedAt) })
	gap := max(2*skew, listLimit*spacing(sorted))
	var windows []listWindow
	for i := 0; i < len(sorted); {
		w := listWindow{from: sorted[i].CreatedAt.Add(-skew).Unix()}
		j := i
		for ; j < len(sorted); j++ {
			if j > i && sorted[j].CreatedAt.Sub(sorted[j-1].CreatedAt) > gap {
				break
			}
			// Stripe's created is whole seconds: round the upper bound up.
			w.to = sorted[j].CreatedAt.Add(skew + time.Second - 1).Unix()
			w.rows = append(w.rows, sorted[j].ExternalID)
		}
		if len(w.rows) >= 2 {
			first, last := sorted[i].CreatedAt, sorted[j-1].CreatedAt
			w.top = last.Unix()
			inTop := 0
			for _, l := range sorted[i:j] {
				if l.CreatedAt.Unix() == w.top {
					inTop++
				}
			}
			w.denseTop = inTop >= minMatchesPerPage
			w.marginPages = marginPages(len(w.rows), last.Sub(first), skew)
			windows = append(windows, w)
		}
		i = j
	}
	return windows
}

// spacing is the median time between two consecutive seconds in which rows (sorted by
// creation) were created; zero for rows created within one second.
func spacing(sorted []reconcile.Lookup) time.Duration {
	var gaps []int64
	for i := 1; i < len(sorted); i++ {
		if gap := sorted[i].CreatedAt.Unix() - sorted[i-1].CreatedAt.Unix(); gap > 0 {
			gaps = append(gaps, gap)
		}
	}
	if len(gaps) == 0 {
		return 0
	}
	slices.Sort(gaps)
	return time.Duration(gaps[len(gaps)/2]) * time.Second
}

// marginPages is how many pages of objects the skew above n rows created over span holds at
// their rate, at least one and at most a page per hundred rows: a margin larger than the
// batch is not the next batch's alone, and a read newest first should not pay for it.
func marginPages(n int, span, skew time.Duration) int {
	most := (n + listLimit - 1) / listLimit
	if span <= 0 {
		return most
	}
	objects := float64(n-1) / span.Seconds() * skew.Seconds()
	return max(1, int(min(float64(most), math.Ceil(objects/listLimit))))
}
