package memstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/reconcilekit/reconcile"
)

// Row is one local row.
type Row[K cmp.Ordered, L any] struct {
	Key        K
	ExternalID string
	Local      L
	// CreatedAt and UpdatedAt default to the store's clock when zero at Put.
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Observation is a row's last confirmed external state.
type Observation struct {
	External   string
	VerifiedAt time.Time
}

// QueuedCommand is a repair command as queued, with its position in the outbox.
type QueuedCommand struct {
	Seq           int64
	AggregateType string
	reconcile.Command
}

// CursorInfo describes a job's cursor.
type CursorInfo struct {
	reconcile.Cursor
	CycleStartedAt       time.Time
	LastCycleCompletedAt time.Time
	CyclesCompleted      int64
	LastBatchAt          time.Time
	LastBatchScanned     int
	LastBatchUnverified  int
}

// LaneInfo describes a lane's position and history.
type LaneInfo struct {
	reconcile.Cursor
	// CreatedAt is when the lane first committed a step or had a failure recorded.
	CreatedAt       time.Time
	LastRunAt       time.Time
	PassesCompleted int64
	LastEndAt       time.Time
	GapAt           time.Time
	GapReason       string
	// GapCycles is the sweep's completed cycles when the gap happened: the gap is covered once
	// a cycle that started after it completes.
	GapCycles     int64
	LastFailureAt time.Time
	LastFailure   string
}

// Options configures a Store. The zero value works.
type Options struct {
	// Now is the store's clock, used for grace, observations and findings. Nil means time.Now.
	Now func() time.Time
	// AggregateType is written on queued commands. Empty means "record".
	AggregateType string
	// StaleAfter is how long a finding may stay open before Status counts it stale; Status
	// reports it (reconcile.Status.StaleAfter). Zero means DefaultStaleAfter; negative is
	// treated as zero.
	StaleAfter time.Duration
}

// DefaultStaleAfter is how long a finding may stay open before Status counts it as stale, as
// in pgstore.
const DefaultStaleAfter = 24 * time.Hour

// Store is an in-memory reconcile.Store over rows keyed by K with local state L.
type Store[K cmp.Ordered, L any] struct {
	now        func() time.Time
	aggType    string
	staleAfter time.Duration

	mu           sync.Mutex
	keys         []K // sorted
	rows         map[K]Row[K, L]
	ids          map[string]int // rows by record id (fmt.Sprint of the key): how many
	cursors      map[string]*CursorInfo
	observations map[obsKey]Observation
	findings     []reconcile.Finding
	open         map[findingKey]int                 // index into findings
	openKinds    map[obsKey]map[string]bool         // the kinds of open, by job and record
	events       map[int64][]reconcile.FindingEvent // resolutions and reopenings by finding id
	commands     []QueuedCommand
	lanes        map[laneKey]*LaneInfo
	groups       []reconcile.GroupRecord // by Seq - 1
	groupSeq     map[groupKey]int64      // Seq by job, account and id
	failures     map[string]failure      // the last failed batch of each job

	// versions holds each record id's version, from rev: a new one at every Put and Delete, so
	// that a commit judges only rows that are as they were read.
	versions map[string]uint64
	rev      uint64
}

// failure is a job's last failed batch, for Status.
type failure struct {
	at  time.Time
	msg string
}

type obsKey struct{ job, record string }
type findingKey struct{ job, record, kind string }
type laneKey struct{ job, lane string }
type groupKey struct{ job, account, id string }

var (
	_ reconcile.Store[string]   = (*Store[int64, string])(nil)
	_ reconcile.Matcher[string] = (*Store[int64, string])(nil)
	_ reconcile.LaneSink        = (*Store[int64, string])(nil)
	_ reconcile.Reviewer        = (*Store[int64, string])(nil)
	_ reconcile.StatusReader    = (*Store[int64, string])(nil)
	_ reconcile.FailureRecorder = (*Store[int64, string])(nil)

	_ reconcile.LaneFailureRecorder = (*Store[int64, string])(nil)
)

// New returns an empty store.
func New[K cmp.Ordered, L any](opts Options) *Store[K, L] {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.AggregateType == "" {
		opts.AggregateType = "record"
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = DefaultStaleAfter
	}
	return &Store[K, L]{
		now: opts.Now, aggType: opts.AggregateType, staleAfter: opts.StaleAfter, failures: map[string]failure{},
		rows: map[K]Row[K, L]{}, ids: map[string]int{}, versions: map[string]uint64{}, cursors: map[string]*CursorInfo{},
		observations: map[obsKey]Observation{}, open: map[findingKey]int{}, openKinds: map[obsKey]map[string]bool{},
		events: map[int64][]reconcile.FindingEvent{}, lanes: map[laneKey]*LaneInfo{}, groupSeq: map[groupKey]int64{},
	}
}

// Put inserts or replaces a row, with a new version: a commit of a batch that read it before
// leaves it alone (see reconcile.Sink).
func (s *Store[K, L]) Put(r Row[K, L]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = now
	}
	if _, ok := s.rows[r.Key]; !ok {
		i, _ := slices.BinarySearch(s.keys, r.Key)
		s.keys = slices.Insert(s.keys, i, r.Key)
		s.ids[fmt.Sprint(r.Key)]++
	}
	s.rows[r.Key] = r
	s.rev++
	s.versions[fmt.Sprint(r.Key)] = s.rev
}

// Delete removes a row if present.
func (s *Store[K, L]) Delete(key K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.rows[key]; !ok {
		return
	}
	i, _ := slices.BinarySearch(s.keys, key)
	s.keys = slices.Delete(s.keys, i, i+1)
	delete(s.rows, key)
	if id := fmt.Sprint(key); s.ids[id] > 1 {
		s.ids[id]--
		s.rev++
		s.versions[id] = s.rev
	} else {
		delete(s.ids, id)
		delete(s.versions, id)
	}
}

// Get returns a row.
func (s *Store[K, L]) Get(key K) (Row[K, L], bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[key]
	return r, ok
}

// Len returns the number of rows.
func (s *Store[K, L]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}

// Read returns the rows after the job's cursor, in key order.
func (s *Store[K, L]) Read(ctx context.Context, req reconcile.ReadRequest) (reconcile.Batch[L], error) {
	if err := ctx.Err(); err != nil {
		return reconcile.Batch[L]{}, err
	}
	if req.Limit <= 0 {
		return reconcile.Batch[L]{}, fmt.Errorf("memstore: limit %d must be positive", req.Limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var b reconcile.Batch[L]
	if c := s.cursors[req.Job]; c != nil {
		b.Cursor = c.Cursor
	}
	if b.Cursor.End == "" && len(s.keys) > 0 {
		// A new cycle: it covers the rows present now.
		end, err := json.Marshal(s.keys[len(s.keys)-1])
		if err != nil {
			return reconcile.Batch[L]{}, fmt.Errorf("memstore: encode key: %w", err)
		}
		b.Cursor.End = string(end)
	}
	start, stop := 0, 0
	if b.Cursor.Position != "" {
		i, err := s.after(b.Cursor.Position)
		if err != nil {
			return reconcile.Batch[L]{}, err
		}
		start = i
	}
	if b.Cursor.End != "" {
		i, err := s.after(b.Cursor.End)
		if err != nil {
			return reconcile.Batch[L]{}, err
		}
		stop = i
	}
	now := s.now()
	for _, k := range s.keys[start:max(start, min(stop, start+req.Limit))] {
		r := s.rows[k]
		pos, err := json.Marshal(k)
		if err != nil {
			return reconcile.Batch[L]{}, fmt.Errorf("memstore: encode key %v: %w", k, err)
		}
		b.Records = append(b.Records, reconcile.Record[L]{
			Key: string(pos), ID: fmt.Sprint(k), ExternalID: r.ExternalID, Local: r.Local,
			CreatedAt: r.CreatedAt, Recent: req.Grace > 0 && now.Sub(r.UpdatedAt) < req.Grace, Version: s.version(k),
			Invalid: impossibleTime(r.CreatedAt, r.UpdatedAt, now),
		})
	}
	return b, nil
}

// after returns the index of the first key after the encoded key pos.
func (s *Store[K, L]) after(pos string) (int, error) {
	var k K
	if err := json.Unmarshal([]byte(pos), &k); err != nil {
		return 0, fmt.Errorf("memstore: read cursor %q: %w", pos, err)
	}
	i, found := slices.BinarySearch(s.keys, k)
	if found {
		i++
	}
	return i, nil
}

// Commit applies a batch's results atomically, compare-and-set on the cursor version.
func (s *Store[K, L]) Commit(ctx context.Context, c reconcile.Commit) (reconcile.CommitResult, error) {
	if err := ctx.Err(); err != nil {
		return reconcile.CommitResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	cur := s.cursors[c.Job]
	if cur == nil {
		cur = &CursorInfo{CycleStartedAt: now}
	}
	if cur.Position != c.Cursor.Position || cur.Version != c.Cursor.Version {
		return reconcile.CommitResult{}, reconcile.ErrConcurrentRun
	}
	res := s.record(c.Job, c.Outcomes, now)
	cur.Version++
	if len(c.Outcomes) > 0 || !c.Wrap {
		cur.LastBatchAt, cur.LastBatchScanned, cur.LastBatchUnverified = now, len(c.Outcomes), c.Unverifiable()
	}
	if c.Wrap {
		s.forgetDeleted(c.Job, now)
		cur.Position, cur.End = "", ""
		cur.CyclesCompleted++
		cur.LastCycleCompletedAt = now
		cur.CycleStartedAt = now
	} else {
		cur.Position, cur.End = c.Next, c.Cursor.End
	}
	s.cursors[c.Job] = cur
	return res, nil
}

// version returns the version of the row with key k; the caller holds s.mu.
func (s *Store[K, L]) version(k K) string {
	return strconv.FormatUint(s.versions[fmt.Sprint(k)], 10)
}

// asRead reports whether o's row is as its batch read it: it still exists and, if o carries a
// version, has that version. The caller holds s.mu.
func (s *Store[K, L]) asRead(o reconcile.Outcome) bool {
	if s.ids[o.RecordID] == 0 {
		return false
	}
	return o.Version == "" || o.Version == strconv.FormatUint(s.versions[o.RecordID], 10)
}

// record writes outcomes' observations, findings and commands, and closes the findings that
// verified judgments no longer describe (see reconcile.Sink); the caller holds s.mu.
func (s *Store[K, L]) record(job string, outcomes []reconcile.Outcome, now time.Time) reconcile.CommitResult {
	var res reconcile.CommitResult
	for _, o := range outcomes {
		d := o.Decision
		finding := d.Kind != "" && (d.Verdict == reconcile.Repairable || d.Verdict == reconcile.NeedsReview)
		// A row changed or deleted since its batch was read is left for the next cycle.
		if !o.NotARow && !s.asRead(o) {
			if o.Verified || finding {
				res.Changed++
			}
			continue
		}
		if o.Verified {
			// Verified when the answer was obtained, never later than the commit (by the
			// store's clock). An answer older than the row's recorded one (a lane's, committed
			// first) must not overturn what that one found: left alone, as a changed row.
			at := now
			if !o.VerifiedAt.IsZero() && o.VerifiedAt.Before(now) {
				at = o.VerifiedAt
			}
			if old, ok := s.observations[obsKey{job, o.RecordID}]; ok && !o.NotARow && at.Before(old.VerifiedAt) {
				res.Changed++
				continue
			}
			s.observations[obsKey{job, o.RecordID}] = Observation{External: o.External, VerifiedAt: at}
		}
		var successor int64
		if finding {
			successor = s.openFinding(job, o, now, &res)
		}
		if o.Decides() {
			s.closeOthers(job, o, successor, now)
		}
	}
	return res
}

// openFinding opens o's finding unless one is open for (job, record, kind) (or, for o.Once,
// ever was), queuing its command, and returns the record's open finding of that kind, zero if
// none. The caller holds s.mu.
func (s *Store[K, L]) openFinding(job string, o reconcile.Outcome, now time.Time, res *reconcile.CommitResult) int64 {
	d := o.Decision
	fk := findingKey{job, o.RecordID, d.Kind}
	if i, dup := s.open[fk]; dup {
		return s.findings[i].ID
	}
	if o.Once && slices.ContainsFunc(s.findings, func(f reconcile.Finding) bool {
		return f.Job == job && f.RecordID == o.RecordID && f.Kind == d.Kind
	}) {
		return 0 // opened once already, and resolved since
	}
	f := reconcile.Finding{
		ID: int64(len(s.findings) + 1), Job: job, RecordID: o.RecordID, ExternalID: o.ExternalID, Kind: d.Kind,
		Local: o.Local, External: o.External, Detail: d.Detail, Diffs: slices.Clone(d.Diffs), Command: d.Command, DetectedAt: now,
	}
	s.setOpen(fk, len(s.findings))
	s.findings = append(s.findings, f)
	res.Findings++
	if cmd := o.RepairCommand(job); cmd != nil {
		cmd.FindingID = f.ID
		s.commands = append(s.commands, QueuedCommand{Seq: int64(len(s.commands) + 1), AggregateType: s.aggType, Command: *cmd})
		res.Commands++
	}
	return f.ID
}

// closeOthers closes the open findings of o's record in job other than o's own kind (and
// missing_locally ones): as superseded by finding successor when o carries a finding, else as
// cleared. The caller holds s.mu.
func (s *Store[K, L]) closeOthers(job string, o reconcile.Outcome, successor int64, now time.Time) {
	kinds := s.openKinds[obsKey{job, o.RecordID}]
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		if kind == o.Decision.Kind || kind == reconcile.KindMissingLocally {
			continue
		}
		fk := findingKey{job, o.RecordID, kind}
		f := &s.findings[s.open[fk]]
		f.ResolvedAt, f.ResolvedBy = now, reconcile.ResolvedByReconciler
		if o.Decision.Kind == "" {
			f.Resolution, f.ResolutionNote = reconcile.ResolutionCleared, fmt.Sprintf("in sync again: local %s, external %s", o.Local, o.External)
		} else {
			f.Resolution, f.SupersededBy = reconcile.ResolutionSuperseded, successor
			f.ResolutionNote = fmt.Sprintf("superseded by finding %d: %s", successor, o.Decision.Kind)
		}
		s.events[f.ID] = append(s.events[f.ID], reconcile.FindingEvent{At: now, Action: reconcile.ActionResolved,
			Actor: f.ResolvedBy, Resolution: f.Resolution, Note: f.ResolutionNote})
		s.deleteOpen(fk)
	}
}

// setOpen and deleteOpen keep open and its index openKinds; the caller holds s.mu.
func (s *Store[K, L]) setOpen(fk findingKey, i int) {
	s.open[fk] = i
	rk := obsKey{fk.job, fk.record}
	if s.openKinds[rk] == nil {
		s.openKinds[rk] = map[string]bool{}
	}
	s.openKinds[rk][fk.kind] = true
}

func (s *Store[K, L]) deleteOpen(fk findingKey) {
	delete(s.open, fk)
	rk := obsKey{fk.job, fk.record}
	if delete(s.openKinds[rk], fk.kind); len(s.openKinds[rk]) == 0 {
		delete(s.openKinds, rk)
	}
}

// forgetDeleted closes the job's open findings of rows that no longer exist, as
// reconcile.ResolutionRowDeleted by reconcile.ResolvedByReconciler, and drops the job's
// observations of such rows: called when a cycle completes. missing_locally findings stay, and
// so do commands already queued (the canonical writer finds the row gone). The caller holds s.mu.
func (s *Store[K, L]) forgetDeleted(job string, now time.Time) {
	for fk, i := range s.open {
		if fk.job != job || fk.kind == reconcile.KindMissingLocally || s.ids[fk.record] > 0 {
			continue
		}
		f := &s.findings[i]
		f.ResolvedAt, f.Resolution, f.ResolvedBy = now, reconcile.ResolutionRowDeleted, reconcile.ResolvedByReconciler
		f.ResolutionNote = "the row no longer exists; closed when the cycle completed"
		s.events[f.ID] = append(s.events[f.ID], reconcile.FindingEvent{At: now, Action: reconcile.ActionResolved,
			Actor: f.ResolvedBy, Resolution: f.Resolution, Note: f.ResolutionNote})
		s.deleteOpen(fk)
	}
	for ok := range s.observations {
		if ok.job == job && s.ids[ok.record] == 0 {
			delete(s.observations, ok)
		}
	}
}

// Match returns the rows with one of the external ids, for a reconcile.Lane: Recent when
// changed within req.Grace by the store's clock, or at or after their Since time.
func (s *Store[K, L]) Match(ctx context.Context, req reconcile.MatchRequest) (reconcile.MatchResult[L], error) {
	var res reconcile.MatchResult[L]
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if req.Since != nil && len(req.Since) != len(req.ExternalIDs) {
		return res, fmt.Errorf("memstore: match: %d Since times for %d external ids", len(req.Since), len(req.ExternalIDs))
	}
	since := make(map[string]time.Time, len(req.ExternalIDs))
	for i, id := range req.ExternalIDs {
		since[id] = time.Time{}
		if req.Since != nil {
			since[id] = req.Since[i]
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, k := range s.keys {
		r := s.rows[k]
		t, ok := since[r.ExternalID]
		if !ok {
			continue
		}
		pos, err := json.Marshal(k)
		if err != nil {
			return res, fmt.Errorf("memstore: encode key %v: %w", k, err)
		}
		recent := (req.Grace > 0 && now.Sub(r.UpdatedAt) < req.Grace) || (!t.IsZero() && !r.UpdatedAt.Before(t))
		res.Rows = append(res.Rows, reconcile.Record[L]{Key: string(pos), ID: fmt.Sprint(k), ExternalID: r.ExternalID,
			Local: r.Local, CreatedAt: r.CreatedAt, Recent: recent, Version: s.version(k),
			Invalid: impossibleTime(r.CreatedAt, r.UpdatedAt, now)})
	}
	return res, nil
}

// impossibleTime says why a row's times cannot be judged, "" if they can: a CreatedAt or
// UpdatedAt more than reconcile.MaxClockSkew ahead of the store's clock (now). A Read or Match
// returns such a row Invalid, a NeedsReview invalid_row finding, as pgstore does: by its
// UpdatedAt alone it would be within the grace period at every read, its drift never found.
func impossibleTime(created, updated, now time.Time) string {
	for _, t := range []struct {
		name string
		at   time.Time
	}{{"CreatedAt", created}, {"UpdatedAt", updated}} {
		if t.at.After(now.Add(reconcile.MaxClockSkew)) {
			return fmt.Sprintf("%s %s is in the future: more than %s ahead of the store's clock",
				t.name, t.at.UTC().Format(time.DateTime+" UTC"), reconcile.MaxClockSkew)
		}
	}
	return ""
}

// ReadLane returns the lane's position and version; the zero Cursor before its first commit.
func (s *Store[K, L]) ReadLane(ctx context.Context, job, lane string) (reconcile.Cursor, error) {
	if err := ctx.Err(); err != nil {
		return reconcile.Cursor{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.lanes[laneKey{job, lane}]; l != nil {
		return l.Cursor, nil
	}
	return reconcile.Cursor{}, nil
}

// CommitLane applies a lane step's results atomically, compare-and-set on the lane's version.
func (s *Store[K, L]) CommitLane(ctx context.Context, c reconcile.LaneCommit) (reconcile.CommitResult, error) {
	if err := ctx.Err(); err != nil {
		return reconcile.CommitResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commitLane(c)
}

// commitLane is CommitLane with s.mu held.
func (s *Store[K, L]) commitLane(c reconcile.LaneCommit) (reconcile.CommitResult, error) {
	k := laneKey{c.Job, c.Lane}
	l := s.lanes[k]
	now := s.now()
	if l == nil {
		l = &LaneInfo{CreatedAt: now}
	}
	if l.Cursor != c.Cursor {
		return reconcile.CommitResult{}, reconcile.ErrConcurrentRun
	}
	res := s.record(c.Job, c.Outcomes, now)
	l.Version++
	l.Position = c.Next
	l.LastRunAt = now
	if c.End {
		l.PassesCompleted++
		l.LastEndAt = now
	}
	if c.Gap != "" {
		l.GapAt, l.GapReason, l.GapCycles = now, c.Gap, 0
		if cur := s.cursors[c.Job]; cur != nil {
			l.GapCycles = cur.CyclesCompleted
		}
	}
	s.lanes[k] = l
	return res, nil
}

// Lane returns a lane's state; the zero LaneInfo before its first commit.
func (s *Store[K, L]) Lane(job, lane string) LaneInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.lanes[laneKey{job, lane}]; l != nil {
		return *l
	}
	return LaneInfo{}
}

// Cursor returns the job's cursor; the zero CursorInfo before its first commit.
func (s *Store[K, L]) Cursor(job string) CursorInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.cursors[job]; c != nil {
		return *c
	}
	return CursorInfo{}
}

// Observation returns the last confirmed external state of a record for a job.
func (s *Store[K, L]) Observation(job, recordID string) (Observation, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.observations[obsKey{job, recordID}]
	return o, ok
}

// Commands returns every queued repair command in outbox order.
func (s *Store[K, L]) Commands() []QueuedCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.commands)
}

// ListFindings returns a page of the findings q selects, by increasing id, or decreasing
// when q.Newest (reconcile.Reviewer). A Search matches a finding's external id or record id;
// the store has no host columns to search besides.
func (s *Store[K, L]) ListFindings(ctx context.Context, q reconcile.FindingQuery) ([]reconcile.Finding, error) {
	q, err := q.Normalize()
	if err != nil {
		return nil, fmt.Errorf("memstore: list findings: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []reconcile.Finding
	// Findings are kept by id: finding id is s.findings[id-1].
	for i := range s.findings {
		if len(out) == q.Limit {
			break
		}
		f := s.findings[i]
		if q.Newest {
			f = s.findings[len(s.findings)-1-i]
		}
		if q.AfterID > 0 && (!q.Newest && f.ID <= q.AfterID || q.Newest && f.ID >= q.AfterID) || !selects(q, f) {
			continue
		}
		out = append(out, f)
	}
	return out, nil
}

var _ reconcile.FindingCounter = (*Store[string, string])(nil)

// CountFindings returns how many findings q selects, ignoring its AfterID, Limit and Newest
// (reconcile.FindingCounter).
func (s *Store[K, L]) CountFindings(ctx context.Context, q reconcile.FindingQuery) (int, error) {
	q, err := q.Normalize()
	if err != nil {
		return 0, fmt.Errorf("memstore: count findings: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.findings {
		if selects(q, f) {
			n++
		}
	}
	return n, nil
}

// selects reports whether f meets q's filters (not its paging).
func selects(q reconcile.FindingQuery, f reconcile.Finding) bool {
	switch {
	case q.State == reconcile.FindingsOpen && !f.Open(),
		q.State == reconcile.FindingsResolved && f.Open(),
		q.Job != "" && f.Job != q.Job,
		len(q.Jobs) > 0 && !slices.Contains(q.Jobs, f.Job),
		q.Kind != "" && f.Kind != q.Kind,
		q.RecordID != "" && f.RecordID != q.RecordID,
		q.Search != "" && f.ExternalID != q.Search && f.RecordID != q.Search,
		!q.DetectedBefore.IsZero() && !f.DetectedAt.Before(q.DetectedBefore):
		return false
	}
	return true
}

// Finding returns one finding with its history (reconcile.Reviewer): its detection, then its
// resolutions and reopenings. The store has no repair commands' states to add.
func (s *Store[K, L]) Finding(ctx context.Context, id int64) (reconcile.FindingDetail, error) {
	if err := ctx.Err(); err != nil {
		return reconcile.FindingDetail{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.finding("finding", id)
	if err != nil {
		return reconcile.FindingDetail{}, err
	}
	history := append([]reconcile.FindingEvent{{At: f.DetectedAt, Action: reconcile.ActionDetected, Actor: f.Job}}, s.events[id]...)
	d := reconcile.FindingDetail{Finding: *f, History: history}
	for _, g := range s.findings {
		if g.SupersededBy == id {
			d.Supersedes = append(d.Supersedes, g.ID)
		}
	}
	return d, nil
}

// finding returns finding id, or an error wrapping reconcile.ErrFindingNotFound; the caller
// holds s.mu.
func (s *Store[K, L]) finding(op string, id int64) (*reconcile.Finding, error) {
	if id <= 0 || id > int64(len(s.findings)) {
		return nil, fmt.Errorf("memstore: %s %d: %w", op, id, reconcile.ErrFindingNotFound)
	}
	return &s.findings[id-1], nil
}

// ResolveFinding closes an open finding and records the change in its history
// (reconcile.Reviewer); a closed one is left as it is: reconcile.ErrAlreadyResolved.
func (s *Store[K, L]) ResolveFinding(ctx context.Context, id int64, r reconcile.Resolution) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.finding("resolve finding", id)
	if err != nil {
		return err
	}
	if !f.Open() {
		return fmt.Errorf("memstore: resolve finding %d: %w", id, reconcile.ErrAlreadyResolved)
	}
	now := s.now()
	f.ResolvedAt, f.Resolution, f.ResolvedBy, f.ResolutionNote = now, r.As, r.By, r.Note
	s.events[id] = append(s.events[id], reconcile.FindingEvent{At: now, Action: reconcile.ActionResolved, Actor: r.By, Resolution: r.As, Note: r.Note})
	s.deleteOpen(findingKey{f.Job, f.RecordID, f.Kind})
	return nil
}

// ReopenFinding opens a resolved finding again and records who did it and why
// (reconcile.Reviewer). If the same drift has been found again since, the newer finding is the
// open one: reconcile.ErrFoundAgain.
func (s *Store[K, L]) ReopenFinding(ctx context.Context, id int64, by, note string) error {
	if by == "" {
		return errors.New("memstore: reopen finding: the actor is empty")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.finding("reopen finding", id)
	if err != nil {
		return err
	}
	fk := findingKey{f.Job, f.RecordID, f.Kind}
	if i, ok := s.open[fk]; ok && s.findings[i].ID != id {
		return fmt.Errorf("memstore: reopen finding %d: %w", id, reconcile.ErrFoundAgain)
	}
	if f.Open() {
		return fmt.Errorf("memstore: reopen finding %d: %w", id, reconcile.ErrAlreadyOpen)
	}
	f.ResolvedAt, f.Resolution, f.ResolvedBy, f.ResolutionNote, f.SupersededBy = time.Time{}, "", "", "", 0
	s.events[id] = append(s.events[id], reconcile.FindingEvent{At: s.now(), Action: reconcile.ActionReopened, Actor: by, Note: note})
	s.setOpen(fk, int(id-1))
	return nil
}
