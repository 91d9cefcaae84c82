// Payouts ties a service's Stripe payouts out against what it booked: each payout's balance
// transactions against the host's payments, invoices, refunds, disputes and payouts tables in
// PostgreSQL, with package tieout, pgledger (the host's tables as the tie-out reads them),
// stripepayouts (the payouts and their lines over Stripe's API) and pgstore (where findings,
// lane positions and the payouts tied out are recorded, for the review console).
//
//	go run ./examples/payouts
//
// It connects to $DATABASE_URL (by default postgres://postgres@127.0.0.1:5432/test?sslmode=disable),
// drops and creates the schema payouts_demo (-schema names another), and starts stripetest, a
// fake Stripe API served over HTTP in-process, whose account settles EUR in USD at 1.1. Then ten
// days of a story, on a clock the demo moves:
//
//   - Payments booked right: in USD, in EUR as charged, and an invoice paid in EUR booked by
//     finance as the USD it settled as (none is a finding). A payment booked for less than was
//     charged, and an invoice booked for less than settled (booked_amount_differs). A payment
//     never booked (unbooked_payment). A refund made in the Dashboard (unbooked_refund); a
//     booked refund that failed (unbooked_refund_failure); a bank debit returned
//     (unbooked_payment_failure_refund); a chargeback never booked, and one booked and won
//     whose money back is not (unbooked_dispute, twice); a line of a type Stripe added later
//     (unknown_line_type); a payment booked as settled that never reached Stripe
//     (never_paid_out). Payout p1 carries them all and is paid.
//   - The events lane anchors at Stripe's newest event; the sweep ties p1 out, its lines read
//     from one report run (the payouts tied out later are listed: failed, or too recent for the
//     report's data, or the events lane's).
//   - p1 fails after paid (payout_failed); p2 carries its money back, not booked
//     (unbooked_payout_failure), and a line added after it was made (payout_sum_mismatch); p3 is
//     manual (payout_not_itemizable); p4 is pending. The events lane judges p1 again and ties p2
//     and p3 out; the sweep waits at p4; the never-paid-out walk reads the host's ledger.
//   - p4 is paid; the sweep ties it out (it holds) and moves past it.
//
// It prints each payout, what it paid against what its lines add up to, the findings by kind
// with what each kind means, and a check line; it exits non-zero unless each planted finding
// was found exactly once and nothing else was.
//
// Kinds it does not plant: those the fake cannot produce over the wire (invalid_line,
// duplicate_line, source_unread, payout_status_unknown, unbooked_line) and the fee kinds
// (unbooked_fee, booked_fee_differs), which need a host that books fees (tieout.Policy.Fees).
//
// What a host would copy: schema.go (its tables), writer.go (the canonical writer that books),
// ledger.go (those tables described to the tie-out, and its policy) and tieout.go (the three
// steps). plant.go and main.go are the demo's own machinery.
package main
