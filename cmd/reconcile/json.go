package main

import (
	"encoding/json"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/pgoutbox"
)

// The JSON forms of findings and dead commands, in the style of the health types' own JSON
// (snake_case names, times in RFC 3339 UTC, unset times and empty texts left out), so that a
// script reads every command's output alike.

type findingJSON struct {
	ID             int64            `json:"id"`
	Job            string           `json:"job"`
	RecordID       string           `json:"record_id"`
	ExternalID     string           `json:"external_id,omitempty"`
	Kind           string           `json:"kind"`
	Open           bool             `json:"open"`
	Local          string           `json:"local,omitempty"`
	External       string           `json:"external,omitempty"`
	Detail         string           `json:"detail,omitempty"`
	Diffs          []reconcile.Diff `json:"diffs,omitempty"`
	Command        string           `json:"command,omitempty"`
	DetectedAt     *time.Time       `json:"detected_at,omitempty"`
	ResolvedAt     *time.Time       `json:"resolved_at,omitempty"`
	Resolution     string           `json:"resolution,omitempty"`
	ResolvedBy     string           `json:"resolved_by,omitempty"`
	ResolutionNote string           `json:"resolution_note,omitempty"`
	// History is set for one finding (findings show).
	History []findingEventJSON `json:"history,omitempty"`
}

type findingEventJSON struct {
	At         *time.Time `json:"at,omitempty"`
	Action     string     `json:"action"`
	Actor      string     `json:"actor,omitempty"`
	Resolution string     `json:"resolution,omitempty"`
	Note       string     `json:"note,omitempty"`
	Error      string     `json:"error,omitempty"`
	Failures   int        `json:"failures,omitempty"`
}

type deadCommandJSON struct {
	ID            int64      `json:"id"`
	Name          string     `json:"name"`
	AggregateType string     `json:"aggregate_type"`
	AggregateID   string     `json:"aggregate_id"`
	FindingID     int64      `json:"finding_id,omitempty"`
	Failures      int        `json:"failures"`
	LastError     string     `json:"last_error,omitempty"`
	DeadAt        *time.Time `json:"dead_at,omitempty"`
	// Errors is the command's error history as the outbox keeps it: each attempt's error and
	// time.
	Errors json.RawMessage `json:"errors,omitempty"`
}

// utc is t in UTC, or nil for the zero time (left out).
func utc(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func findingOut(f reconcile.Finding) findingJSON {
	return findingJSON{ID: f.ID, Job: f.Job, RecordID: f.RecordID, ExternalID: f.ExternalID, Kind: f.Kind, Open: f.Open(),
		Local: f.Local, External: f.External, Detail: f.Detail, Diffs: f.Diffs, Command: f.Command,
		DetectedAt: utc(f.DetectedAt), ResolvedAt: utc(f.ResolvedAt), Resolution: f.Resolution, ResolvedBy: f.ResolvedBy,
		ResolutionNote: f.ResolutionNote}
}

func findingsOut(fs []reconcile.Finding) []findingJSON {
	out := make([]findingJSON, len(fs)) // [] rather than null for none
	for i, f := range fs {
		out[i] = findingOut(f)
	}
	return out
}

func findingDetailOut(d reconcile.FindingDetail) findingJSON {
	out := findingOut(d.Finding)
	for _, e := range d.History {
		out.History = append(out.History, findingEventJSON{At: utc(e.At), Action: e.Action, Actor: e.Actor,
			Resolution: e.Resolution, Note: e.Note, Error: e.Error, Failures: e.Failures})
	}
	return out
}

func deadCommandsOut(cmds []pgoutbox.DeadCommand) []deadCommandJSON {
	out := make([]deadCommandJSON, len(cmds))
	for i, c := range cmds {
		out[i] = deadCommandJSON{ID: c.ID, Name: c.Name, AggregateType: c.AggregateType, AggregateID: c.AggregateID,
			FindingID: c.FindingID, Failures: c.Failures, LastError: c.LastError, DeadAt: utc(c.DeadAt)}
		if json.Valid(c.Errors) {
			out[i].Errors = c.Errors
		}
	}
	return out
}
