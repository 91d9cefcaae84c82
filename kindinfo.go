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

// CoreKinds returns the meanings of the kinds the engine itself records, whatever the gateway
// and policy (KindMissingExternally, KindMissingLocally, KindInvalidExternalID, KindInvalidRow,
// KindRejected): a review console or a report shows them beside its policy's own.
func CoreKinds() []KindInfo {
	return []KindInfo{
		{Kind: KindMissingExternally, Meaning: "The external system has no object by the row's external id.", Money: false},
		{Kind: KindMissingLocally, Meaning: "The external system has an object that no row refers to (a local transaction that rolled back, say).", Money: false},
		{Kind: KindInvalidExternalID, Meaning: "The row's external id is empty or cannot be valid, so it could not be checked.", Money: false},
		{Kind: KindInvalidRow, Meaning: "The row could not be read or judged (a value its field cannot hold, say).", Money: false},
		{Kind: KindRejected, Meaning: "The external system refused to answer about the row (a bad request).", Money: false},
	}
}
