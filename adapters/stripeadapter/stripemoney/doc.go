// Package stripemoney reads what a payment's money did at Stripe, as an extension of the
// object kit (package stripeadapter): on a gateway of PaymentIntents, the disputes and refunds
// of each payment's charge, and the events that touch them. What it reads,
// stripepolicy.Payment, is what stripepolicy.PaymentPolicy judges.
//
//	intents, err := stripeadapter.NewObjectGateway(cfg, stripeadapter.PaymentIntents())
//	if err != nil { ... }
//	payments, err := stripemoney.New(intents, stripemoney.Config{})
//	if err != nil { ... }
//	rec, err := reconcile.New(reconcile.Config[PaymentRow, *stripepolicy.Payment]{
//		Job: "payments", Source: store, Sink: store, Gateway: payments,
//		Classifier: stripepolicy.PaymentPolicy(view), Limiter: limiter,
//	})
//
// Its calls go through the intents gateway's stripeadapter.Client: the same key, account,
// timeout and error mapping. For a connected account, build it on intents.ForAccount(acct).
//
// # What a read costs
//
// A PaymentIntent's status does not change on a refund or a dispute: a payment refunded in
// the Dashboard, or whose dispute was lost, stays succeeded. The money is on its latest charge
// (amount_refunded, refunded, disputed), which the kit's gateway of PaymentIntents expands on
// every list (expand[]=data.latest_charge) and retrieve (expand[]=latest_charge) at no extra
// call, beside the intent's amount, amount_received and currency. [New] builds on that
// gateway a [Gateway] of stripepolicy.Payment, a reconcile.DatedBatchGateway: the intent with
// its charge, and what the charge cannot say itself, for stripepolicy.PaymentPolicy. What
// each read costs:
//
//	a batch of rows (bulk)   the intents' list calls, about one per hundred rows, plus one
//	                         GET /v1/disputes?payment_intent= per disputed charge whose
//	                         disputes are not all final; final outcomes (won, lost,
//	                         warning_closed, prevented) are kept for DisputeCacheTTL (24 h),
//	                         at most DisputeCacheSize charges, so a closed dispute costs one
//	                         call a day
//	                         (the events lane reads a disputed charge's disputes anew, and
//	                         refreshes what is kept: a chargeback may follow a closed inquiry)
//	one row (Fetch)          one retrieve, plus the same disputes call
//	refunds, in the sweep    nothing: the charge's amount_refunded and refunded say it
//	events lane              one call per hundred events, plus, per payment an event touches
//	                         (once a step): its retrieve, GET /v1/refunds?payment_intent= when
//	                         a refund event touched it, and the disputes call
//	reverse scan             one call per hundred intents, plus the disputes calls
//
// A disputes or refunds call that fails leaves its row Unverifiable (or, in a lane, for the
// next step), never judged without it; its 404 is not the intent's absence. In bulk, every
// call is paced by the engine; one by one, Fetch's disputes call rides on its retrieve.
//
// # Lanes
//
// For a lane, [Gateway.EventsFeed] reads payment_intent.*, charge.refunded,
// charge.refund.updated, refund.* and charge.dispute.* events ([EventTypes], 18 types in one
// list) and yields the current Payment of each intent they touch, read whole: an event
// says where to look, never what happened, so a dispute's outcome comes from dispute.status
// and a refund's from the Refund. Run every minute, a Dashboard refund, a failed refund or a
// dispute is a finding within two minutes. The sweep stays behind it: Stripe documents events
// that are never sent. [Gateway.ReverseFeed] is the intents' reverse scan, of Payments.
package stripemoney
