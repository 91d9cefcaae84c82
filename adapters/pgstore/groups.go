package pgstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reconcilekit/reconcile"
)

var (
	_ reconcile.GroupSink   = (*Store[string])(nil)
	_ reconcile.GroupReader = (*Store[string])(nil)
)

// groupRow is a group as commitGroups reads it from its jsonb array.
type groupRow struct {
	Account   string   `json:"account"`
	ID        string   `json:"id"`
	Status    string   `json:"status"`
	Amount    int64    `json:"amount"`
	Currency  string   `json:"currency"`
	Itemized  bool     `json:"itemized"`
	Expected  *int64   `json:"expected"`
	Members   int      `json:"members"`
	Findings  int      `json:"findings"`
	Unmatched int      `json:"unmatched"`
	Held      bool     `json:"held"`
	Records   []string `json:"records"`
	TiedOut   bool     `json:"tied_out"`
}

// CommitGroups is CommitLane recording groups too, in the same transaction and round trip
// (reconcile.GroupSink), in the groups table (migration 014): nothing is written if a record is
// not storable (reconcile.CheckGroupRecord) or the lane moved. Times are the database's.
func (s *Store[L]) CommitGroups(ctx context.Context, c reconcile.LaneCommit, groups []reconcile.GroupRecord) (reconcile.CommitResult, error) {
	// Every entry is checked, a group's earlier ones too (as memstore does), before the last
	// of each is kept.
	for _, g := range groups {
		if err := reconcile.CheckGroupRecord(g); err != nil {
			return reconcile.CommitResult{}, fmt.Errorf("pgstore: commit groups: %w", err)
		}
	}
	rows := make([]groupRow, 0, len(groups))
	for _, g := range reconcile.LastGroupRecords(groups) {
		r := groupRow{Account: g.Account, ID: g.ID, Status: g.Status, Amount: g.Amount, Currency: g.Currency,
			Itemized: g.Itemized, Members: g.Members, Findings: g.Findings, Unmatched: g.Unmatched, Held: g.Held,
			Records: g.Records, TiedOut: g.TiedOut}
		if g.ExpectedKnown {
			r.Expected = &g.Expected
		}
		rows = append(rows, r)
	}
	// In one order whoever commits, so that two steps recording the same groups cannot deadlock.
	slices.SortFunc(rows, func(a, b groupRow) int {
		return cmp.Or(strings.Compare(a.Account, b.Account), strings.Compare(a.ID, b.ID))
	})
	var more func(*pgx.Batch)
	if len(rows) > 0 {
		doc, err := json.Marshal(rows) // checked text, integers and booleans: it cannot fail
		if err != nil {
			return reconcile.CommitResult{}, fmt.Errorf("pgstore: commit groups: %w", err)
		}
		more = func(b *pgx.Batch) { b.Queue(s.own.commitGroups, c.Job, c.Lane, string(doc)) }
	}
	return s.commitLane(ctx, c, "commit groups", more)
}

// ListGroups returns a page of the group records q selects, newest first, in one query.
func (s *Store[L]) ListGroups(ctx context.Context, q reconcile.GroupQuery) ([]reconcile.GroupRecord, error) {
	q, err := q.Normalize()
	if err != nil {
		return nil, fmt.Errorf("pgstore: list groups: %w", err)
	}
	rows, err := s.db.Query(ctx, s.own.listGroups, q.Job, q.Jobs, q.Account, q.Status, q.State, q.BeforeSeq, q.Limit)
	if err != nil {
		return nil, s.cfg.Tables.wrap("list groups", err)
	}
	out, err := pgx.CollectRows(rows, scanGroup)
	if err != nil {
		return nil, s.cfg.Tables.wrap("list groups", err)
	}
	return out, nil
}

// Group returns the group record numbered seq.
func (s *Store[L]) Group(ctx context.Context, seq int64) (reconcile.GroupRecord, error) {
	rows, err := s.db.Query(ctx, s.own.group, seq)
	if err != nil {
		return reconcile.GroupRecord{}, s.cfg.Tables.wrap("read group", err)
	}
	g, err := pgx.CollectExactlyOneRow(rows, scanGroup)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return g, fmt.Errorf("pgstore: group %d: %w", seq, reconcile.ErrGroupNotFound)
	case err != nil:
		return g, s.cfg.Tables.wrap("read group", err)
	}
	return g, nil
}

// CountGroups counts the group records q selects, by state, in one query.
func (s *Store[L]) CountGroups(ctx context.Context, q reconcile.GroupQuery) (reconcile.GroupCounts, error) {
	var n reconcile.GroupCounts
	err := s.db.QueryRow(ctx, s.own.countGroups, q.Job, q.Jobs, q.Account, q.Status).Scan(&n.Recorded, &n.Pending, &n.NotHeld)
	if err != nil {
		return n, s.cfg.Tables.wrap("count groups", err)
	}
	return n, nil
}

// scanGroup scans the columns of groupColumns.
func scanGroup(row pgx.CollectableRow) (reconcile.GroupRecord, error) {
	var g reconcile.GroupRecord
	var expected *int64
	var tied *time.Time
	err := row.Scan(&g.Seq, &g.Job, &g.Lane, &g.Account, &g.ID, &g.Status, &g.Amount, &g.Currency, &g.Itemized, &expected,
		&g.Members, &g.Findings, &g.Unmatched, &g.Held, &g.Records, &g.SeenAt, &tied)
	if expected != nil {
		g.Expected, g.ExpectedKnown = *expected, true
	}
	if tied != nil {
		g.TiedOut, g.TiedOutAt = true, *tied
	}
	return g, err
}
