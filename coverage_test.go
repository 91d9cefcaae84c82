package reconcile

import (
	"strings"
	"testing"
	"time"
)

func TestCoverageQueryValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		q    CoverageQuery
		want string // "" for valid
	}{
		{"empty", CoverageQuery{}, ""},
		{"the chart's", CoverageQuery{Ages: []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour}, Days: 14}, ""},
		{"most days", CoverageQuery{Days: MaxCoverageDays}, ""},
		{"a zero bound", CoverageQuery{Ages: []time.Duration{0, time.Hour}}, "Ages[0] is 0s"},
		{"a negative bound", CoverageQuery{Ages: []time.Duration{-time.Hour}}, "must be positive"},
		{"bounds descending", CoverageQuery{Ages: []time.Duration{2 * time.Hour, time.Hour}}, "must ascend"},
		{"a bound twice", CoverageQuery{Ages: []time.Duration{time.Hour, time.Hour}}, "must ascend"},
		{"negative days", CoverageQuery{Days: -1}, "Days is -1"},
		{"too many days", CoverageQuery{Days: MaxCoverageDays + 1}, "want 0 to 90"},
	} {
		err := c.q.Validate()
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: Validate() = %v, want %q", c.name, err, c.want)
		}
	}
}

func TestCoverageQueryBucket(t *testing.T) {
	q := CoverageQuery{Ages: []time.Duration{time.Hour, 24 * time.Hour}}
	for _, c := range []struct {
		age  time.Duration
		want int
	}{
		{-time.Second, 0}, // a clock a little ahead
		{0, 0},
		{time.Hour, 0}, // a bound's own age is in its bucket
		{time.Hour + 1, 1},
		{24 * time.Hour, 1},
		{24*time.Hour + 1, 2}, // older than every bound
		{1000 * time.Hour, 2},
	} {
		if got := q.Bucket(c.age); got != c.want {
			t.Errorf("Bucket(%v) = %d, want %d", c.age, got, c.want)
		}
	}
	if got := (CoverageQuery{}).Bucket(time.Hour); got != 0 {
		t.Errorf("no bounds: Bucket = %d, want 0", got)
	}
}
