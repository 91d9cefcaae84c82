package reconcile

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// CoverageReader reads how long a job's rows have gone unverified, as a distribution where
// Status gives only the longest, and how many of its findings were open over the last days:
// what the console's coverage chart draws. Like Status, it is read on page views, so a store
// implements it without scanning the host table (pgstore reads its lag marks); a store that
// cannot tell without a scan says so in Coverage.Unknown rather than scanning.
type CoverageReader interface {
	Coverage(ctx context.Context, job string, q CoverageQuery) (Coverage, error)
}

// CoverageQuery says how to bucket a job's rows and how much findings history to read.
type CoverageQuery struct {
	// Ages are the buckets' upper bounds, ascending, each positive. A row whose last
	// verification (its creation, if never verified) is more than Ages[i-1] and at most
	// Ages[i] old falls in bucket i; a row older than every bound in bucket len(Ages).
	Ages []time.Duration
	// Days is how many daily samples of open findings to read, 0 for none; at most
	// MaxCoverageDays.
	Days int
}

// MaxCoverageDays bounds CoverageQuery.Days.
const MaxCoverageDays = 90

// Validate reports what is wrong with q, if anything.
func (q CoverageQuery) Validate() error {
	for i, a := range q.Ages {
		if a <= 0 {
			return fmt.Errorf("reconcile: coverage query: Ages[%d] is %v; bounds must be positive", i, a)
		}
		if i > 0 && a <= q.Ages[i-1] {
			return fmt.Errorf("reconcile: coverage query: Ages[%d] (%v) is not above Ages[%d] (%v); bounds must ascend", i, a, i-1, q.Ages[i-1])
		}
	}
	if q.Days < 0 || q.Days > MaxCoverageDays {
		return fmt.Errorf("reconcile: coverage query: Days is %d; want 0 to %d", q.Days, MaxCoverageDays)
	}
	return nil
}

// Bucket is the index in Coverage.Rows of a row whose last verification is age old: the number
// of bounds age is above, so an age equal to a bound falls in that bound's bucket.
func (q CoverageQuery) Bucket(age time.Duration) int {
	i, _ := slices.BinarySearch(q.Ages, age) // the first bound at or above age
	return i
}

// Coverage is a job's rows by time since their last verification, and its open findings over
// the last days. Times are the store's clock.
type Coverage struct {
	Job string    `json:"job"`
	Now time.Time `json:"now"`
	// Rows has len(Ages)+1 counts, bucket i's rows at index i (CoverageQuery.Ages); nil when
	// the store cannot tell without a full scan, Unknown then saying why.
	Rows    []int64 `json:"rows"`
	Unknown string  `json:"unknown,omitempty"`
	// Estimated is set when the counts come from what the sweep recorded of each batch rather
	// than from the rows: a row may then be counted older than it is (verified since by a
	// lane), never younger.
	Estimated bool `json:"estimated"`
	// Open has CoverageQuery.Days samples, oldest first: the job's findings open at Now minus
	// whole days, the last at Now.
	Open []OpenSample `json:"open"`
}

// OpenSample is how many findings were open at one time.
type OpenSample struct {
	At   time.Time `json:"at"`
	Open int       `json:"open"`
}
