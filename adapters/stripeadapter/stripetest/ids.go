package stripetest

import "math/rand/v2"

const alphanumeric = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomID returns prefix followed by n random alphanumeric characters, the shape of Stripe's
// ids. It is not cryptographic: ids only need to be unique, and callers check that. Each
// random word yields 10 characters (62^10 < 2^64), so bulk loads of 200k objects stay cheap.
func randomID(prefix string, n int) string {
	var buf [32]byte // on the stack for Stripe's id lengths: one allocation per id
	b := append(buf[:0], prefix...)
	var word uint64
	for i := range n {
		if i%10 == 0 {
			word = rand.Uint64()
		}
		b = append(b, alphanumeric[word%62])
		word /= 62
	}
	return string(b)
}

// newRequestID returns an id shaped like Stripe's Request-Id header, req_ and 14 characters.
func newRequestID() string { return randomID("req_", 14) }
