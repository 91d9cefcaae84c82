package reconcile

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Command is a repair command as queued in the outbox: the payload of an outbox row whose
// event type is Name and whose aggregate id is RecordID. Sinks queue one only when the finding
// it repairs is new, in the same transaction.
type Command struct {
	// Name is the command, such as "ApplyPaymentSucceeded" (the outbox row's event type).
	Name string `json:"-"`
	// Job is the job that found the drift.
	Job string `json:"job"`
	// RecordID is the local row to repair.
	RecordID string `json:"record_id"`
	// FindingID is the finding the repair resolves.
	FindingID int64 `json:"finding_id"`
	// Kind is the finding's kind.
	Kind string `json:"kind"`
	// ExpectedLocal is the local state the repair expects to find; the canonical writer's
	// guarded update makes the repair a no-op when the row has moved on.
	ExpectedLocal string `json:"expected_local_state"`
	// External is the external state that was observed.
	External string `json:"external_state"`
}

// RepairCommand is the repair command that a new finding of o, found by job, queues: nil if
// its decision names none. Its FindingID is zero: the Sink sets it when it records the finding.
// Sinks build commands only here, and store them marshalled by encoding/json, so that every
// field of Command reaches the outbox whatever the store.
func (o Outcome) RepairCommand(job string) *Command {
	if o.Decision.Command == "" {
		return nil
	}
	return &Command{Name: o.Decision.Command, Job: job, RecordID: o.RecordID, Kind: o.Decision.Kind,
		ExpectedLocal: o.Local, External: o.External}
}

// DecodeCommand reads a command from an outbox row's event type and JSON payload.
func DecodeCommand(name string, payload []byte) (Command, error) {
	var c Command
	if err := json.Unmarshal(payload, &c); err != nil {
		return Command{}, fmt.Errorf("reconcile: decode %s payload: %w", name, err)
	}
	if c.RecordID == "" || c.FindingID == 0 {
		return Command{}, fmt.Errorf("reconcile: %s payload lacks record_id or finding_id", name)
	}
	c.Name = name
	return c, nil
}

// Resolutions a finding can be closed with. Hosts may use their own words too.
const (
	// ResolutionRepaired: a repair command applied the external state (or found it applied).
	ResolutionRepaired = "repaired"
	// ResolutionFixed: a person fixed the data.
	ResolutionFixed = "fixed"
	// ResolutionAccepted: the difference is known and accepted as it is.
	ResolutionAccepted = "accepted"
	// ResolutionFalsePositive: there was no real difference.
	ResolutionFalsePositive = "false_positive"
	// ResolutionRowDeleted: the local row no longer exists, so there is nothing left to repair
	// or review. Stores close such findings themselves when a cycle shows the row gone.
	ResolutionRowDeleted = "row_deleted"
	// ResolutionSuperseded: a later verified judgment of the record found a drift of another
	// kind, whose finding (Finding.SupersededBy) replaced this one. Stores close such findings
	// themselves (see Sink); a repair command of a superseded finding is not applied.
	ResolutionSuperseded = "superseded"
	// ResolutionCleared: a later verified judgment found the record in sync, the note saying
	// both sides' states. Stores close such findings themselves (see Sink).
	ResolutionCleared = "cleared"
)

// ResolvedByReconciler is the actor of resolutions the reconciler makes itself, such as
// ResolutionRowDeleted, ResolutionSuperseded and ResolutionCleared.
const ResolvedByReconciler = "reconciler"

// Resolution says how, by whom and why a finding was closed.
type Resolution struct {
	// As is the resolution, such as ResolutionFixed. Required.
	As string
	// By names the actor: a person's login, or "reconciler" for repairs. Required.
	By string
	// Note explains the decision; it is kept in the finding's history.
	Note string
}

// Validate reports a resolution that lacks its word or its actor.
func (r Resolution) Validate() error {
	switch {
	case r.As == "":
		return errors.New("reconcile: resolution: As is empty")
	case r.By == "":
		return errors.New("reconcile: resolution: By (the actor) is empty")
	}
	return nil
}
