package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/hosttable"
)

// A Store is a lane's Matcher and LaneSink too: lanes record under the sweep's job in the same
// findings, observations and outbox tables, and keep their positions in the lanes table.
var (
	_ reconcile.Matcher[string] = (*Store[string])(nil)
	_ reconcile.LaneSink        = (*Store[string])(nil)
)

// maxLanePosition bounds a stored lane position: a feed's position is a small token.
const maxLanePosition = 4096

// Match returns the rows, among those the store's Filter selects, whose external id is one of
// req.ExternalIDs, in one query; rows are Recent when changed within req.Grace or at or after
// their Since time. Ids that only rows outside the Filter have (another tier's) are listed in
// Elsewhere. Index the external id column: without an index (or with a column that is not
// text, varchar or char, compared as text) every call scans the table.
func (s *Store[L]) Match(ctx context.Context, req reconcile.MatchRequest) (reconcile.MatchResult[L], error) {
	var res reconcile.MatchResult[L]
	if req.Since != nil && len(req.Since) != len(req.ExternalIDs) {
		return res, fmt.Errorf("pgstore: match: %d Since times for %d external ids", len(req.Since), len(req.ExternalIDs))
	}
	if len(req.ExternalIDs) == 0 {
		return res, nil
	}
	st, err := s.statements(ctx)
	if err != nil {
		return res, err
	}
	since := make([]*time.Time, len(req.ExternalIDs))
	for i := range req.Since {
		if !req.Since[i].IsZero() {
			since[i] = &req.Since[i]
		}
	}
	args := append([]any{req.Grace.Seconds(), req.ExternalIDs, since}, st.filterArgs...)
	rows, err := s.db.Query(ctx, st.match, args...)
	if err != nil {
		return res, fmt.Errorf("pgstore: match %s: %w", s.hostTable(), err)
	}
	defer rows.Close()
	var r reconcile.Record[L]
	var inScope bool
	inRows := make(map[string]bool)
	var elsewhere []string
	sc := s.table.Scanner(st.spec, rows, &inScope)
	for rows.Next() {
		if err := sc.Scan(&r); err != nil {
			return res, fmt.Errorf("pgstore: match %s: %w", s.hostTable(), err)
		}
		if !inScope {
			elsewhere = append(elsewhere, r.ExternalID)
			continue
		}
		inRows[r.ExternalID] = true
		res.Rows = append(res.Rows, r)
	}
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("pgstore: match %s: %w", s.hostTable(), err)
	}
	for _, id := range elsewhere {
		if !inRows[id] && !slices.Contains(res.Elsewhere, id) {
			res.Elsewhere = append(res.Elsewhere, id)
		}
	}
	return res, nil
}

// ReadLane returns the lane's position and version; the zero Cursor if it has not committed.
func (s *Store[L]) ReadLane(ctx context.Context, job, lane string) (reconcile.Cursor, error) {
	var c reconcile.Cursor
	err := s.db.QueryRow(ctx, s.own.readLane, job, lane).
		Scan(&c.Position, &c.Version)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return c, s.cfg.Tables.wrap("read lane position", err)
	}
	return c, nil
}

// CommitLane writes a lane step's observations, findings and repair commands and its new
// position in one transaction, pipelined in one round trip, compare-and-set on the version read:
// reconcile.ErrConcurrentRun if another step committed first. A Gap is recorded with the
// sweep's completed cycles at that moment, so Status can tell when a full cycle has covered it.
func (s *Store[L]) CommitLane(ctx context.Context, c reconcile.LaneCommit) (reconcile.CommitResult, error) {
	return s.commitLane(ctx, c, "commit lane", nil)
}

// commitLane is CommitLane, queueing more (if not nil) after the lane's results: the groups of
// CommitGroups.
func (s *Store[L]) commitLane(ctx context.Context, c reconcile.LaneCommit, what string, more func(*pgx.Batch)) (reconcile.CommitResult, error) {
	var res reconcile.CommitResult
	switch {
	case c.Job == "" || c.Lane == "":
		return res, errors.New("pgstore: " + what + ": no job or lane name")
	case len(c.Next) > maxLanePosition:
		return res, fmt.Errorf("pgstore: %s: position of %d bytes is longer than %d", what, len(c.Next), maxLanePosition)
	}
	batch := &pgx.Batch{}
	if c.Cursor.Version == 0 {
		// A lane never committed (at most a failure recorded): create it. Two first steps
		// racing meet in the conflict, where the loser finds version 1 and affects no row.
		batch.Queue(s.own.createLane, c.Job, c.Lane, c.Next, len(c.Outcomes), c.End, c.Gap)
	} else {
		batch.Queue(s.own.advanceLane, c.Job, c.Lane, c.Cursor.Version, c.Next, len(c.Outcomes), c.End, c.Gap)
	}
	q, err := s.table.QueueResults(ctx, batch, c.Job, c.Outcomes, hosttable.KeyRange{}, &res, nil)
	if err != nil {
		return reconcile.CommitResult{}, err
	}
	if more != nil {
		more(batch)
	}
	if err := s.table.SendFenced(ctx, batch, what, q, nil); err != nil {
		return reconcile.CommitResult{}, err
	}
	return res, nil
}

var _ reconcile.LaneFailureRecorder = (*Store[string])(nil)

// RecordLaneFailure remembers that a step of a lane failed, for Status and health: a
// reconcile.LaneFailureRecorder, called by Lane.RunBatch. It writes apart from the lane's row,
// so that it does not wait for that row's lock (which may be what failed the step). The message
// is cut to 1,000 bytes.
func (s *Store[L]) RecordLaneFailure(ctx context.Context, job, lane string, cause error) error {
	_, err := s.db.Exec(ctx, s.own.laneFailure, job, lane, failureText(cause))
	if err != nil {
		return s.cfg.Tables.wrap("record lane failure", err)
	}
	s.table.NoteWrite()
	return nil
}
