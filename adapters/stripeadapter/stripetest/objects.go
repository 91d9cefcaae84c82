package stripetest

import (
	"errors"
	"net/http"
	"net/url"
	"time"
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

// adding is what the Add methods of a kind differ in: how a fixture becomes a stored object,
// its id's shape and the event it records. addObjects does the rest.
type adding[In any, S snapshot, T keyed] struct {
	kind    objectKind[T]
	name    string                        // "invoice": for the duplicate-id panic
	objects func(s *Server) *map[string]T // the kind's map, grown to fit a batch
	// idPrefix and idLen shape a generated id: the prefix, then idLen alphanumerics.
	idPrefix string
	idLen    int
	// event is recorded at the object's created time; "" records none.
	event   string
	created func(v In) time.Time // the fixture's created time; zero means Options.Now
	// build makes a fixture's state, created at created, with the fixture's id or "", and
	// panics, as a broken fixture should, if the fixture is invalid. The caller holds s.mu.
	build func(s *Server, v In, created int64) S
	id    func(st *S) *string
	store func(st S, seq uint64) T
	// stored, if not nil, links an object just stored to others. The caller holds s.mu.
	stored func(s *Server, v T)
}

// addObjects stores fixtures of a kind under the lock and returns their ids in order. A
// fixture without an id gets a generated one; one whose id is used panics.
func addObjects[In any, S snapshot, T keyed](s *Server, fixtures []In, a adding[In, S, T]) []string {
	now := s.now().Unix()
	ids := make([]string, len(fixtures))
	s.mu.Lock()
	defer s.mu.Unlock()
	objects := a.objects(s)
	if len(fixtures) > len(*objects) {
		*objects = grown(*objects, len(fixtures))
	}
	if a.event != "" && len(fixtures) > len(s.events) {
		s.events = grown(s.events, len(fixtures))
	}
	for i, v := range fixtures {
		created := now
		if t := a.created(v); !t.IsZero() {
			created = t.Unix()
		}
		st := a.build(s, v, created)
		id := a.id(&st)
		if *id == "" {
			for {
				*id = randomID(a.idPrefix, a.idLen)
				if _, used := (*objects)[*id]; !used {
					break
				}
			}
		} else if _, dup := (*objects)[*id]; dup {
			panic("stripetest: duplicate " + a.name + " id " + *id)
		}
		s.seq++
		obj := a.store(st, s.seq)
		(*objects)[*id] = obj
		account := a.kind.account(obj)
		indexOf(a.kind.byAccount(s), account).add(obj)
		s.knowAccount(account)
		if a.stored != nil {
			a.stored(s, obj)
		}
		if a.event != "" {
			s.addEvent(a.event, created, account, st)
		}
		ids[i] = *id
	}
	return ids
}

// changeObject applies change to the kind's object with the id under the lock and records the
// events it names at the time at, each with the snapshot after the change; name is the kind's
// for the error of an unknown id.
func changeObject[T keyed](s *Server, k objectKind[T], name, id string, at int64, snap func(T) snapshot, change func(T) ([]string, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := k.byID(s)[id]
	if !ok {
		return errors.New("stripetest: no such " + name + ": " + id)
	}
	events, err := change(v)
	if err != nil {
		return err
	}
	for _, typ := range events {
		s.addEvent(typ, at, k.account(v), snap(v))
	}
	return nil
}
