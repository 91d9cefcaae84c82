package stripetest

import (
	"net/http"
	"net/url"
)

// chargeObjects describes a kind of object that belongs to a charge, refunds and disputes, for
// the retrieve and list routes they share: GET /v1/<kind>s/{id}, and GET /v1/<kind>s filtered
// by payment_intent or charge.
type chargeObjects[T keyed] struct {
	object string // "refund": the expand kind, the 404's object and parameter
	path   string // "/v1/refunds"
	// byID, byAccount and ofCharge are where the server keeps them; account is an object's.
	byID      func(s *Server) map[string]T
	byAccount func(s *Server) map[string]*index[T]
	ofCharge  func(ch *charge) *index[T]
	account   func(v T) string
	render    func(b []byte, v T, x expander) []byte
}

var (
	refundObjects = chargeObjects[*refund]{object: kindRefund, path: "/v1/refunds",
		byID:      func(s *Server) map[string]*refund { return s.refunds },
		byAccount: func(s *Server) map[string]*index[*refund] { return s.refundsBy },
		ofCharge:  func(ch *charge) *index[*refund] { return &ch.refunds },
		account:   func(r *refund) string { return r.account },
		render:    func(b []byte, r *refund, x expander) []byte { return appendRefund(b, &r.reState, x) },
	}
	disputeObjects = chargeObjects[*dispute]{object: kindDispute, path: "/v1/disputes",
		byID:      func(s *Server) map[string]*dispute { return s.disputes },
		byAccount: func(s *Server) map[string]*index[*dispute] { return s.disputesBy },
		ofCharge:  func(ch *charge) *index[*dispute] { return &ch.disputes },
		account:   func(d *dispute) string { return d.account },
		render:    func(b []byte, d *dispute, x expander) []byte { return appendDispute(b, &d.dpState, x) },
	}
)

// retrieve serves GET <path>/{id}, appending the answer to b.
func (k chargeObjects[T]) retrieve(s *Server, b []byte, account, id string, q url.Values) ([]byte, *failure) {
	for param := range q {
		if !isArrayParam(param, "expand") {
			return b, unknownParameter(param)
		}
	}
	x, f := parseExpand(q, k.object, false)
	if f != nil {
		return b, f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := k.byID(s)[id]
	if !ok || k.account(v) != account {
		return b, noSuch(http.StatusNotFound, k.object, id, k.object)
	}
	return k.render(b, v, expander{s, x}), nil
}

// list serves GET <path>, newest first, filtered by payment_intent or charge, appending the
// answer to b.
func (k chargeObjects[T]) list(s *Server, b []byte, account string, q url.Values) ([]byte, *failure) {
	lq, f := parseList(q, isChargeFilter)
	if f != nil {
		return b, f
	}
	x, f := parseExpand(q, k.object, true)
	if f != nil {
		return b, f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, filtered := s.chargeFilter(account, q)
	var idx *index[T]
	switch {
	case !filtered:
		idx = k.byAccount(s)[account]
	case ch != nil:
		idx = k.ofCharge(ch)
	}
	page, hasMore, f := pageOf(idx, lq, k.object, func(id string) (T, bool) {
		v, ok := k.byID(s)[id]
		return v, ok && k.account(v) == account
	})
	if f != nil {
		return b, f
	}
	return appendList(b, k.path, page, hasMore, func(b []byte, v T) []byte {
		return k.render(b, v, expander{s, x})
	}), nil
}
