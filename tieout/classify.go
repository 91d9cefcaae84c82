package tieout

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reconcilekit/reconcile"
)

// DefaultBooks are the booked kinds of a Policy whose Books is nil: what a service that takes
// payments books, fees and payouts aside.
var DefaultBooks = []string{KindPayment, KindRefund, KindDispute, KindRefundFailure, KindPaymentFailureRefund, KindGroupFailure}

// Policy says what the host books. The zero Policy books DefaultBooks, no fees and no payouts.
type Policy struct {
	// Books lists the booked kinds the host books: a line of another kind counts in the sum
	// only. Nil means DefaultBooks. KindGroup in it means the host books its payouts (by
	// the group's id, Status "failed" once it failed); KindFee is implied by Fees.
	Books []string
	// Fees reports that the host books fees: lines of KindFee are booked, and a booked
	// record with a fee (Booked.HasFee) has it compared with its line's.
	Fees bool
}

// books reports whether the host books kind.
func (p Policy) books(kind string) bool {
	if kind == KindFee && p.Fees {
		return true
	}
	if p.Books == nil {
		return slices.Contains(DefaultBooks, kind)
	}
	return slices.Contains(p.Books, kind)
}

// Finding is one drift the tie-out found.
type Finding struct {
	// Group and Account name the group the finding is about; Group is empty for a record
	// never paid out.
	Group, Account string
	// Record is what the finding is recorded under: a line's id, the group's id, or a booked
	// record's id.
	Record string
	// ExternalID is the external object the finding is about: the line's source, or the
	// group.
	ExternalID string
	// Local and External describe both sides' states as findings record them: what the host
	// booked, and the line's type and status (the group's status).
	Local, External string
	Decision        reconcile.Decision
}

// Keys returns the keys under which members are booked, each once, for Ledger.Booked: the
// lines of the kinds p books.
func (p Policy) Keys(members []Member) []Key {
	seen := make(map[Key]bool, len(members))
	var keys []Key
	for _, m := range members {
		k := Key{m.Kind, m.bookedID()}
		if m.Kind == "" || k.ID == "" || !p.books(m.Kind) || seen[k] {
			continue
		}
		seen[k] = true
		keys = append(keys, k)
	}
	return keys
}

// Classify ties group g out: it checks that members sum to g's amount, matches each member of
// a kind p books with a booked record of the same kind and id (an exact match first, so that
// two lines under one id pair with their own bookings), and compares their amounts and fees.
// booked is what the ledger returned for p.Keys(members) (and, if p books payouts, for the
// group's key); records matching no member are not g's concern. It is pure and returns the
// findings in a stable order: the group's first, then the lines' in members' order. Call it
// on a complete listing (Stripe: the payout's reconciliation_status is completed).
func (p Policy) Classify(g Group, members []Member, booked []Booked) []Finding {
	out, _ := p.classify(g, members, booked)
	return out
}

// tally is what classify adds up besides findings: the members' sum, for the group's record.
type tally struct {
	sum   int64
	known bool // itemized, and the sum did not overflow
}

// classify is Classify, returning the members' sum too.
func (p Policy) classify(g Group, members []Member, booked []Booked) ([]Finding, tally) {
	var out []Finding
	groupFinding := func(d reconcile.Decision, local string) {
		out = append(out, Finding{Group: g.ID, Account: g.Account, Record: g.ID, ExternalID: g.ID,
			Local: local, External: g.Status, Decision: d})
	}
	bookings := make(map[Key][]Booked)
	for _, b := range booked {
		k := Key{b.Kind, b.ID}
		bookings[k] = append(bookings[k], b)
	}
	if g.State < GroupPending || g.State > GroupFailed {
		groupFinding(reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindUnknownStatus,
			Detail: fmt.Sprintf("payout %s has status %q, which the policy does not know", g.ID, g.Status)}, "")
	}
	if g.State == GroupFailed {
		own := bookings[Key{KindGroup, g.ID}]
		if !p.books(KindGroup) || !slices.ContainsFunc(own, func(b Booked) bool { return b.Status == "failed" }) {
			local := "not booked"
			if len(own) > 0 {
				local = own[len(own)-1].Status
			}
			groupFinding(reconcile.Decision{Verdict: reconcile.Repairable, Kind: KindPayoutFailed, Command: CommandApplyPayoutFailed,
				Detail: fmt.Sprintf("payout %s of %s is %s", g.ID, reconcile.FormatAmount(g.Amount, g.Currency), g.Status),
				Diffs:  []reconcile.Diff{{Field: "status", Local: local, External: g.Status}}}, local)
		}
	}
	if !g.Itemized {
		groupFinding(reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindNotItemizable,
			Detail: fmt.Sprintf("payout %s of %s cannot be itemized (a manual payout): tie it out by hand", g.ID, reconcile.FormatAmount(g.Amount, g.Currency))}, "")
		return out, tally{}
	}

	// The sum, and each line's validity. Line findings are kept with the line's index, so
	// that they come out in members' order whichever pass found them.
	type line struct {
		i int
		f Finding
	}
	var lines []line
	lineFinding := func(m Member, i int, local string, d reconcile.Decision) {
		rec := m.ID
		if !validID(rec) {
			rec = g.ID + "#" + strconv.Itoa(i)
		}
		if d.Detail == "" {
			d.Detail = fmt.Sprintf("%s %s in payout %s", m.Type, m.SourceID, g.ID)
		}
		lines = append(lines, line{i, Finding{Group: g.ID, Account: g.Account, Record: rec, ExternalID: m.SourceID,
			Local: local, External: strings.TrimSpace(m.Type + " " + m.Status), Decision: d}})
	}
	var sum int64
	overflow := false
	seen := make(map[string]bool, len(members))
	var judge []int
	for i, m := range members {
		if why := invalid(p, g, m); why != "" {
			lineFinding(m, i, "", reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindInvalidLine, Detail: why + " (payout " + g.ID + ")"})
			if !validID(m.ID) || !strings.EqualFold(m.Currency, g.Currency) || seen[m.ID] {
				continue // not summed: not a line of this group as listed, or counted already
			}
			seen[m.ID] = true
		} else if seen[m.ID] {
			lineFinding(m, i, "", reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindDuplicateLine})
			continue
		} else {
			seen[m.ID] = true
			switch {
			case m.Kind == KindGroup && m.SourceID == g.ID:
				// The group's own line: not summed, the negative of the group's amount.
				if neg, ok := negate(g.Amount); !ok || m.Net != neg {
					groupFinding(reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindSumMismatch,
						Detail: fmt.Sprintf("payout %s's own line %s is not the negative of its amount", g.ID, m.ID),
						Diffs: []reconcile.Diff{{Field: "payout_line", Local: reconcile.FormatAmount(g.Amount, g.Currency),
							External: reconcile.FormatAmount(m.Net, g.Currency)}}}, "")
				}
				continue
			case m.Kind == "":
				lineFinding(m, i, "", reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindUnknownType,
					Detail: fmt.Sprintf("type %q of %s %s in payout %s is not in the policy", m.Type, m.ID, m.SourceID, g.ID)})
			case p.books(m.Kind):
				judge = append(judge, i)
			}
		}
		var ok bool
		if sum, ok = add(sum, m.Net); !ok {
			overflow = true
		}
	}
	if overflow || sum != g.Amount {
		total := reconcile.FormatAmount(sum, g.Currency)
		if overflow {
			total = "overflow"
		}
		groupFinding(reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindSumMismatch,
			Detail: fmt.Sprintf("the %d lines of payout %s sum to %s, not %s", len(members), g.ID, total, reconcile.FormatAmount(g.Amount, g.Currency)),
			Diffs:  []reconcile.Diff{{Field: "amount", Local: total, External: reconcile.FormatAmount(g.Amount, g.Currency)}}}, "")
	}

	// Matching: exact matches first, so that two lines under one id pair with their own
	// bookings; then the rest in order, each with the next booking left under its key.
	var rest []int
	for _, i := range judge {
		m := members[i]
		k := Key{m.Kind, m.bookedID()}
		cands := bookings[k]
		if j := slices.IndexFunc(cands, func(b Booked) bool { return len(compare(p, m, b)) == 0 }); j >= 0 {
			bookings[k] = slices.Delete(slices.Clone(cands), j, j+1)
			continue
		}
		rest = append(rest, i)
	}
	for _, i := range rest {
		m := members[i]
		k := Key{m.Kind, m.bookedID()}
		cands := bookings[k]
		if len(cands) == 0 {
			d := unbookedDecision(m.Kind)
			d.Diffs = []reconcile.Diff{{Field: "amount", Local: "not booked", External: reconcile.FormatAmount(m.Amount, m.Currency)}}
			lineFinding(m, i, "not booked", d)
			continue
		}
		b := cands[0]
		bookings[k] = cands[1:]
		diffs := compare(p, m, b)
		local := "booked " + b.Kind
		switch {
		case len(diffs) == 0:
			// Not reached: a booking that matches would have been paired in the first pass.
		case len(diffs) == 1 && diffs[0].Field == "source":
			lineFinding(m, i, local, reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindSourceUnread, Diffs: diffs})
		case slices.ContainsFunc(diffs, func(d reconcile.Diff) bool { return d.Field != "fee" }):
			lineFinding(m, i, local, reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindAmountDiffers, Diffs: diffs})
		default:
			lineFinding(m, i, local, reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindFeeDiffers, Diffs: diffs})
		}
	}
	slices.SortStableFunc(lines, func(a, b line) int { return a.i - b.i })
	for _, l := range lines {
		out = append(out, l.f)
	}
	return out, tally{sum: sum, known: !overflow}
}

// ClassifyUnpaid returns a finding for each record, as Ledger.Unpaid returns them for an
// UnpaidRequest whose Ahead is ahead, recorded under the booked id: KindSettledInFuture for
// one settled or available after ahead (an impossible time), else KindNeverPaidOut (settled,
// in no group, past its availability and the grace). It is pure.
func ClassifyUnpaid(records []Booked, ahead time.Time) []Finding {
	out := make([]Finding, 0, len(records))
	for _, b := range records {
		at := b.AvailableOn
		if at.IsZero() {
			at = b.SettledAt
		}
		if future(b, ahead) {
			out = append(out, Finding{Record: b.ID, ExternalID: b.ID, Local: "settled " + b.Kind, External: "in no payout",
				Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindSettledInFuture,
					Detail: fmt.Sprintf("%s %s of %s is settled %s, available %s: more than %s ahead of the clock (%s), an impossible time",
						b.Kind, b.ID, reconcile.FormatAmount(b.Amount, b.Currency), stamp(b.SettledAt), stamp(b.AvailableOn),
						reconcile.MaxClockSkew, stamp(ahead.Add(-reconcile.MaxClockSkew))),
					Diffs: []reconcile.Diff{{Field: "settled_at", Local: stamp(b.SettledAt), External: "before " + stamp(ahead)}}}})
			continue
		}
		out = append(out, Finding{Record: b.ID, ExternalID: b.ID, Local: "settled " + b.Kind, External: "in no payout",
			Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: KindNeverPaidOut,
				Detail: fmt.Sprintf("%s %s of %s, available since %s, is in no payout", b.Kind, b.ID,
					reconcile.FormatAmount(b.Amount, b.Currency), stamp(at)),
				Diffs: []reconcile.Diff{{Field: "payout", Local: reconcile.FormatAmount(b.Amount, b.Currency), External: "none"}}}})
	}
	return out
}

// future reports that b is settled or available after ahead (an impossible time); a zero ahead
// is no bound.
func future(b Booked, ahead time.Time) bool {
	return !ahead.IsZero() && (b.SettledAt.After(ahead) || b.AvailableOn.After(ahead))
}

// stamp writes t for a finding's detail to the minute; "none" if zero.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format("2006-01-02 15:04 MST")
}

// invalid says why m cannot be judged as a line of g; empty if it can. A line of a kind p
// books needs a source to match a booking by.
func invalid(p Policy, g Group, m Member) string {
	switch {
	case !validID(m.ID):
		return "a line without a usable id"
	case !strings.EqualFold(m.Currency, g.Currency):
		return fmt.Sprintf("line %s is in %q, payout %s in %q", m.ID, m.Currency, g.ID, g.Currency)
	}
	if net, ok := sub(m.Amount, m.Fee); !ok || net != m.Net {
		return fmt.Sprintf("line %s: net %d is not amount %d minus fee %d", m.ID, m.Net, m.Amount, m.Fee)
	}
	if p.books(m.Kind) && !validID(m.SourceID) {
		return fmt.Sprintf("line %s of type %q names no usable source", m.ID, m.Type)
	}
	return ""
}

// validID reports whether id can name a record: not empty, valid UTF-8, printable, and no
// longer than a store keeps whole.
func validID(id string) bool {
	return id != "" && len(id) <= reconcile.MaxExternalID && utf8.ValidString(id) &&
		!strings.ContainsFunc(id, func(r rune) bool { return !unicode.IsPrint(r) || r == ' ' })
}

// compare returns the fields on which line m and booking b differ: amount and currency in
// b's basis, fee if p books fees and b has one; a lone "source" diff when the presentment
// amount cannot be compared.
func compare(p Policy, m Member, b Booked) []reconcile.Diff {
	var diffs []reconcile.Diff
	money := func(field string, la int64, lc string, ea int64, ec string) {
		if !strings.EqualFold(lc, ec) {
			diffs = append(diffs, reconcile.Diff{Field: "currency", Local: strings.ToUpper(lc), External: strings.ToUpper(ec)})
		}
		if la != ea || !strings.EqualFold(lc, ec) {
			diffs = append(diffs, reconcile.Diff{Field: field, Local: reconcile.FormatAmount(la, lc), External: reconcile.FormatAmount(ea, ec)})
		}
	}
	switch {
	case b.Basis == Settlement:
		money("amount", b.Amount, b.Currency, m.Amount, m.Currency)
	case b.Basis != Presentment:
		diffs = append(diffs, reconcile.Diff{Field: "basis", Local: b.Basis.String(), External: "presentment or settlement"})
	case m.SourceCurrency != "":
		money("amount", b.Amount, b.Currency, m.SourceAmount, m.SourceCurrency)
	case strings.EqualFold(b.Currency, m.Currency) && (m.ExchangeRate == 0 || m.ExchangeRate == 1):
		money("amount", b.Amount, b.Currency, m.Amount, m.Currency)
	case m.ExchangeRate > 0 && !math.IsInf(m.ExchangeRate, 0):
		// Through the rate: the booked presentment amount, converted, must be the line's
		// amount to within what the rate's rounding makes of it (see rateTolerance).
		want, ok := convert(b.Amount, b.Currency, m.Currency, m.ExchangeRate)
		if !ok || absDiff(want, m.Amount) > rateTolerance(want) {
			w := "out of range"
			if ok {
				w = reconcile.FormatAmount(want, m.Currency)
			}
			diffs = append(diffs, reconcile.Diff{Field: "settlement_amount", Local: w + " (" + reconcile.FormatAmount(b.Amount, b.Currency) +
				" at " + strconv.FormatFloat(m.ExchangeRate, 'g', -1, 64) + ")", External: reconcile.FormatAmount(m.Amount, m.Currency)})
		}
	default:
		return []reconcile.Diff{{Field: "source", Local: reconcile.FormatAmount(b.Amount, b.Currency), External: "source amount not read, no exchange rate"}}
	}
	if p.Fees && b.HasFee && b.Fee != m.Fee {
		diffs = append(diffs, reconcile.Diff{Field: "fee", Local: reconcile.FormatAmount(b.Fee, m.Currency), External: reconcile.FormatAmount(m.Fee, m.Currency)})
	}
	return diffs
}

// convert converts minor units of currency from into minor units of currency to at rate
// (major to major); false when the result is not a finite int64.
func convert(amount int64, from, to string, rate float64) (int64, bool) {
	x := float64(amount) / math.Pow10(reconcile.CurrencyExponent(from)) * rate * math.Pow10(reconcile.CurrencyExponent(to))
	x = math.Round(x)
	if math.IsNaN(x) || math.IsInf(x, 0) || x >= 1<<62 || x <= -(1<<62) {
		return 0, false
	}
	return int64(x), true
}

// rateTolerance is how far a settlement amount converted through a published exchange rate
// may be from the line's: one minor unit, or one part in a million of the amount where that is
// more (an exchange rate written to six or seven significant digits; an assumption, not
// verified against Stripe, which is why the source's own amount is compared when the source
// was read, exactly).
func rateTolerance(amount int64) int64 {
	t := absDiff(amount, 0) / 1_000_000
	return max(1, t)
}

// absDiff is |a - b|, saturated.
func absDiff(a, b int64) int64 {
	d, ok := sub(a, b)
	if !ok {
		return math.MaxInt64
	}
	if d < 0 {
		if d == math.MinInt64 {
			return math.MaxInt64
		}
		return -d
	}
	return d
}

// add, sub and negate are checked: false on overflow.
func add(a, b int64) (int64, bool) {
	s := a + b
	return s, (b >= 0) == (s >= a)
}

func sub(a, b int64) (int64, bool) {
	s := a - b
	return s, (b >= 0) == (s <= a)
}

func negate(a int64) (int64, bool) { return -a, a != math.MinInt64 }
