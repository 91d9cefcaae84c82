package console_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/reconcilekit/reconcile/adapters/pgstore"
	"github.com/reconcilekit/reconcile/console"
)

func TestNewPGStoreRefusesJobsWhoseFindingsAreInDifferentTables(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	other, err := pgstore.New(w.pool, pgstore.Config{Table: "payments", Tables: pgstore.Tables{Prefix: "other_"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = console.NewPGStore(console.PGConfig{DB: w.pool, Jobs: map[string]*pgstore.Store{"sweep": w.store, "other": other}})
	if err == nil || !strings.Contains(err.Error(), "one set of tables") {
		t.Fatalf("NewPGStore = %v, want a refusal of two sets of tables", err)
	}
	if _, err := console.NewPGStore(console.PGConfig{DB: w.pool, Jobs: map[string]*pgstore.Store{"sweep": nil}}); err == nil {
		t.Fatal("NewPGStore accepted a job without a store")
	}
}

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestFindingsAreListedWithoutLinksWhenTheirExternalIDsCannotBeRead(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, nil)
	ctx := context.Background()
	// The job's store names a table that is gone: its external ids cannot be read.
	gone, err := pgstore.New(w.pool, pgstore.Config{Table: "payments_archive"})
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	s, err := console.NewPGStore(console.PGConfig{DB: w.pool, Jobs: map[string]*pgstore.Store{"sweep": gone},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := s.Findings(ctx, console.Query{Limit: 10})
	if err != nil || len(fs) != 4 {
		t.Fatalf("Findings = %d findings, %v; want the 4 open ones", len(fs), err)
	}
	for _, f := range fs {
		if f.ExternalID != "" {
			t.Errorf("finding %d has the external id %q", f.ID, f.ExternalID)
		}
	}
	if !strings.Contains(logs.String(), "reading external ids failed") {
		t.Errorf("the failed look-up was not logged:\n%s", logs.String())
	}

	// With the right table, the ids are there, for the detail too.
	d, err := w.pg.Finding(ctx, w.ids["2"])
	if err != nil || d.ExternalID != "pi_1TestMissed0002" || len(d.History) == 0 {
		t.Fatalf("Finding = %+v, %v; want pi_1TestMissed0002 and a history", d, err)
	}
}
