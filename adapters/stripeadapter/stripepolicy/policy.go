package stripepolicy

import (
	"strings"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/internal/shared/redact"
)

// Policy is one of the package's policies: it judges a host's row of type L, seen through the
// view the policy was built with, against a Stripe object of type E. Each is a
// reconcile.RuleTable over the view's type (the first rule that matches decides, and every
// finding's Diffs list the fields that differ), so that a Policy can say what it decides
// without a pair to judge: KindsRepairedBy.
//
// It is a reconcile.Classifier and a reconcile.StateNamer, pure (no network, no clock) and safe
// for concurrent use, as its view must be too.
type Policy[L, E any] struct {
	classify      func(L, E) reconcile.Decision
	localState    func(L) string
	externalState func(E) string
	repairedBy    func(command string) []string
}

var (
	_ reconcile.Classifier[string, *Payment] = (*Policy[string, *Payment])(nil)
	_ reconcile.StateNamer[string, *Payment] = (*Policy[string, *Payment])(nil)
)

// Classify judges the row against the object. An object that is no answer (nil, or a Payment
// without its intent) is NeedsReview unexpected:<local>->, without diffs: there is nothing to
// compare.
func (p *Policy[L, E]) Classify(local L, external E) reconcile.Decision {
	return p.classify(local, external)
}

// LocalState names the row's state as findings and observations record it.
func (p *Policy[L, E]) LocalState(local L) string { return p.localState(local) }

// ExternalState names the object's state as findings and observations record it, anything
// that looks like an API key redacted; "" for an object that is no answer.
func (p *Policy[L, E]) ExternalState(external E) string { return p.externalState(external) }

// KindsRepairedBy returns the kinds of the policy's findings whose repair is command, each once:
// what the canonical writer carrying out command repairs, and so the kinds it resolves when it
// has written (pgstore.Store.ResolveRecordFindings). Resolving every kind of the record
// instead would close the findings meant for a person. See reconcile.RuleTable.KindsRepairedBy.
func (p *Policy[L, E]) KindsRepairedBy(command string) []string { return p.repairedBy(command) }

// viewed returns the Policy that judges a row through view as table judges the view's V;
// answers tells an object that can be judged from one that is no answer.
func viewed[L, V, E any](view func(L) V, table *reconcile.RuleTable[V, E], answers func(E) bool) *Policy[L, E] {
	return &Policy[L, E]{
		classify: func(local L, external E) reconcile.Decision {
			v := view(local)
			if !answers(external) {
				return reconcile.Unexpected(table.LocalState(v), table.ExternalState(external))
			}
			return table.Classify(v, external)
		},
		localState:    func(local L) string { return table.LocalState(view(local)) },
		externalState: table.ExternalState,
		repairedBy:    table.KindsRepairedBy,
	}
}

// mustTable builds a policy's table; its rules are constant, and every policy's tests run them.
func mustTable[V, E any](local func(V) string, external func(E) string, diffs func(V, E) []reconcile.Diff,
	rules ...reconcile.Rule[V, E]) *reconcile.RuleTable[V, E] {
	t, err := reconcile.NewRuleTable(local, external, rules...)
	if err != nil {
		panic(err)
	}
	if diffs != nil {
		t = t.WithDiffs(diffs)
	}
	return t
}

// Decisions the rules share.
var (
	inSync   = reconcile.Decision{Verdict: reconcile.InSync}
	inFlight = reconcile.Decision{Verdict: reconcile.InFlight}
)

// review and repair are a rule's finding: NeedsReview of kind, or Repairable of kind queueing
// command.
func review(kind string) reconcile.Decision {
	return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: kind}
}

func repair(kind, command string) reconcile.Decision {
	return reconcile.Decision{Verdict: reconcile.Repairable, Kind: kind, Command: command}
}

// diffList collects a decision's Diffs.
type diffList []reconcile.Diff

func (l *diffList) add(field, local, external string) {
	*l = append(*l, reconcile.Diff{Field: field, Local: local, External: external})
}

// formatTime writes a time for a person, in RFC 3339 and UTC; "none" for the zero time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339)
}

// redactKeys removes anything that looks like a Stripe API key from s: text from Stripe's
// side is stored and shown, and a proxy may echo the request's Authorization header into it.
func redactKeys(s string) string { return redact.Keys(s) }

// upper writes a currency code as ISO does, "none" when empty.
func upper(code string) string { return orNone(strings.ToUpper(redactKeys(code))) }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
