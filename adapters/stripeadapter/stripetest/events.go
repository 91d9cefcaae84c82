package stripetest

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/stripe/stripe-go/v82"
)

// eventTypes maps a status change to the event Stripe sends for it; requires_confirmation has
// none.
var eventTypes = map[stripe.PaymentIntentStatus]string{
	stripe.PaymentIntentStatusSucceeded:             "payment_intent.succeeded",
	stripe.PaymentIntentStatusCanceled:              "payment_intent.canceled",
	stripe.PaymentIntentStatusProcessing:            "payment_intent.processing",
	stripe.PaymentIntentStatusRequiresAction:        "payment_intent.requires_action",
	stripe.PaymentIntentStatusRequiresCapture:       "payment_intent.amount_capturable_updated",
	stripe.PaymentIntentStatusRequiresPaymentMethod: "payment_intent.payment_failed",
}

// event is a stored event; it never changes once recorded. Its object is a snapshot of the
// object after the change, rendered only when the event is read, so that bulk loads stay
// cheap.
type event struct {
	id      string
	typ     string
	created int64
	seq     uint64
	account string
	object  snapshot
}

// snapshot is an object's state as an event recorded it: a piState, chState, reState or
// dpState value.
type snapshot interface {
	// appendJSON appends the object as Stripe renders it in an event, unexpanded.
	appendJSON(b []byte) []byte
}

func (e *event) sortKey() sortKey { return sortKey{e.created, e.seq} }

// addEvent records an event of the account about an object in the state snapshot; the
// caller holds s.mu.
func (s *Server) addEvent(typ string, created int64, account string, snapshot snapshot) {
	id := s.newID("evt_", func(id string) bool { return s.events[id] != nil })
	s.seq++
	e := &event{id: id, typ: typ, created: created, seq: s.seq, account: account, object: snapshot}
	s.events[id] = e
	indexOf(s.eventsBy, account).add(e)
}

// retrieveEvent serves GET /v1/events/{id}, appending the answer to b.
func (s *Server) retrieveEvent(b []byte, account, id string, q url.Values) ([]byte, *failure) {
	for param := range q {
		if !isArrayParam(param, "expand") {
			return b, unknownParameter(param)
		}
	}
	if _, f := parseExpand(q, kindEvent, false); f != nil {
		return b, f
	}
	s.mu.Lock()
	e, ok := s.events[id]
	s.mu.Unlock()
	// Events are immutable once recorded, so they can be read outside the lock.
	if !ok || e.account != account {
		return b, noSuch(http.StatusNotFound, "event", id, "id")
	}
	return appendEvent(b, e), nil
}

// listEvents serves GET /v1/events, appending the answer to b.
func (s *Server) listEvents(b []byte, account string, q url.Values) ([]byte, *failure) {
	lq, f := parseList(q, func(param string) bool {
		return param == "type" || param == "delivery_success" || isArrayParam(param, "types")
	})
	if f != nil {
		return b, f
	}
	match, f := typeFilter(q)
	if f != nil {
		return b, f
	}
	// An event's expandable fields are not modeled, so expand is only checked.
	if _, f := parseExpand(q, kindEvent, true); f != nil {
		return b, f
	}
	if v := q.Get("delivery_success"); q.Has("delivery_success") && v != "true" && v != "false" {
		return b, invalidRequest("delivery_success", "Invalid boolean: %s", v)
	}

	s.mu.Lock()
	x := s.eventsBy[account]
	if x == nil {
		x = &index[*event]{}
	}
	cursor := -1
	if param, id := lq.cursor(); id != "" {
		e, ok := s.events[id]
		if !ok || e.account != account {
			s.mu.Unlock()
			return b, noSuch(http.StatusBadRequest, "event", id, param)
		}
		x.sort()
		cursor = x.position(e)
	}
	page, hasMore := paginate(x, lq, cursor, match)
	s.mu.Unlock()
	// Events never change once recorded, so they are rendered outside the lock.
	return appendList(b, "/v1/events", page, hasMore, appendEvent), nil
}

// typeFilter builds the filter of the type parameter (one type, * matching any run of
// characters as in payment_intent.*) or the types parameter (up to 20 exact types). It returns
// nil when neither is given.
func typeFilter(q url.Values) (func(*event) bool, *failure) {
	var types []string
	for param, vs := range q {
		if isArrayParam(param, "types") {
			types = append(types, vs...)
		}
	}
	switch {
	case q.Has("type") && len(types) > 0:
		return nil, invalidRequest("types", "You may pass either `type` or `types`, but not both.")
	case len(types) > 20:
		return nil, invalidRequest("types", "You may pass at most 20 types.")
	case q.Has("type"):
		parts := strings.Split(q.Get("type"), "*")
		return func(e *event) bool { return wildcardMatch(parts, e.typ) }, nil
	case len(types) > 0:
		set := make(map[string]bool, len(types))
		for _, t := range types {
			set[t] = true
		}
		return func(e *event) bool { return set[e.typ] }, nil
	}
	return nil, nil
}

// wildcardMatch reports whether s matches a pattern in which * stands for any run of
// characters; parts is the pattern split at its stars, done once per request.
func wildcardMatch(parts []string, s string) bool {
	if len(parts) == 1 {
		return s == parts[0]
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}
