package main

import (
	"context"
	"time"

	"github.com/reconcilekit/reconcile"
)

// hostReader is what the audit needs of pgstore.Store: the keyset read after a cursor it keeps
// itself, touching nothing but the host table.
type hostReader[L any] interface {
	ReadFrom(ctx context.Context, req reconcile.ReadRequest, cur reconcile.Cursor) (reconcile.Batch[L], error)
}

// auditStore is the audit's reconcile.Source and Sink: the rows come from the host table
// (pgstore.Store.ReadFrom), and the cursor and results stay in memory. It keeps what the
// report needs and nothing per row: the counters and the findings (tally), at most
// --max-findings of them. An in-sync row costs nothing once its batch is committed, so memory
// does not grow with the table (a memstore would keep an observation for every row), and the
// drift costs at most --max-findings findings. The engine calls it from one
// goroutine, a batch at a time.
type auditStore[L any] struct {
	reader hostReader[L]
	tally  *tally
	cur    reconcile.Cursor
	// created holds the created_at of the rows of the batch read last, by id, for the lag of
	// the rows the commit says were not verified.
	created map[string]time.Time
}

var _ reconcile.Store[string] = (*auditStore[string])(nil)

// Read reads the rows after the audit's cursor.
func (s *auditStore[L]) Read(ctx context.Context, req reconcile.ReadRequest) (reconcile.Batch[L], error) {
	b, err := s.reader.ReadFrom(ctx, req, s.cur)
	if err != nil {
		return b, err
	}
	s.cur = b.Cursor // the cycle's end, fixed by the first read
	clear(s.created)
	if s.created == nil {
		s.created = make(map[string]time.Time, len(b.Records))
	}
	for _, r := range b.Records {
		s.created[r.ID] = r.CreatedAt
	}
	return b, nil
}

// Commit counts the batch's outcomes, keeps its findings and moves the cursor, compare-and-set
// as every Sink does (the engine's contract; only one batch runs at a time here).
func (s *auditStore[L]) Commit(_ context.Context, c reconcile.Commit) (reconcile.CommitResult, error) {
	if c.Cursor != s.cur {
		return reconcile.CommitResult{}, reconcile.ErrConcurrentRun
	}
	var res reconcile.CommitResult
	for _, o := range c.Outcomes {
		if s.tally.add(o, s.created[o.RecordID]) {
			res.Findings++
		}
	}
	if c.Wrap {
		s.cur = reconcile.Cursor{Version: s.cur.Version + 1}
	} else {
		s.cur.Position, s.cur.Version = c.Next, s.cur.Version+1
	}
	return res, nil
}

// auditFinding is one finding of the audit, as the report prints it.
type auditFinding struct {
	RecordID   string           `json:"record_id"`
	ExternalID string           `json:"external_id,omitempty"`
	Kind       string           `json:"kind"`
	Verdict    string           `json:"verdict"`
	Local      string           `json:"local,omitempty"`
	External   string           `json:"external,omitempty"`
	Detail     string           `json:"detail,omitempty"`
	Diffs      []reconcile.Diff `json:"diffs,omitempty"`
}

// tally is what the audit found: counters, the findings, and how the run ended.
type tally struct {
	start        time.Time
	rows         int
	verified     int
	inFlight     int
	unverifiable int
	// oldestUnverified is the created_at of the oldest row read and not verified (the lag).
	oldestUnverified time.Time
	// findings are the first maxFindings findings; found counts them all, byKind by kind.
	findings    []auditFinding
	maxFindings int
	found       int
	byKind      map[string]int
	calls       int
	rateLimited int

	complete    bool   // every row of the table, as of the first read, was judged
	interrupted bool   // ctx was cancelled (Ctrl-C)
	failure     error  // a batch failed
	gaveUp      string // why the audit stopped retrying, if it did
	// firstFailure is the first error Stripe's calls failed with (firstFailure), if any.
	firstFailure string
	// rowSecurity: the table's row-level security binds the role, which reads only the rows
	// its policies let it see.
	rowSecurity bool
}

// maxKinds bounds the kinds the tally counts apart. The policies' kinds are a few dozen, but
// a pair of states no rule covers is a kind of its own (unexpected:<yours>-><Stripe's>): a
// state column whose every value differs would make as many kinds as rows. The kinds past
// the bound are counted together, as otherKinds.
const maxKinds = 1000

// otherKinds counts the findings of the kinds past maxKinds.
const otherKinds = "(other kinds)"

func newTally(start time.Time, maxFindings int) *tally {
	return &tally{start: start, maxFindings: maxFindings, byKind: map[string]int{}}
}

// add counts one outcome; it reports whether it is a finding.
func (t *tally) add(o reconcile.Outcome, created time.Time) bool {
	t.rows++
	d := o.Decision
	switch {
	case o.Verified:
		t.verified++
	case d.Verdict == reconcile.InFlight:
		t.inFlight++
	case d.Verdict == reconcile.Unverifiable:
		t.unverifiable++
	}
	if !o.Verified && !created.IsZero() && (t.oldestUnverified.IsZero() || created.Before(t.oldestUnverified)) {
		t.oldestUnverified = created
	}
	if d.Kind == "" || (d.Verdict != reconcile.Repairable && d.Verdict != reconcile.NeedsReview) {
		return false
	}
	if _, ok := t.byKind[d.Kind]; ok || len(t.byKind) < maxKinds {
		t.byKind[d.Kind]++
	} else {
		t.byKind[otherKinds]++
	}
	t.found++
	if len(t.findings) >= t.maxFindings {
		return true
	}
	t.findings = append(t.findings, auditFinding{RecordID: o.RecordID, ExternalID: o.ExternalID, Kind: d.Kind, Verdict: d.Verdict.String(),
		Local: o.Local, External: o.External, Detail: d.Detail, Diffs: d.Diffs})
	return true
}

// lag is the longest any row read has gone unverified as of now: this run verified the others.
func (t *tally) lag(now time.Time) time.Duration {
	if t.oldestUnverified.IsZero() {
		return 0
	}
	return max(now.Sub(t.oldestUnverified), 0)
}
