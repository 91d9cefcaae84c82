package tieout

import "github.com/reconcilekit/reconcile"

// The records a Step commits of the groups it saw (reconcile.GroupRecord), when its Sink is a
// reconcile.GroupSink: what each payout paid against what its lines add up to, for the console.

// pendingRecord is the record of g seen with its members not final yet.
func pendingRecord(g Group) reconcile.GroupRecord {
	return reconcile.GroupRecord{ID: g.ID, Account: g.Account, Status: g.Status, Amount: g.Amount, Currency: g.Currency,
		Itemized: g.Itemized}
}

// tiedRecord is the record of g tied out over n members summing to t, with findings.
func tiedRecord(g Group, n int, t tally, findings []Finding) reconcile.GroupRecord {
	r := pendingRecord(g)
	r.TiedOut, r.Members, r.Findings = true, n, len(findings)
	r.Expected, r.ExpectedKnown = t.sum, g.Itemized && t.known
	held := r.ExpectedKnown && t.sum == g.Amount
	for _, f := range findings {
		if f.Record != g.ID {
			r.Unmatched++
		} else if f.Decision.Kind == KindSumMismatch {
			held = false // the group's own line is not the negative of its amount
		}
		r.Records = append(r.Records, f.Record)
	}
	r.Held = held
	return r
}

// storableRecords returns records as a store keeps them (reconcile.StorableGroupRecord), each
// group once: a tied-out record wins over a pending one of the same group, and the last of
// several tied-out ones (a listing that names a group twice) over the others. A group without
// an id is not recorded: its findings are.
func storableRecords(records []reconcile.GroupRecord) []reconcile.GroupRecord {
	out := make([]reconcile.GroupRecord, 0, len(records))
	tied := make(map[[2]string]bool, len(records))
	for _, r := range records {
		r = reconcile.StorableGroupRecord(r)
		if r.ID == "" {
			continue
		}
		k := [2]string{r.Account, r.ID}
		if r.TiedOut {
			tied[k] = true
		}
		out = append(out, r)
	}
	// Pending entries of groups also tied out in the step are dropped; then the last entry of
	// each group is the one recorded.
	kept := out[:0]
	for _, r := range out {
		if !r.TiedOut && tied[[2]string{r.Account, r.ID}] {
			continue
		}
		kept = append(kept, r)
	}
	return reconcile.LastGroupRecords(kept)
}
