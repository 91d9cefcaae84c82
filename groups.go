package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// A lane step of a tie-out (package tieout's Step) judges groups of external records whose sum
// must hold, such as a Stripe payout and its balance transactions, and its findings name lines,
// not groups. What a person or a finance team asks next (what did each payout pay against what
// its lines add up to, which payouts are not tied out yet) needs a record of each group, kept
// with the findings: a GroupSink commits both in one transaction, a GroupReader lists them.

// GroupRecord is what a step records of one group it saw: tied out (its members were final
// and were judged), or only seen (pending: its members are not final yet).
type GroupRecord struct {
	// Seq is the store's number for the group, assigned when the group is first recorded and
	// kept after: the order and the keyset of ListGroups. Ignored by CommitGroups.
	Seq int64
	// Job and Lane are the commit's. Ignored by CommitGroups, which records under the
	// LaneCommit's.
	Job, Lane string
	// ID, Account and Status are the group's external id (po_...), its account (empty for a
	// platform's own) and its status as the external system names it. A group is recorded
	// once per (Job, Account, ID).
	ID, Account, Status string
	// Amount is what the group paid, in minor units of Currency.
	Amount   int64
	Currency string
	// TiedOut reports that the group was tied out; false means seen with its members not final
	// yet. A pending record never replaces a tied-out one.
	TiedOut bool
	// Itemized reports that the group's members could be listed (a manual payout's cannot).
	Itemized bool
	// Expected is the sum of the members' nets (without the group's own line): what the group
	// should have paid. ExpectedKnown is false when it is not known (not tied out, not
	// itemized, or the sum overflowed).
	Expected      int64
	ExpectedKnown bool
	// Members counts the members read.
	Members int
	// Findings counts the tie-out's findings about the group and its lines; Unmatched those of
	// them about lines (a line not booked, booked otherwise, of an unknown type, ...).
	Findings, Unmatched int
	// Held reports that the group tied out with its members summing to its amount.
	Held bool
	// Records are the record ids of the tie-out's findings (the group's id, the lines' ids),
	// each once, at most MaxGroupRecords: where its open findings are.
	Records []string
	// SeenAt is when the group was last recorded, TiedOutAt when it was last tied out (zero if
	// never), both by the store's clock. Ignored by CommitGroups.
	SeenAt, TiedOutAt time.Time
}

// MaxGroupRecords bounds GroupRecord.Records: a group with more findings keeps the first
// ones' records, and its Findings and Unmatched counts whole.
const MaxGroupRecords = 200

// MaxGroupCurrency bounds a GroupRecord's Currency, in bytes (an ISO code has 3).
const MaxGroupCurrency = 16

// GroupSink is an optional ability of a LaneSink: committing a step's groups with its findings
// and position, in the one transaction of CommitLane, so that a crash never leaves findings
// without their group's record or the reverse, and a step redone records the same again.
type GroupSink interface {
	// CommitGroups is CommitLane, recording groups too: each is inserted, or replaces the
	// record of the same (c.Job, Account, ID) unless it is pending and that one is tied out.
	// A group listed twice is recorded once, as its last entry says. A record that is not
	// storable (CheckGroupRecord) fails the commit: make them storable first
	// (StorableGroupRecord).
	CommitGroups(ctx context.Context, c LaneCommit, groups []GroupRecord) (CommitResult, error)
}

// GroupQuery selects group records. The zero value lists every record, newest first (by
// decreasing Seq), DefaultGroupsLimit per page.
type GroupQuery struct {
	// Job, Account and Status filter when set; Jobs, when set, keeps those jobs' only.
	Job, Account, Status string
	Jobs                 []string
	// State is "" (any), GroupsPending (seen, not tied out), GroupsHeld (tied out, held,
	// without findings) or GroupsNotHeld (tied out with findings, or not held).
	State string
	// BeforeSeq continues after the last record of the previous page (keyset pagination):
	// records whose Seq is below it. Zero means from the newest.
	BeforeSeq int64
	// Limit is the page size; zero means DefaultGroupsLimit.
	Limit int
}

// The states a GroupQuery may select.
const (
	GroupsPending = "pending"
	GroupsHeld    = "held"
	GroupsNotHeld = "not_held"
)

// DefaultGroupsLimit is the page size of a GroupQuery whose Limit is zero.
const DefaultGroupsLimit = 100

// Normalize returns q with its defaults filled in, or an error naming what is wrong.
func (q GroupQuery) Normalize() (GroupQuery, error) {
	switch q.State {
	case "", GroupsPending, GroupsHeld, GroupsNotHeld:
	default:
		return q, fmt.Errorf("state %q is not %s, %s or %s", q.State, GroupsPending, GroupsHeld, GroupsNotHeld)
	}
	switch {
	case q.Limit < 0:
		return q, fmt.Errorf("limit %d is negative", q.Limit)
	case q.BeforeSeq < 0:
		return q, fmt.Errorf("before %d is negative", q.BeforeSeq)
	case q.Limit == 0:
		q.Limit = DefaultGroupsLimit
	}
	return q, nil
}

// Matches reports whether record r is one q selects, Seq and Limit aside: the filters a store
// applies, for stores that filter in memory.
func (q GroupQuery) Matches(r GroupRecord) bool {
	switch {
	case q.Job != "" && r.Job != q.Job,
		len(q.Jobs) > 0 && !slices.Contains(q.Jobs, r.Job),
		q.Account != "" && r.Account != q.Account,
		q.Status != "" && r.Status != q.Status:
		return false
	}
	switch q.State {
	case GroupsPending:
		return !r.TiedOut
	case GroupsHeld:
		return r.TiedOut && r.Held && r.Findings == 0
	case GroupsNotHeld:
		return r.TiedOut && (!r.Held || r.Findings > 0)
	}
	return true
}

// GroupCounts counts the group records a GroupQuery's jobs and filters select (its State
// aside).
type GroupCounts struct {
	// Recorded counts them all; Pending those not tied out yet; NotHeld those tied out with
	// findings or not holding.
	Recorded, Pending, NotHeld int
}

// GroupReader is an optional ability of a Reviewer (pgstore.Store, memstore.Store): reading the
// group records steps committed, for the review console.
type GroupReader interface {
	// ListGroups returns a page of the records q selects, by decreasing Seq.
	ListGroups(ctx context.Context, q GroupQuery) ([]GroupRecord, error)
	// Group returns the record numbered seq; an error wrapping ErrGroupNotFound if there is
	// none.
	Group(ctx context.Context, seq int64) (GroupRecord, error)
	// CountGroups counts the records q selects, every page, by state (q's State, BeforeSeq and
	// Limit are ignored).
	CountGroups(ctx context.Context, q GroupQuery) (GroupCounts, error)
}

// ErrGroupNotFound: no group record has that number.
var ErrGroupNotFound = errors.New("reconcile: no such group record")

// CheckGroupRecord reports why a store cannot keep r as it is: an empty id, text that is not
// UTF-8 or holds NUL, an id or account longer than MaxExternalID, a status longer than
// MaxState, a currency longer than MaxGroupCurrency, negative counts, or more than
// MaxGroupRecords records. Stores check every record of a commit with it.
func CheckGroupRecord(r GroupRecord) error {
	if r.ID == "" {
		return errors.New("group has no id")
	}
	texts := []struct {
		what string
		s    string
		max  int
	}{{"id", r.ID, MaxExternalID}, {"account", r.Account, MaxExternalID}, {"status", r.Status, MaxState},
		{"currency", r.Currency, MaxGroupCurrency}}
	for _, t := range texts {
		if storable(t.s, t.max) != t.s {
			return fmt.Errorf("group %.40q: %s is not text a store keeps (NUL, invalid UTF-8, or more than %d bytes)", r.ID, t.what, t.max)
		}
	}
	if r.Members < 0 || r.Findings < 0 || r.Unmatched < 0 {
		return fmt.Errorf("group %.40q: negative count", r.ID)
	}
	if len(r.Records) > MaxGroupRecords {
		return fmt.Errorf("group %.40q: %d records, more than %d", r.ID, len(r.Records), MaxGroupRecords)
	}
	for _, rec := range r.Records {
		if rec == "" || storable(rec, MaxExternalID) != rec {
			return fmt.Errorf("group %.40q: a record id is empty or not text a store keeps", r.ID)
		}
	}
	return nil
}

// StorableGroupRecord returns r as a store keeps it (CheckGroupRecord passes unless its id is
// empty): its texts valid UTF-8 without NUL (invalid bytes become U+FFFD), cut to their bounds,
// its records storable, each once and at most MaxGroupRecords of them. A driver calls it before
// CommitGroups, so that what an external system sent cannot fail the commit of the others.
func StorableGroupRecord(r GroupRecord) GroupRecord {
	r.ID, r.Account = storable(r.ID, MaxExternalID), storable(r.Account, MaxExternalID)
	r.Status, r.Currency = storable(r.Status, MaxState), storable(r.Currency, MaxGroupCurrency)
	r.Members, r.Findings, r.Unmatched = max(r.Members, 0), max(r.Findings, 0), max(r.Unmatched, 0)
	var recs []string
	seen := make(map[string]bool, len(r.Records))
	for _, rec := range r.Records {
		rec = storable(rec, MaxExternalID)
		if rec == "" || seen[rec] || len(recs) == MaxGroupRecords {
			continue
		}
		seen[rec] = true
		recs = append(recs, rec)
	}
	r.Records = recs
	return r
}

// groupKey is how a store tells group records apart within a job.
func groupKey(r GroupRecord) string { return r.Account + "\x00" + r.ID }

// LastGroupRecords returns groups with each (Account, ID) once, as its last entry says, in
// the order of those last entries: what CommitGroups records of a list that names a group
// twice.
func LastGroupRecords(groups []GroupRecord) []GroupRecord {
	last := make(map[string]int, len(groups))
	for i, g := range groups {
		last[groupKey(g)] = i
	}
	if len(last) == len(groups) {
		return groups
	}
	out := make([]GroupRecord, 0, len(last))
	for i, g := range groups {
		if last[groupKey(g)] == i {
			out = append(out, g)
		}
	}
	return out
}
