package reconcile

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Verdict is what the classifier concluded about one pair of local and external state.
type Verdict int

// The verdicts, from harmless to alarming. String gives their snake_case names, used in logs
// and metrics. The zero Verdict is invalid, so a forgotten field is caught, not read as InSync.
const (
	// InSync: both sides agree.
	InSync Verdict = iota + 1
	// InFlight: judge later. The row changed locally within the grace period (it is not even
	// sent to the gateway), or the external side is still transitioning while the local side
	// waits.
	InFlight
	// Repairable: the finding queues a repair command. Usually the local side catches up with
	// the external one; where the host owns the data, the command pushes the local value out.
	Repairable
	// NeedsReview: a person decides. Anything involving money already taken or goods already
	// shipped, and every combination nobody anticipated.
	NeedsReview
	// Unverifiable: the external system was asked and did not answer (timeout, 5xx). Never
	// counted as healthy: the row keeps its old last-verified time, so its lag grows. A 429 is
	// no verdict: the row is left to the next batch.
	Unverifiable
)

// Verdicts lists every verdict in order, for reports and metrics.
var Verdicts = []Verdict{InSync, InFlight, Repairable, NeedsReview, Unverifiable}

var verdictNames = [...]string{"", "in_sync", "in_flight", "repairable", "needs_review", "unverifiable"}

// String returns the verdict's snake_case name, as used in logs and metrics labels.
func (v Verdict) String() string {
	if v.valid() {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

func (v Verdict) valid() bool { return v >= InSync && v <= Unverifiable }

// Decision is a classifier's answer: the verdict, the kind of finding to record (NeedsReview and
// Repairable) and the repair command to queue (Repairable only).
type Decision struct {
	Verdict Verdict
	// Kind names the finding, such as "missed_success". Findings are deduplicated per
	// (job, record, kind).
	Kind string
	// Command names the repair command queued in the outbox, such as "ApplyPaymentSucceeded".
	Command string
	// Detail is free text stored with the finding for the person who reads it.
	Detail string
	// Diffs are the fields on which the two sides differ, stored with the finding: the first
	// MaxDiffs of them, each value cut to MaxDiffValue bytes. Only findings keep them.
	Diffs []Diff
}

// Diff is one field on which the two sides differ: its name and each side's value as a person
// reads it, such as "JPY 1,000" for an amount (see FormatAmount). Values are stored and shown,
// so they must hold what the field holds and nothing else: never a whole object or a secret.
// The classifier names the fields, and its doc lists them: stripeadapter's policies use
// Stripe's names (amount, amount_refunded, dispute_status, ...), which the console shows and
// a host may match on.
type Diff struct {
	Field    string `json:"field"`
	Local    string `json:"local"`
	External string `json:"external"`
}

// MaxDiffs and MaxDiffValue bound what a Decision's Diffs may hold.
const (
	MaxDiffs     = 16
	MaxDiffValue = 200
)

// MaxKind, MaxState, MaxDetail and MaxExternalID bound, in bytes, what findings and
// observations record of a decision's kind, of each side's state, of a decision's detail and
// of an external id. The engine cuts longer text (on a character boundary, marked with "…")
// before a commit, whatever the classifier or the external system made of it: a kind and an
// id are keys of the findings' indexes, which a 10 KB value would overflow, and a kind is a
// label in metrics.
const (
	MaxKind       = 200
	MaxState      = 200
	MaxDetail     = 2000
	MaxExternalID = 1000
)

// Validate reports whether the decision can be acted on: a known verdict, a kind for
// Repairable and NeedsReview, a command for Repairable and for nothing else, and a field name
// on every diff.
func (d Decision) Validate() error {
	switch {
	case !d.Verdict.valid():
		return fmt.Errorf("reconcile: invalid verdict %d", int(d.Verdict))
	case (d.Verdict == Repairable || d.Verdict == NeedsReview) && d.Kind == "":
		return fmt.Errorf("reconcile: %s decision without a finding kind", d.Verdict)
	case d.Verdict == Repairable && d.Command == "":
		return fmt.Errorf("reconcile: repairable decision %q without a repair command", d.Kind)
	case d.Verdict != Repairable && d.Command != "":
		return fmt.Errorf("reconcile: %s decision %q carries a repair command; only Repairable ones may", d.Verdict, d.Kind)
	}
	for i, df := range d.Diffs {
		if df.Field == "" {
			return fmt.Errorf("reconcile: decision %q: diff %d names no field", d.Kind, i)
		}
	}
	return nil
}

// storableDiffs returns diffs as a store can keep them: at most MaxDiffs, every value cut to
// MaxDiffValue bytes and storable (see storable). It copies only when something changes, so a
// classifier's shared Diffs are never modified.
func storableDiffs(diffs []Diff) []Diff {
	var out []Diff
	if len(diffs) > MaxDiffs {
		out = slices.Clone(diffs[:MaxDiffs])
	}
	for i, df := range diffs[:min(len(diffs), MaxDiffs)] {
		f, l, e := storable(df.Field, MaxDiffValue), storable(df.Local, MaxDiffValue), storable(df.External, MaxDiffValue)
		if f == df.Field && l == df.Local && e == df.External {
			continue
		}
		if out == nil {
			out = slices.Clone(diffs)
		}
		out[i] = Diff{Field: f, Local: l, External: e}
	}
	if out == nil {
		return diffs
	}
	return out
}

// kindText returns s as a finding kind holds it: storable, cut to max bytes, and printable
// (control and formatting characters, such as a newline or a right-to-left override, become
// U+FFFD, as invalid bytes do), so that a kind reads as it is on one line in a log, a terminal,
// a page or a metrics label.
func kindText(s string, max int) string {
	if strings.ContainsFunc(s, notPrintable) {
		s = strings.Map(func(r rune) rune {
			if notPrintable(r) {
				return utf8.RuneError
			}
			return r
		}, s)
	}
	return storable(s, max)
}

func notPrintable(r rune) bool { return !unicode.IsPrint(r) }

// storable returns s as PostgreSQL's text and jsonb can hold it: valid UTF-8 without NUL
// characters (either would fail the whole commit), cut to max bytes on a rune boundary with
// the cut marked (max 0: no limit).
func storable(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	if max == 0 || len(s) <= max {
		return s
	}
	n := max - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Classifier decides what a pair of local and external state means. It must be pure: no I/O,
// no clock, the same answer for the same pair. With Config.Concurrency above 1 it is called from
// several goroutines at once, as are Rule.When and the state-naming functions.
type Classifier[L, E any] interface {
	Classify(local L, external E) Decision
}

// ClassifierFunc adapts a function to the Classifier interface.
type ClassifierFunc[L, E any] func(local L, external E) Decision

// Classify calls f(local, external).
func (f ClassifierFunc[L, E]) Classify(local L, external E) Decision { return f(local, external) }

// Rule is one line of a RuleTable: when the local state is one of Local, the external state is
// one of External and When (if set) holds, the answer is Decision.
type Rule[L, E any] struct {
	// Local lists the local states the rule applies to; empty means any.
	Local []string
	// External lists the external states the rule applies to; empty means any.
	External []string
	// When, if set, is a further condition on the whole pair, for comparing amounts or
	// quantities as well as states.
	When func(local L, external E) bool
	// Decision is the answer when the rule matches. Its verdict, kind and command are fixed, so
	// that a table can say what it decides without a pair to judge (KindsRepairedBy).
	Decision Decision
	// Detail, if set, writes the decision's Detail from the pair when the rule matches: the
	// amounts, ids or dates a person needs to act on the finding.
	Detail func(local L, external E) string
}

// RuleTable is a declarative classifier: the first matching rule decides, and a pair no rule
// matches is NeedsReview with kind "unexpected:<local>-><external>". Build it with
// NewRuleTable, which checks every rule once; WithDiffs makes its findings list the fields
// that differ.
type RuleTable[L, E any] struct {
	localState    func(L) string
	externalState func(E) string
	rules         []Rule[L, E]
	diffs         func(L, E) []Diff
}

// NewRuleTable returns a classifier over the given rules. localState and externalState name
// the state of each side as the rules spell it.
func NewRuleTable[L, E any](localState func(L) string, externalState func(E) string, rules ...Rule[L, E]) (*RuleTable[L, E], error) {
	if localState == nil || externalState == nil {
		return nil, fmt.Errorf("reconcile: rule table needs functions naming the local and external state")
	}
	for i, r := range rules {
		if err := r.Decision.Validate(); err != nil {
			return nil, fmt.Errorf("reconcile: rule %d: %w", i, err)
		}
	}
	return &RuleTable[L, E]{localState: localState, externalState: externalState, rules: slices.Clone(rules)}, nil
}

// WithDiffs returns a copy of t whose findings (its Repairable and NeedsReview decisions, an
// unexpected pair's included) carry diffs(local, external) as their Diffs: every field on
// which the two sides differ, whichever rule decided, so that a person sees the whole drift
// and not only the line that named it. diffs is called only for a finding.
func (t *RuleTable[L, E]) WithDiffs(diffs func(local L, external E) []Diff) *RuleTable[L, E] {
	c := *t
	c.diffs = diffs
	return &c
}

// Classify returns the decision of the first matching rule, its Detail written by the rule's
// Detail and its Diffs by the table's (WithDiffs).
func (t *RuleTable[L, E]) Classify(local L, external E) Decision {
	ls, es := t.localState(local), t.externalState(external)
	d, matched := Decision{}, false
	for _, r := range t.rules {
		if (len(r.Local) == 0 || slices.Contains(r.Local, ls)) &&
			(len(r.External) == 0 || slices.Contains(r.External, es)) &&
			(r.When == nil || r.When(local, external)) {
			d, matched = r.Decision, true
			if r.Detail != nil {
				d.Detail = r.Detail(local, external)
			}
			break
		}
	}
	if !matched {
		d = Unexpected(ls, es)
	}
	if t.diffs != nil && (d.Verdict == Repairable || d.Verdict == NeedsReview) {
		d.Diffs = t.diffs(local, external)
	}
	return d
}

// KindsRepairedBy returns the kinds of the findings whose repair is command, in the order of
// the rules that decide them, each once: the findings a canonical writer carrying out command
// repairs, and so the kinds it resolves (pgstore's ResolveRecordFindings) when it has written.
// Resolving every kind of the record instead would close the findings meant for a person. A
// command no rule queues repairs nothing.
func (t *RuleTable[L, E]) KindsRepairedBy(command string) []string {
	var kinds []string
	for _, r := range t.rules {
		if r.Decision.Command == command && command != "" && !slices.Contains(kinds, r.Decision.Kind) {
			kinds = append(kinds, r.Decision.Kind)
		}
	}
	return kinds
}

// Unexpected is the decision for a combination nobody anticipated: NeedsReview with kind
// "unexpected:<local>-><external>".
//
// Both states stay in the kind rather than in the detail of one kind "unexpected": a reviewer
// reads the pair at a glance in the console's list and in metrics by kind; findings are
// deduplicated per (job, record, kind), so a record whose pair changes gets a finding for the
// new pair instead of one that describes the old; and a pair keeps the kind earlier releases
// gave it, so their open findings are still found. The states come from outside (the external
// system's answer, a host's row), so each is written as a kind may hold it: NUL, other control
// and formatting characters, and bytes that are not UTF-8 become U+FFFD, and a state longer
// than 93 bytes is cut, marked with "…". The kind is therefore printable text of at most
// MaxKind bytes whatever the answer, and a hostile answer ("succeeded\x00", 10 KB of noise) is
// one finding about its row like any other, both states recorded with it (to MaxState bytes).
// Distinct hostile answers make distinct kinds: an exporter of findings by kind bounds its own
// label set.
func Unexpected(local, external string) Decision {
	return Decision{Verdict: NeedsReview, Kind: "unexpected:" + kindText(local, maxKindState) + "->" + kindText(external, maxKindState)}
}

// maxKindState bounds each state in an Unexpected kind, so that the kind fits MaxKind.
const maxKindState = (MaxKind - len("unexpected:->")) / 2

// StateNamer is an optional ability of a Classifier: naming each side's state as its rules
// spell it. New takes Config.LocalState and Config.ExternalState from it when they are nil, so
// that what findings and observations record is the state the rules judged. RuleTable has it.
type StateNamer[L, E any] interface {
	LocalState(L) string
	ExternalState(E) string
}

// LocalState names the local state as the rules spell it.
func (t *RuleTable[L, E]) LocalState(local L) string { return t.localState(local) }

// ExternalState names the external state as the rules spell it.
func (t *RuleTable[L, E]) ExternalState(external E) string { return t.externalState(external) }
