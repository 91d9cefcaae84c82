package console

import (
	"context"
	"errors"
	"time"

	"github.com/reconcilekit/reconcile"
)

// Store is what the console reads and writes. NewPGStore adapts pgstore to it; a host may wrap
// it (to resolve through its own canonical writer, say) or fake it in tests.
type Store interface {
	// Findings returns a page of the findings q selects, by increasing id.
	Findings(ctx context.Context, q Query) ([]Finding, error)
	// Finding returns one finding with its history; an error wrapping ErrNotFound if there
	// is none.
	Finding(ctx context.Context, id int64) (Detail, error)
	// Resolve closes an open finding, recording r. Errors wrap ErrNotFound or
	// ErrAlreadyResolved when that is why nothing changed.
	Resolve(ctx context.Context, id int64, r reconcile.Resolution) error
	// Reopen opens a resolved finding again, recording who and why. Errors wrap ErrNotFound,
	// ErrAlreadyOpen or ErrFoundAgain when that is why nothing changed.
	Reopen(ctx context.Context, id int64, actor, note string) error
	// Status reads a job's monitoring figures, for the overview.
	reconcile.StatusReader
}

// JobLister is an optional ability of a Store: naming the jobs it knows, for the overview
// when Config.Jobs is empty. PGStore has it.
type JobLister interface {
	Jobs() []string
}

// Errors a Store returns (wrapped) so that the console can answer 404 or 409.
var (
	// ErrNotFound: no finding has that id.
	ErrNotFound = errors.New("console: no such finding")
	// ErrAlreadyResolved: the finding was resolved already (by someone else, or a repair).
	ErrAlreadyResolved = errors.New("console: the finding is resolved already")
	// ErrAlreadyOpen: the finding is open already.
	ErrAlreadyOpen = errors.New("console: the finding is open already")
	// ErrFoundAgain: the same drift (job, record, kind) was found again since the finding was
	// resolved, and the newer finding is the open one.
	ErrFoundAgain = errors.New("console: the same drift was found again; the newer finding is open")
)

// States a Query selects by.
const (
	StateOpen     = "open"
	StateResolved = "resolved"
	StateAll      = "all"
)

// Query selects findings. The zero value means every open finding from the first.
type Query struct {
	// Job, Kind and RecordID filter when set.
	Job, Kind, RecordID string
	// Jobs, when set, keeps the findings of these jobs only: the console sets it to its jobs
	// when Job is empty. (A store that ignores it still has the console show only its jobs'
	// findings, in pages that may then come out short.)
	Jobs []string
	// State is StateOpen (the default when empty), StateResolved or StateAll.
	State string
	// DetectedBefore, when set, keeps the findings detected before it.
	DetectedBefore time.Time
	// AfterID continues after the last id of the previous page (keyset pagination).
	AfterID int64
	// Limit is the page size.
	Limit int
}

// Finding is a finding as the console shows it.
type Finding struct {
	reconcile.Finding
	// ExternalID is the external object's id, such as a PaymentIntent's pi_..., when the
	// store knows it; empty otherwise.
	ExternalID string
}

// Detail is one finding with its history.
type Detail struct {
	Finding
	// History is oldest first: detection, resolutions, reopenings, repair commands.
	History []Event
}

// Event is one entry of a finding's history.
type Event struct {
	At time.Time
	// Action is what happened, such as "detected", "resolved", "reopened" or, for a repair
	// command, "command " and its status ("command dead").
	Action     string
	Actor      string
	Resolution string
	// Note is a person's note. The console never shows the note of a command's event: a
	// command's last error may name hosts or hold SQL, and stays in the outbox for operators
	// (PGStore leaves it empty).
	Note string
	// Failures is, for a command's event, the failed attempts of the command so far.
	Failures int
}
