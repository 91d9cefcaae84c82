package reconcile

// KindInfo says what a finding kind means, for the people who review findings: a policy
// publishes one per kind it records (the Stripe policies' stripepolicy.Kinds()), and a review
// console shows Meaning beside the kind and asks for a note before a finding of a Money kind
// is resolved.
type KindInfo struct {
	// Kind is the finding kind, as Decision.Kind names it.
	Kind string
	// Meaning is one line for reviewers: what differs, and which side is ahead.
	Meaning string
	// Money is whether the drift involves money: charged, refunded, disputed, owed or billed
	// for, or goods and access given without it. Resolving such a finding by hand accepts a
	// difference in money, so it needs a note saying why.
	Money bool
}
