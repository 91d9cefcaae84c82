// Package stripepolicy holds the Stripe policies: pure functions of a host's row and a Stripe
// object that say whether the two agree, and if not, whether the row catches up through a
// repair command or a person decides. They make no call and read no clock; package
// stripeadapter reads the objects they judge, and package stripemoney the Payments.
//
// Each policy is a [Policy], built on the core's reconcile.RuleTable: the first rule that
// matches decides, every finding's Diffs list every field that differs whichever rule decided,
// and a pair no rule covers is NeedsReview unexpected:<ours>-><theirs>. A policy judges a
// host's own row type through a view the host gives it (a function to LocalPayment,
// LocalSubscription, LocalInvoice or LocalCheckout), and names both sides' states in findings
// (reconcile.StateNamer). Stripe holds what was billed, collected and paid, so the row
// catches up through a repair command, whose canonical writer (the one the webhook handler
// calls) re-reads Stripe, wherever writing Stripe's side records what already happened or
// takes back what nobody paid for. Where our side did something Stripe never saw and would
// undo it (a cancellation, a payment, a void we record alone), a person decides. What needs a
// person is decided before every repair, since a repair writes all of Stripe's side and would
// erase what the person must see.
//
// # Kinds and repairs
//
// [Kinds] says what every finding kind of the policies means, and whether it involves money,
// for the review console (console.Config.Kinds) and the metrics (prommetrics.Options.Kinds).
// [Policy.KindsRepairedBy] says which kinds a repair command repairs: a canonical writer that
// has carried out the command resolves those (pgstore's ResolveRecordFindings), and only
// those, so that the findings meant for a person stay open:
//
//	policy := stripepolicy.SubscriptionPolicy(view)
//	repaired := policy.KindsRepairedBy(stripepolicy.CommandApplySubscriptionStatus)
//	_, err := store.ResolveRecordFindings(ctx, tx, id, repaired, resolution)
//
// # The status policy
//
// PaymentIntentPolicy is the status policy as a pure function of a local payment status
// and a PaymentIntent: Stripe is the truth for a payment's outcome, so a pending payment whose
// intent succeeded or was canceled is repaired automatically, and anything where money may
// already have moved (a payment paid locally but not at Stripe, money taken or held for a
// payment failed locally) goes to a person. A payment failed locally whose intent took no money
// (a declined card back in requires_payment_method, an abandoned checkout) is in sync; its
// godoc has the table of every pair.
//
// # The money policy
//
// [PaymentPolicy] judges a payments row, seen as a [LocalPayment] (status, amount and currency
// in minor units, the amount captured if not the whole, the amount refunded, the dispute's
// status), against a Payment. With a host row type of its own (pgstore.NewOf scans one from
// the table):
//
//	rec, err := reconcile.New(reconcile.Config[PaymentRow, *stripepolicy.Payment]{
//		Job: "payments", Source: store, Sink: store, Gateway: payments, // a stripemoney.Gateway
//		Classifier: stripepolicy.PaymentPolicy(func(r PaymentRow) stripepolicy.LocalPayment {
//			return stripepolicy.LocalPayment{Status: r.Status, Amount: r.Amount, Currency: r.Currency,
//				AmountRefunded: r.Refunded, DisputeStatus: r.DisputeStatus}
//		}),
//		Limiter: limiter,
//	})
//
// The first line that matches decides, and the decision's Diffs list every field that differs
// (amounts written in their currency, as "JPY 1,000" or "KWD 1.000"), whichever line decided.
// "Refunded by Stripe" is [Payment.AmountRefunded], what went back to the customer:
//
//	currency differs (in any case)           NeedsReview currency_mismatch
//	amount differs (in minor units)          NeedsReview amount_mismatch
//	any status pair but paid × succeeded     as PaymentIntentPolicy decides it (failed
//	                                         × requires_payment_method, a declined card, is
//	                                         in sync)
//	paid × succeeded, then:
//	  amount_received ≠ the row's captured
//	  amount (its amount unless it records
//	  AmountCaptured)                        NeedsReview partial_capture
//	  refunded by the row > by Stripe        NeedsReview refund_failed
//	  the dispute's status differs:
//	    lost                                 NeedsReview dispute_lost
//	    needs_response,
//	    warning_needs_response               NeedsReview dispute_needs_response
//	    won                                  Repairable dispute_won (ApplyDisputeStatus)
//	    any other                            Repairable dispute_updated (ApplyDisputeStatus)
//	    none at Stripe                       NeedsReview dispute_missing_externally
//	  refunded by Stripe > by the row        Repairable missed_refund, when the whole captured
//	                                         amount is refunded, else missed_partial_refund
//	                                         (ApplyRefund)
//	  otherwise                              InSync
//
// Why each goes where it goes:
//   - A payment in another currency, or of another amount, is not the payment the order
//     asked for: a price changed, a bug, or fraud, and whether to ship, charge again or refund
//     is a business decision. Never auto-apply it. Amounts are compared as integers in minor
//     units, never scaled: JPY has no decimals and KWD three.
//   - A capture other than the row records took other money than the row says: ship less,
//     charge the rest or cancel, a person decides, and records the captured amount through the
//     host's own writer (no repair command does: it is a decision, not a catch-up). From then
//     on the row is InSync and its refunds and disputes are judged as any payment's; a finding
//     per payment and kind would otherwise hide them behind the capture.
//   - A row that records more refunded than Stripe has (a refund that failed after
//     succeeding, or one never made) means the customer was told money came back that did
//     not: someone must refund again or tell them. The events lane names the failed refund and
//     its failure_reason.
//   - A dispute lost has taken the money back, and one that needs a response is lost unless
//     evidence reaches Stripe by its due_by (in the detail, "respond by" and the time in RFC
//     3339, UTC): both need a person, the second soon.
//   - A dispute the row records and Stripe does not have is a mistake on one side, which only
//     a person can tell.
//   - A dispute won, or one whose status merely moved on (under review, an inquiry closed),
//     and a refund made at Stripe (in the Dashboard, by support, by another service) are money
//     that already moved: catching our side up is safe and needs no one. The repair command's
//     canonical writer re-reads Stripe before it writes.
//   - Money is compared only for a payment both sides call paid: before that, the status
//     policy decides (a pending payment whose intent succeeded is missed_success first; its
//     refund is found once the row is paid).
//
// What Stripe refunded is [Payment.AmountRefunded], not the charge's amount_refunded:
// a partly captured charge shows the authorised amount it released, amount − amount_captured,
// in its amount_refunded, though no money went back to the customer: after a partial capture
// of 20300 of 20675, the charge read amount_refunded 375 with no refund made
// (woocommerce/woocommerce-gateway-stripe#1073), and Solidus's integration describes a partial
// capture as "creating a refund for the remaining amount" (solidus_stripe#268). Stripe's API
// reference does not say so, and stripe-mock cannot show it. We rely on it: what Stripe
// refunded to the customer is amount_refunded − (amount − amount_captured), floored at 0
// ([Payment.AmountRefunded]), and the whole captured amount is refunded once that reaches
// amount_captured. Should Stripe not count the release, a partly captured charge would read
// less refunded than it is: a refund the row records in full would be a refund_failed finding
// for a person, and one caught up through ApplyRefund would be recorded short. Without the
// subtraction, every partly captured charge would read as refunded by what it released.
//
// # Subscriptions, invoices and Checkout Sessions
//
// Three more policies judge a host's rows against the objects of the same name. Where our
// side did something Stripe never saw, the customer may be billed for what we withdrew, or we
// may count money never received: a person decides.
//
// [SubscriptionPolicy] reads a [LocalSubscription] (status in Stripe's words,
// cancel_at_period_end, paid-through time). Statuses fall in four groups: billing (trialing,
// active, past_due: the row grants access), pending (incomplete), suspended (unpaid, paused)
// and ended (canceled, incomplete_expired, final at Stripe). The period end is
// [SubscriptionPeriodEnd], the latest current_period_end of the items.
//
//	unknown status on either side              NeedsReview unexpected:<ours>-><theirs>
//	row ended × Stripe billing                 NeedsReview billing_without_access
//	row ended × Stripe pending or suspended    NeedsReview ended_locally_not_externally
//	row cancels at period end, Stripe will
//	  renew (Stripe not ended)                 NeedsReview cancellation_missing_externally
//	row billing × canceled                     Repairable subscription_canceled_externally
//	row billing × pending, suspended,
//	  incomplete_expired                       Repairable access_without_billing
//	row pending or suspended × billing         Repairable missed_activation
//	any other status difference                Repairable missed_status_change
//	same status, then:
//	  paid-through after the period end
//	  (trialing, active, past_due)             Repairable paid_through_ahead
//	  Stripe cancels at period end, the row
//	  expects a renewal (Stripe not ended)     Repairable cancellation_scheduled_externally
//	  paid-through before the period end
//	  (trialing, active)                       Repairable paid_through_behind
//	  otherwise                                InSync
//
// Every repair is ApplySubscriptionStatus: the writer records status, SubscriptionPeriodEnd
// and cancel_at_period_end. Why each goes where it goes:
//   - Access Stripe no longer bills for (canceled in the Dashboard or by dunning, unpaid,
//     paused, never paid) is the drift that costs money, every day it stays. Taking it back is
//     what the customer.subscription.* handler would have done and needs no judgment: Stripe
//     is where billing happens, and the row only mirrors it.
//   - A row that ended a subscription Stripe still has, or that cancels at period end while
//     Stripe will renew, means a cancellation never reached Stripe: the customer is billed
//     for access we withdrew, or will be at renewal. Cancel at Stripe (and refund), or restore
//     the access: a person decides. Stripe never revives an ended subscription, so no missed
//     webhook explains it.
//   - A subscription that started billing (first payment made, resumed, recovered from
//     unpaid) and any other status change are money that already moved: catch up.
//   - A paid-through time after Stripe's period end grants access nobody billed for; a comp
//     belongs at Stripe (a trial or a credit), where it is billed as one. Before the period
//     end, a renewal was paid and the row missed it. Times are compared to the second;
//     past_due's period has moved on unpaid, so only a row ahead of it is drift. The zero
//     time is not compared, nor the period of a subscription Stripe does not bill.
//
// [InvoicePolicy] reads a [LocalInvoice] (status, currency, amount_due, amount_paid,
// amount_remaining in minor units). Stripe moves an invoice draft → open → paid,
// uncollectible or void, and uncollectible → paid or void, never back.
//
//	unknown status on either side              NeedsReview unexpected:<ours>-><theirs>
//	currency differs (in any case)             NeedsReview currency_mismatch
//	amount_due differs, neither a draft        NeedsReview amount_mismatch
//	row paid × any other                       NeedsReview paid_locally_not_externally
//	row void × any other                       NeedsReview voided_locally_not_externally
//	row uncollectible × draft, open            NeedsReview uncollectible_locally_not_externally
//	row open × draft                           NeedsReview finalized_locally_not_externally
//	row draft, open, uncollectible × paid      Repairable missed_payment
//	row draft, open, uncollectible × void      Repairable missed_void
//	row draft, open × uncollectible            Repairable missed_uncollectible
//	row draft × open                           Repairable missed_finalization
//	same status but draft, then:
//	  amount_paid higher in the row            NeedsReview paid_locally_not_externally
//	  amount_paid higher at Stripe             Repairable missed_payment
//	  amount_remaining differs                 Repairable amount_remaining_mismatch
//	  otherwise                                InSync
//
// Every repair is ApplyInvoiceStatus: the writer records status and the three amounts. A
// finalized invoice in another currency or of another amount is not the bill our books
// hold: a wrong charge or wrong revenue, for a person (a draft's amounts still change, and
// are compared once it is finalized). A row ahead of Stripe (paid, voided, written off or
// finalized here only) was never seen by Stripe, which may still collect, or never did: a
// person. Payment, voiding, a write-off and finalization at Stripe already happened:
// catch up.
//
// [CheckoutPolicy] reads a [LocalCheckout] (status, payment_status, whether the order was
// fulfilled, its currency and amount_total). A session is due fulfilment when it is complete
// and its payment_status is paid or no_payment_required: a session paid by an asynchronous
// method (bank debits, vouchers) completes unpaid and is paid days later, or never, so
// complete alone is not paid. Its states read "status/payment_status". An order table whose
// rows have one status of the host's own describes it with [CheckoutStatuses], a map from
// each of its statuses to Stripe's two and the fulfilled flag; findings then name the row's
// state in the host's words.
//
//	unknown status on either side              NeedsReview unexpected:<ours>-><theirs>
//	session complete, currency differs         NeedsReview currency_mismatch
//	session complete, amount_total differs     NeedsReview amount_mismatch
//	fulfilled, session not due                 NeedsReview fulfilled_without_payment
//	not fulfilled, session due                 Repairable missed_fulfillment (FulfillCheckout)
//	same status and payment_status             InSync
//	row due (paid), session not                NeedsReview paid_locally_not_externally
//	row complete or expired × open             NeedsReview session_still_open
//	× expired                                  Repairable missed_expiry (ApplyCheckoutStatus)
//	× complete/unpaid                          Repairable missed_completion (ApplyCheckoutStatus)
//	otherwise                                  Repairable missed_session_update (ApplyCheckoutStatus)
//
// A completed session in another currency or of another total than the order (a promotion
// code the order does not know, a price changed) took other money than the order asks:
// whether to ship, charge the rest or refund is a person's call, made before anything is
// fulfilled. An open session's total still changes and an expired one took none, so only a
// completed session's is compared, as an invoice's once it is final. Goods shipped against a
// session that is not paid went out for nothing yet: a person, and never InFlight, though the
// payment may still come. A paid session whose order was not fulfilled is money taken for
// nothing: FulfillCheckout calls the host's fulfilment function, which re-reads the session
// and fulfils once. A row that says paid while Stripe does not, or a session closed here that
// Stripe still takes payment on, needs a person; the rest is catching up.
//
// # Payouts
//
// [PayoutGroup] and [PayoutOptions.PayoutMember] turn a payout and its balance transactions
// (listed with ?payout=po_... and the source expanded) into package tieout's Group and
// Members: the booked kind of each type from a table ([BalanceTransactionKinds]; an adjustment
// is a dispute's when its source is one), amounts signed as Stripe signs them, the source's
// presentment amount signed the same way, and the id the host books the line under. A type not
// in the table has no kind, and the tie-out reports it. Paid is not terminal; a manual payout
// cannot be itemized. [PayoutOptions.ReportMember] does the same for a line of Stripe's itemized
// payout reconciliation report ([ReportLine]), which names a reporting category instead of a type:
// its kind from a table of its own ([ReportingCategoryKinds]; a category not in it, other_adjustment
// among them, has no kind), the presentment amount from customer_facing_amount.
package stripepolicy
