package stripepolicy

import "github.com/stripe/stripe-go/v82"

// Payment is what the money policy judges a payments row against: a PaymentIntent with its
// latest charge expanded, and what the charge cannot say itself. Package stripemoney reads it.
//
// The charge carries amount_refunded, refunded and disputed at no extra call. A dispute's
// status lives only on the Dispute, so Disputes are read for a disputed charge; a refund's
// status and failure reason live only on the Refund, so Refunds are read by the events lane,
// which is told of each refund, and are nil in the sweep.
type Payment struct {
	// Intent is the PaymentIntent, its LatestCharge expanded (nil before a charge exists).
	Intent *stripe.PaymentIntent
	// Disputes are the charge's disputes, read when the charge is disputed; nil otherwise.
	Disputes []*stripe.Dispute
	// Refunds are the intent's refunds, read by the events lane when an event touches a
	// refund; nil otherwise.
	Refunds []*stripe.Refund
}

// PaymentState returns the payment's intent status, "" for nil: the external state a finding
// records, as PaymentIntentState does for an intent alone. The money policy names it so.
func PaymentState(p *Payment) string {
	if p == nil {
		return ""
	}
	return PaymentIntentState(p.Intent)
}

// charge returns the intent's latest charge if it was expanded, nil if there is none.
func (p *Payment) charge() *stripe.Charge {
	if p == nil || p.Intent == nil || !expanded(p.Intent.LatestCharge) {
		return nil
	}
	return p.Intent.LatestCharge
}

// AmountRefunded returns what Stripe refunded to the customer on the payment's charge, in minor
// units, 0 without a charge: the charge's amount_refunded less the authorised amount a partial
// capture released, amount − amount_captured, which Stripe counts in amount_refunded though no
// money went back (see the package doc). Failed and canceled refunds are not in it. A canonical
// writer that records refunds should record this, as the money policy compares it.
func (p *Payment) AmountRefunded() int64 {
	ch := p.charge()
	if ch == nil {
		return 0
	}
	return max(0, ch.AmountRefunded-(ch.Amount-ch.AmountCaptured))
}

// expanded reports whether ch is a whole charge, not only the id stripe-go decodes from an
// unexpanded latest_charge.
func expanded(ch *stripe.Charge) bool { return ch != nil && ch.Object == "charge" }

// dispute returns the newest of the payment's disputes, nil if it has none. A charge is
// disputed once in practice; should an inquiry be followed by a chargeback, the later one is
// the one still deciding the money.
func (p *Payment) dispute() *stripe.Dispute {
	if p == nil {
		return nil
	}
	var newest *stripe.Dispute
	for _, d := range p.Disputes {
		if d != nil && (newest == nil || d.Created > newest.Created || d.Created == newest.Created && d.ID > newest.ID) {
			newest = d
		}
	}
	return newest
}

// failedRefund returns the newest refund that failed or was canceled, nil if none did.
func (p *Payment) failedRefund() *stripe.Refund {
	if p == nil {
		return nil
	}
	var newest *stripe.Refund
	for _, r := range p.Refunds {
		if r != nil && (r.Status == stripe.RefundStatusFailed || r.Status == stripe.RefundStatusCanceled) &&
			(newest == nil || r.Created > newest.Created) {
			newest = r
		}
	}
	return newest
}
