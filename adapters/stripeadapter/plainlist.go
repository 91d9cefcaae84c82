package stripeadapter

// A list page decoded in one pass. stripe-go gives each object that can be expanded an
// UnmarshalJSON that accepts an id alone: encoding/json scans the object's bytes to find its
// end, the method copies them into a string to look for an id, validates them again, decodes
// them into a copy of the type and copies that struct, and again for an expanded object inside
// (an intent's charge). A list page never holds an id alone, so the ship-ready descriptors
// decode their pages into types defined as the objects' own (type paymentIntentFields
// stripe.PaymentIntent), which have their fields and none of their methods, and so does an
// intent's expanded latest_charge: half the CPU of a page of intents with their charges, and a
// third of the garbage (BenchmarkListPage). stripe-go's own wrapper of every answer still scans
// the page before it reaches us; other expanded fields still decode through its methods.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/stripe/stripe-go/v82"
)

// listDecoder returns a fresh page for a list call with the object's Expand paths to decode its
// answer into.
type listDecoder[T any] func(expand []string) plainPage[T]

// plainPage is a list call's answer decoded without the objects' UnmarshalJSON.
type plainPage[T any] interface {
	stripe.LastResponseSetter
	// page is the answer as a listPageOf[T].
	page() listPageOf[T]
	// response is the answer stripe-go noted, nil if none.
	response() *stripe.APIResponse
}

// plainList is the listDecoder of objects *S decoded as P, a type defined as S: conv is the
// conversion (*S)(p), which Go cannot write for type parameters.
func plainList[P, S any](conv func(*P) *S) listDecoder[*S] {
	return func([]string) plainPage[*S] { return &plainPageOf[P, S]{conv: conv} }
}

// plainPageOf is a page of objects *S decoded as P (see plainList).
type plainPageOf[P, S any] struct {
	stripe.APIResource
	stripe.ListMeta
	Object string `json:"object"`
	Data   []*P   `json:"data"`
	conv   func(*P) *S
}

func (p *plainPageOf[P, S]) response() *stripe.APIResponse { return p.LastResponse }

func (p *plainPageOf[P, S]) page() listPageOf[*S] {
	page := listPageOf[*S]{ListMeta: p.ListMeta, Object: p.Object}
	if p.Data != nil { // no data stays nil, as encoding/json leaves it
		page.Data = make([]*S, len(p.Data))
	}
	for i, v := range p.Data {
		if v != nil { // a null stays a nil T, as encoding/json leaves it
			page.Data[i] = p.conv(v)
		}
	}
	return page
}

// listInto makes a list call with the Expand paths expand through call, decoded with decode,
// or as listPageOf[T] when decode is nil.
func listInto[T any](ctx context.Context, decode listDecoder[T], expand []string, call func(stripe.LastResponseSetter) error) (listPageOf[T], error) {
	var page listPageOf[T]
	if decode == nil {
		err := call(&page)
		return page, err
	}
	plain := decode(expand)
	err := call(plain)
	r := plain.response()
	switch {
	case err == nil && (r == nil || !decodedTwice(r.RawJSON)):
		return plain.page(), nil
	case err == nil:
		// A member the one pass decoded twice: decoded as before, so that it answers as before.
		if err := json.Unmarshal(r.RawJSON, &page); err != nil {
			return listPageOf[T]{}, err
		}
		return page, nil
	}
	// A whole answer that is not a page of objects, an id alone among them (which stripe-go's
	// own method takes): decoded as before, so that it answers as before.
	if r != nil && r.StatusCode == http.StatusOK && ctx.Err() == nil && json.Unmarshal(r.RawJSON, &page) == nil {
		return page, nil
	}
	return listPageOf[T]{}, err
}

// decodedTwice reports whether page, valid JSON, has a member that encoding/json decodes twice
// into the same object where the one pass and stripe-go's methods part: "data" in the page, or
// "latest_charge" in an object two levels below it, where its data's objects are. encoding/json
// decodes the second into what the first left, merging the two; stripe-go's methods start each
// object afresh, so the last wins whole. Stripe never repeats a key: a page that does falls
// back. A key is matched as encoding/json matches it, without regard to case; an escaped one
// at those depths counts as a match.
func decodedTwice(page []byte) bool {
	inObject := make([]bool, 0, 32) // per open container, whether it is an object
	var seen [4]int                 // matching keys in the open object at depths 1 and 3
	key := false                    // whether the next string is a key
	for i := 0; i < len(page); i++ {
		switch page[i] {
		case '"':
			end := stringEnd(page, i+1)
			if end < 0 {
				return true // not JSON after all: let stripe-go's decode say so
			}
			if d := len(inObject); key && (d == 1 || d == 3) {
				name, want := page[i+1:end], "data"
				if d == 3 {
					want = "latest_charge"
				}
				if bytes.IndexByte(name, '\\') >= 0 || bytes.EqualFold(name, []byte(want)) {
					if seen[d]++; seen[d] > 1 {
						return true
					}
				}
			}
			key, i = false, end
		case '{':
			inObject = append(inObject, true)
			if d := len(inObject); d < len(seen) {
				seen[d] = 0
			}
			key = true
		case '[':
			inObject = append(inObject, false)
			key = false
		case '}', ']':
			if len(inObject) > 0 {
				inObject = inObject[:len(inObject)-1]
			}
			key = false
		case ',':
			key = len(inObject) > 0 && inObject[len(inObject)-1]
		}
	}
	return false
}

// stringEnd returns the index of the quote that closes the JSON string starting at from, or -1.
func stringEnd(b []byte, from int) int {
	for i := from; ; {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1
		}
		i += q
		escapes := 0
		for j := i - 1; j >= from && b[j] == '\\'; j-- {
			escapes++
		}
		if escapes%2 == 0 {
			return i
		}
		i++
	}
}

// The types the ship-ready descriptors decode their pages into: the objects' fields without
// stripe-go's UnmarshalJSON.
type (
	paymentIntentFields   stripe.PaymentIntent
	chargeFields          stripe.Charge
	subscriptionFields    stripe.Subscription
	invoiceFields         stripe.Invoice
	checkoutSessionFields stripe.CheckoutSession
	accountFields         stripe.Account
)

// chargedIntent is an intent with its latest_charge expanded: the outer field hides the
// intent's own (encoding/json takes the shallower), so the charge decodes as chargeFields.
type chargedIntent struct {
	paymentIntentFields
	LatestCharge *chargeFields `json:"latest_charge"`
}

// paymentIntentList is PaymentIntents' listDecoder: with latest_charge expanded, as chargedIntent.
func paymentIntentList(expand []string) plainPage[*stripe.PaymentIntent] {
	if slices.Contains(expand, "latest_charge") {
		return chargedIntentList(expand)
	}
	return plainIntentList(expand)
}

var (
	plainIntentList   = plainList(func(p *paymentIntentFields) *stripe.PaymentIntent { return (*stripe.PaymentIntent)(p) })
	chargedIntentList = plainList(func(p *chargedIntent) *stripe.PaymentIntent {
		pi := (*stripe.PaymentIntent)(&p.paymentIntentFields)
		pi.LatestCharge = (*stripe.Charge)(p.LatestCharge)
		return pi
	})
	subscriptionList = plainList(func(p *subscriptionFields) *stripe.Subscription { return (*stripe.Subscription)(p) })
	invoiceList      = plainList(func(p *invoiceFields) *stripe.Invoice { return (*stripe.Invoice)(p) })
	checkoutList     = plainList(func(p *checkoutSessionFields) *stripe.CheckoutSession { return (*stripe.CheckoutSession)(p) })
	accountList      = plainList(func(p *accountFields) *stripe.Account { return (*stripe.Account)(p) })
)
