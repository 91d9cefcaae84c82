package stripetest

import (
	"net/http"
	"net/url"
)

// objectKind describes a kind of object for the retrieve and list routes every kind shares:
// GET <path>/{id}, and GET <path> newest first, filtered by the kind's own parameters.
type objectKind[T keyed] struct {
	object string // "refund": the expand kind, the 404's object and parameter
	path   string // "/v1/refunds"
	// param is the 404's parameter for an unknown id; empty means object.
	param string
	// byID and byAccount are where the server keeps them; account is an object's.
	byID      func(s *Server) map[string]T
	byAccount func(s *Server) map[string]*index[T]
	account   func(v T) string
	render    func(b []byte, v T, x expander) []byte
	// own reports the list's own parameters, besides the common ones.
	own func(param string) bool
	// selection picks the index a list reads and the filter of its items (nil: all), from
	// the list's own parameters; a nil index is an empty list. Nil means the account's index,
	// unfiltered. The caller holds s.mu.
	selection func(s *Server, account string, q url.Values) (*index[T], func(T) bool, *failure)
}

var (
	refundObjects = objectKind[*refund]{object: kindRefund, path: "/v1/refunds",
		byID:      func(s *Server) map[string]*refund { return s.refunds },
		byAccount: func(s *Server) map[string]*index[*refund] { return s.refundsBy },
		account:   func(r *refund) string { return r.account },
		render:    func(b []byte, r *refund, x expander) []byte { return appendRefund(b, &r.reState, x) },
		own:       isChargeFilter,
		selection: func(s *Server, account string, q url.Values) (*index[*refund], func(*refund) bool, *failure) {
			return chargeSelection(s, account, q, s.refundsBy, func(ch *charge) *index[*refund] { return &ch.refunds })
		},
	}
	disputeObjects = objectKind[*dispute]{object: kindDispute, path: "/v1/disputes",
		byID:      func(s *Server) map[string]*dispute { return s.disputes },
		byAccount: func(s *Server) map[string]*index[*dispute] { return s.disputesBy },
		account:   func(d *dispute) string { return d.account },
		render:    func(b []byte, d *dispute, x expander) []byte { return appendDispute(b, &d.dpState, x) },
		own:       isChargeFilter,
		selection: func(s *Server, account string, q url.Values) (*index[*dispute], func(*dispute) bool, *failure) {
			return chargeSelection(s, account, q, s.disputesBy, func(ch *charge) *index[*dispute] { return &ch.disputes })
		},
	}
)

// chargeSelection is the selection of the lists of a charge's objects, refunds and disputes:
// filtered by payment_intent or charge, they read the one charge's index.
func chargeSelection[T keyed](s *Server, account string, q url.Values, byAccount map[string]*index[T], ofCharge func(*charge) *index[T]) (*index[T], func(T) bool, *failure) {
	ch, filtered := s.chargeFilter(account, q)
	switch {
	case !filtered:
		return byAccount[account], nil, nil
	case ch != nil:
		return ofCharge(ch), nil, nil
	}
	return nil, nil, nil
}

// retrieve serves GET <path>/{id}, appending the answer to b.
func (k objectKind[T]) retrieve(s *Server, b []byte, account, id string, q url.Values) ([]byte, *failure) {
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
		param := k.param
		if param == "" {
			param = k.object
		}
		return b, noSuch(http.StatusNotFound, k.object, id, param)
	}
	return k.render(b, v, expander{s, x}), nil
}

// list serves GET <path>, newest first, filtered by the kind's parameters, appending the
// answer to b.
func (k objectKind[T]) list(s *Server, b []byte, account string, q url.Values) ([]byte, *failure) {
	lq, f := parseList(q, k.own)
	if f != nil {
		return b, f
	}
	x, f := parseExpand(q, k.object, true)
	if f != nil {
		return b, f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := k.byAccount(s)[account]
	var match func(T) bool // nil: every item of idx
	if k.selection != nil {
		if idx, match, f = k.selection(s, account, q); f != nil {
			return b, f
		}
	}
	page, hasMore, f := pageOf(idx, lq, k.object, func(id string) (T, bool) {
		v, ok := k.byID(s)[id]
		return v, ok && k.account(v) == account
	}, match)
	if f != nil {
		return b, f
	}
	return appendList(b, k.path, page, hasMore, func(b []byte, v T) []byte {
		return k.render(b, v, expander{s, x})
	}), nil
}
