package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Finding is a recorded drift, as stores return it for review.
type Finding struct {
	ID       int64
	Job      string
	RecordID string
	// ExternalID is the external object's id, such as a PaymentIntent's pi_..., when the
	// store can read it from the record; empty otherwise.
	ExternalID string
	Kind       string
	Local      string
	External   string
	Detail     string
	// Diffs are the fields that differed when the finding was opened (Decision.Diffs).
	Diffs []Diff
	// Command is the repair command queued when the finding was opened; empty for NeedsReview.
	Command    string
	DetectedAt time.Time
	// ResolvedAt is zero while the finding is open.
	ResolvedAt time.Time
	// Resolution, ResolvedBy and ResolutionNote say how, by whom and why it was closed.
	Resolution     string
	ResolvedBy     string
	ResolutionNote string
	// SupersededBy is the id of the finding that replaced this one, when it was closed as
	// ResolutionSuperseded; zero otherwise.
	SupersededBy int64
}

// Open reports whether the finding is unresolved.
func (f Finding) Open() bool { return f.ResolvedAt.IsZero() }

// States a FindingQuery selects by.
const (
	FindingsOpen     = "open"
	FindingsResolved = "resolved"
	FindingsAll      = "all"
)

// DefaultFindingsLimit is the page size of a FindingQuery whose Limit is zero.
const DefaultFindingsLimit = 100

// FindingQuery selects findings for review. The zero value means every open finding, oldest
// first, DefaultFindingsLimit per page.
type FindingQuery struct {
	// Job, Kind and RecordID filter when set.
	Job, Kind, RecordID string
	// Jobs, when set, keeps the findings of these jobs only.
	Jobs []string
	// Search, when set, keeps the findings whose external id or record id is Search, or whose
	// row holds Search in one of the store's search columns (such as an order id; see
	// pgstore.Config.SearchColumns). It matches whole values, not parts.
	Search string
	// State is FindingsOpen (the default when empty), FindingsResolved or FindingsAll.
	State string
	// DetectedBefore, when set, keeps the findings detected before it: now - 24h lists
	// those open for more than a day.
	DetectedBefore time.Time
	// Newest lists by decreasing id, newest first, instead of oldest first. Ids are assigned
	// as findings are committed, so id order is detection order (up to two jobs committing at
	// the same moment).
	Newest bool
	// AfterID continues after the last id of the previous page (keyset pagination): ids above
	// it, or below it when Newest.
	AfterID int64
	// Limit is the page size; zero means DefaultFindingsLimit.
	Limit int
}

// Normalize returns q with its defaults filled in, or an error naming what is wrong.
func (q FindingQuery) Normalize() (FindingQuery, error) {
	switch q.State {
	case "":
		q.State = FindingsOpen
	case FindingsOpen, FindingsResolved, FindingsAll:
	default:
		return q, fmt.Errorf("state %q is not %s, %s or %s", q.State, FindingsOpen, FindingsResolved, FindingsAll)
	}
	if q.Limit < 0 {
		return q, fmt.Errorf("limit %d is negative", q.Limit)
	}
	if q.Limit == 0 {
		q.Limit = DefaultFindingsLimit
	}
	return q, nil
}

// Actions of a FindingEvent. A repair command's events are "command " and its status
// ("command pending", "command done", "command dead"); a person re-driving it is
// ActionCommandRedriven.
const (
	ActionDetected        = "detected"
	ActionResolved        = "resolved"
	ActionReopened        = "reopened"
	ActionCommandRedriven = "command redriven"
)

// FindingEvent is one entry of a finding's history.
type FindingEvent struct {
	At time.Time
	// Action is what happened: ActionDetected, ActionResolved, ActionReopened, or for a
	// repair command "command " and its status.
	Action string
	// Actor is who did it: the job for a detection, a person or ResolvedByReconciler, the
	// command's name for a command's event.
	Actor      string
	Resolution string
	// Note is a person's note.
	Note string
	// Error is, for a command's event, the command's last error. It may name hosts or hold
	// SQL: it is for operators, and pages for reviewers leave it out (the console does).
	Error string
	// Failures is, for a command's event, the failed attempts of the command so far.
	Failures int
}

// CommandEvent reports whether e is a repair command's own event, not a person's.
func (e FindingEvent) CommandEvent() bool {
	return strings.HasPrefix(e.Action, "command ") && e.Action != ActionCommandRedriven
}

// FindingDetail is one finding with its history.
type FindingDetail struct {
	Finding
	// History is oldest first: detection, every resolution and reopening, and the events of
	// its repair commands.
	History []FindingEvent
	// Supersedes lists the findings this one replaced (closed as ResolutionSuperseded naming
	// it), by id.
	Supersedes []int64
}

// Reviewer is the review side of a store: what people (and the console) read and decide.
// memstore.Store and pgstore.Store are Reviewers.
type Reviewer interface {
	// ListFindings returns a page of the findings q selects, by increasing id (decreasing
	// when q.Newest).
	ListFindings(ctx context.Context, q FindingQuery) ([]Finding, error)
	// Finding returns one finding with its history; an error wrapping ErrFindingNotFound
	// if there is none.
	Finding(ctx context.Context, id int64) (FindingDetail, error)
	// ResolveFinding closes an open finding, recording r in its history. Errors wrap
	// ErrFindingNotFound or ErrAlreadyResolved when that is why nothing changed: a repair
	// and a webhook (or a person) may both get there. Once resolved, the same drift can be
	// found again.
	ResolveFinding(ctx context.Context, id int64, r Resolution) error
	// ReopenFinding opens a resolved finding again (the fix did not hold, or was recorded
	// by mistake), recording who and why. Errors wrap ErrFindingNotFound, ErrAlreadyOpen
	// or ErrFoundAgain when that is why nothing changed.
	ReopenFinding(ctx context.Context, id int64, by, note string) error
}

// FindingCounter is an optional ability of a Reviewer: counting the findings a query selects,
// for a page's total. pgstore.Store and memstore.Store are FindingCounters.
type FindingCounter interface {
	// CountFindings returns how many findings q selects, every page of them: q's AfterID,
	// Limit and Newest are ignored.
	CountFindings(ctx context.Context, q FindingQuery) (int, error)
}

// Errors a Reviewer returns, wrapped, when a review changes nothing.
var (
	// ErrFindingNotFound: no finding has that id.
	ErrFindingNotFound = errors.New("reconcile: no such finding")
	// ErrAlreadyResolved: the finding was resolved already (by someone else, or a repair).
	ErrAlreadyResolved = errors.New("reconcile: the finding is resolved already")
	// ErrAlreadyOpen: the finding is open already.
	ErrAlreadyOpen = errors.New("reconcile: the finding is open already")
	// ErrFoundAgain: the same drift (job, record, kind) was found again since the finding
	// was resolved, and the newer finding is the open one.
	ErrFoundAgain = errors.New("reconcile: the same drift was found again; the newer finding is open")
)
