package stripepayouts

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/tieout"
)

// txnPage is one page of the balance transactions list.
type txnPage struct {
	Object  string                       `json:"object"`
	Data    []*stripe.BalanceTransaction `json:"data"`
	HasMore bool                         `json:"has_more"`
}

// Members returns the page of payout g's balance transactions after the transaction after
// ("" for the first), a hundred a call, each with its source expanded (the charge, refund,
// dispute or payout that moved the money) so that the presentment amount and the id the host
// books it under cost no call of their own, converted by Config.Options. A payout that cannot be
// itemized (a manual one) has no members and costs no call: Stripe refuses the payout filter on
// it, and the tie-out reports it as not itemizable. Lines Stripe lists without a balance
// transaction's id are passed on for the tie-out to report, never dropped: the sum must see
// every line.
func (l *Lister) Members(ctx context.Context, g tieout.Group, after string) (tieout.MemberPage, error) {
	switch {
	case !g.Itemized:
		return tieout.MemberPage{}, nil
	case g.Account != l.c.Account():
		return tieout.MemberPage{}, fmt.Errorf("stripepayouts: payout %s is of account %q, the lister reads %q",
			l.c.Redact(shorten(g.ID)), l.c.Redact(shorten(g.Account)), l.c.Account())
	case !stripeadapter.ValidPayoutID(g.ID):
		return tieout.MemberPage{}, fmt.Errorf("stripepayouts: %q is not a payout id (po_ and letters and digits): not sent",
			l.c.Redact(shorten(g.ID)))
	case after != "" && !validTxnID(after):
		return tieout.MemberPage{}, fmt.Errorf("stripepayouts: %q is not a balance transaction id: not sent", l.c.Redact(shorten(after)))
	}
	q := url.Values{"payout": {g.ID}, "limit": {strconv.Itoa(listLimit)}, "expand[]": {"data.source"}}
	if after != "" {
		q.Set("starting_after", after)
	}
	var p txnPage
	if err := l.call(ctx, "list balance transactions of "+g.ID, "/v1/balance_transactions", q, &p); err != nil {
		return tieout.MemberPage{}, err
	}
	if p.Object != "list" {
		return tieout.MemberPage{}, fmt.Errorf("stripepayouts: list balance transactions of %s: Stripe answered 200 with an object "+
			"that is not a list (a proxy or cache in between?): %w", g.ID, reconcile.ErrUnavailable)
	}
	page := tieout.MemberPage{More: p.HasMore && len(p.Data) > 0}
	for _, bt := range p.Data {
		if bt == nil {
			bt = &stripe.BalanceTransaction{}
		}
		page.Members = append(page.Members, l.redactMember(l.cfg.Options.PayoutMember(bt)))
	}
	if page.More {
		last := p.Data[len(p.Data)-1]
		if !validTxnID(last.ID) {
			// The next page starts after it: without its id there is no next page to ask for,
			// and a listing cut short would not sum.
			return tieout.MemberPage{}, fmt.Errorf("stripepayouts: list balance transactions of %s: the page's last line has no "+
				"balance transaction id to page from (a proxy or cache in between?): %w", g.ID, reconcile.ErrUnavailable)
		}
		page.Next = last.ID
	}
	return page, nil
}

// validTxnID reports whether id has the shape of a balance transaction id: "txn_" and letters
// and digits, at most 255 bytes.
func validTxnID(id string) bool { return validID("txn_", id) }

// validID reports whether id is prefix followed by letters and digits, at most 255 bytes.
func validID(prefix, id string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || rest == "" || len(id) > 255 {
		return false
	}
	for _, c := range rest {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
