package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/reconcilekit/reconcile"
)

var (
	_ reconcile.GroupSink   = (*Store[int64, string])(nil)
	_ reconcile.GroupReader = (*Store[int64, string])(nil)
)

// CommitGroups is CommitLane recording groups too, atomically (reconcile.GroupSink): nothing is
// written if a record is not storable or the lane moved.
func (s *Store[K, L]) CommitGroups(ctx context.Context, c reconcile.LaneCommit, groups []reconcile.GroupRecord) (reconcile.CommitResult, error) {
	if err := ctx.Err(); err != nil {
		return reconcile.CommitResult{}, err
	}
	for _, g := range groups {
		if err := reconcile.CheckGroupRecord(g); err != nil {
			return reconcile.CommitResult{}, fmt.Errorf("memstore: commit groups: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.commitLane(c)
	if err != nil {
		return res, err
	}
	now := s.now()
	for _, g := range reconcile.LastGroupRecords(groups) {
		g.Job, g.Lane, g.SeenAt, g.TiedOutAt = c.Job, c.Lane, now, now
		g.Records = slices.Clone(g.Records)
		if !g.TiedOut {
			g.TiedOutAt = time.Time{}
		}
		k := groupKey{c.Job, g.Account, g.ID}
		seq, ok := s.groupSeq[k]
		if !ok {
			seq = int64(len(s.groups)) + 1
			s.groupSeq[k] = seq
			g.Seq = seq
			s.groups = append(s.groups, g)
			continue
		}
		if old := &s.groups[seq-1]; g.TiedOut || !old.TiedOut {
			g.Seq = seq
			*old = g
		}
	}
	return res, nil
}

// ListGroups returns a page of the group records q selects, newest first.
func (s *Store[K, L]) ListGroups(ctx context.Context, q reconcile.GroupQuery) ([]reconcile.GroupRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q, err := q.Normalize()
	if err != nil {
		return nil, fmt.Errorf("memstore: list groups: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []reconcile.GroupRecord
	for i := len(s.groups) - 1; i >= 0 && len(out) < q.Limit; i-- {
		g := s.groups[i]
		if (q.BeforeSeq == 0 || g.Seq < q.BeforeSeq) && q.Matches(g) {
			g.Records = slices.Clone(g.Records)
			out = append(out, g)
		}
	}
	return out, nil
}

// Group returns the group record numbered seq.
func (s *Store[K, L]) Group(ctx context.Context, seq int64) (reconcile.GroupRecord, error) {
	if err := ctx.Err(); err != nil {
		return reconcile.GroupRecord{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq < 1 || seq > int64(len(s.groups)) {
		return reconcile.GroupRecord{}, fmt.Errorf("memstore: group %d: %w", seq, reconcile.ErrGroupNotFound)
	}
	g := s.groups[seq-1]
	g.Records = slices.Clone(g.Records)
	return g, nil
}

// CountGroups counts the group records q selects, by state.
func (s *Store[K, L]) CountGroups(ctx context.Context, q reconcile.GroupQuery) (reconcile.GroupCounts, error) {
	if err := ctx.Err(); err != nil {
		return reconcile.GroupCounts{}, err
	}
	var n reconcile.GroupCounts
	q.State = ""
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.groups {
		if !q.Matches(g) {
			continue
		}
		n.Recorded++
		if !g.TiedOut {
			n.Pending++
		} else if !g.Held || g.Findings > 0 {
			n.NotHeld++
		}
	}
	return n, nil
}
