package stripepayouts

import "github.com/reconcilekit/reconcile/tieout"

// What the tie-out stores and shows of a payout or a line is Stripe's text, and a server or
// proxy may echo the key into any of it (an id's shape admits one): each string is redacted
// before the tie-out sees it.

// redactGroup returns g with the key redacted from its strings.
func (l *Lister) redactGroup(g tieout.Group) tieout.Group {
	g.ID, g.Status, g.Currency = l.c.Redact(g.ID), l.c.Redact(g.Status), l.c.Redact(g.Currency)
	return g
}

// redactMember returns m with the key redacted from its strings.
func (l *Lister) redactMember(m tieout.Member) tieout.Member {
	for _, s := range []*string{&m.ID, &m.Type, &m.Kind, &m.SourceID, &m.BookedID, &m.Currency, &m.SourceCurrency, &m.Status} {
		*s = l.c.Redact(*s)
	}
	return m
}
