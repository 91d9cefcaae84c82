// Package stripeadapter connects the reconciler to Stripe PaymentIntents.
//
// # Classifier
//
// PaymentIntentClassifier is the payment policy as a pure function of a local payment status
// and a PaymentIntent status: Stripe is the truth for a payment's outcome, so a pending payment
// whose intent succeeded or was canceled is repaired automatically, and anything where money may
// already have moved (a payment paid locally but not at Stripe) goes to a person.
//
// The package is named stripeadapter so that it does not shadow stripe-go's stripe package.
package stripeadapter
