package stripeadapter

import (
	"time"

	"github.com/reconcilekit/reconcile"
)

// The object policies (money, subscription, invoice, checkout) share one shape: facts read
// once from both sides, an ordered list of rules over them where the first match decides, and
// Diffs listing every field that differs on every finding, whichever rule decided.

// rule is one line of a policy over facts F.
type rule[F any] struct {
	when   func(*F) bool
	decide func(*F) reconcile.Decision
}

// firstRule applies rules in order: the first that matches decides, and a finding it makes
// (Repairable or NeedsReview) carries diffs(f). No rule matching is InSync.
func firstRule[F any](rules []rule[F], f *F, diffs func(*F) []reconcile.Diff) reconcile.Decision {
	for _, r := range rules {
		if r.when(f) {
			d := r.decide(f)
			if d.Verdict == reconcile.Repairable || d.Verdict == reconcile.NeedsReview {
				d.Diffs = diffs(f)
			}
			return d
		}
	}
	return inSync
}

// review returns a rule's NeedsReview decision of kind, its detail written by detail.
func review[F any](kind string, detail func(*F) string) func(*F) reconcile.Decision {
	return func(f *F) reconcile.Decision {
		return reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: kind, Detail: detail(f)}
	}
}

// repair returns a rule's Repairable decision of kind, queueing command.
func repair[F any](kind, command string, detail func(*F) string) func(*F) reconcile.Decision {
	return func(f *F) reconcile.Decision {
		return reconcile.Decision{Verdict: reconcile.Repairable, Kind: kind, Command: command, Detail: detail(f)}
	}
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
