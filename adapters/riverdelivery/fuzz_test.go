package riverdelivery_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/reconcilekit/reconcile/adapters/riverdelivery"
	"github.com/reconcilekit/reconcile/internal/pgtest"
)

// Anyone who can insert River jobs writes a job's args: whatever its tables say, the Worker
// cancels it or refuses it, and never builds SQL from them (a syntax error would be neither).
func FuzzAJobsTablesAreNeverSQL(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""}, {"billing", "reconcile_"}, {`bad"schema`, ""}, {"", `x"; DROP TABLE payments; --`},
		{"a\x00b", ""}, {"", "\xff\xfe"}, {strings.Repeat("s", 10000), ""}, {"", strings.Repeat("p", 37)},
		{"pg_catalog", "pg_"}, {"public", "reconcile_"}, {"", "ünïcode_"}, {"\n", "\t"},
	} {
		f.Add(s[0], s[1], int64(1))
	}
	pool := pgtest.Pool(f)
	worker, err := riverdelivery.NewWorker(pool, riverdelivery.WorkerConfig{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, schema, prefix string, id int64) {
		job := &river.Job[riverdelivery.Args]{JobRow: &rivertype.JobRow{ID: 1, State: rivertype.JobStateRunning},
			Args: riverdelivery.Args{OutboxID: id, Schema: schema, Prefix: prefix}}
		err := worker.Work(context.Background(), job)
		if cancel := (*rivertype.JobCancelError)(nil); err != nil && !errors.As(err, &cancel) {
			t.Fatalf("schema %q, prefix %q: %v; want the job cancelled or refused", schema, prefix, err)
		}
	})
}
