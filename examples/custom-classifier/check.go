package main

import (
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/reconcilekit/reconcile"
)

// check is one assertion on a run; Err is nil when it held.
type check struct {
	Name string
	Err  error
}

// checks compares what the run did with what the plants say it must do.
func checks(res result) []check {
	return []check{
		{"cycle 1 judged every row as planted", judgedAsPlanted(res)},
		{"every repair command applied and resolved its finding", repairsResolved(res)},
		{"where the provider is the truth, ours caught up", oursCaughtUp(res)},
		{"where ours is the truth, the provider bills the seats we sold", providerCaughtUp(res)},
		{"each push applied once at the provider, the retried one too", pushedOnce(res)},
		{"nothing else changed on either side", nothingElseChanged(res)},
		{"cycle 2 found the repaired rows in sync and nothing new", secondCycle(res)},
	}
}

func verdictCounts(ps []plant, which func(plant) reconcile.Verdict) map[reconcile.Verdict]int {
	m := map[reconcile.Verdict]int{}
	for _, p := range ps {
		m[which(p)]++
	}
	return m
}

func sameCounts(got, want map[reconcile.Verdict]int) error {
	for _, v := range reconcile.Verdicts {
		if got[v] != want[v] {
			return fmt.Errorf("%d rows %s, want %d", got[v], v, want[v])
		}
	}
	return nil
}

func judgedAsPlanted(res result) error {
	if err := sameCounts(res.Cycle1.Verdicts, verdictCounts(res.Plants, func(p plant) reconcile.Verdict { return p.First })); err != nil {
		return err
	}
	want := map[string]string{}
	for _, p := range res.Plants {
		if p.Kind != "" {
			want[strconv.FormatInt(p.Key, 10)] = p.Kind
		}
	}
	got := map[string]string{}
	for _, f := range res.Findings {
		if _, dup := got[f.RecordID]; dup {
			return fmt.Errorf("row %s has two findings", f.RecordID)
		}
		got[f.RecordID] = f.Kind
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("findings by row %v, want %v", got, want)
	}
	return nil
}

func repairsResolved(res result) error {
	want := res.Cycle1.Verdicts[reconcile.Repairable]
	if len(res.Commands) != want {
		return fmt.Errorf("%d repair commands queued, want %d", len(res.Commands), want)
	}
	for _, c := range res.Commands {
		f := res.Findings[c.FindingID-1]
		if f.Open() || f.Resolution != reconcile.ResolutionRepaired {
			return fmt.Errorf("row %s: %s did not resolve finding %d (%s)", c.RecordID, c.Name, f.ID, f.Kind)
		}
	}
	return nil
}

func oursCaughtUp(res result) error {
	n := 0
	for _, p := range res.Plants {
		if p.Kind != KindMissedCancellation && p.Kind != KindMissedActivation {
			continue
		}
		n++
		if got := res.Ours[strconv.FormatInt(p.Key, 10)].Status; got != p.Theirs.Status {
			return fmt.Errorf("row %d is %s, the provider says %s", p.Key, got, p.Theirs.Status)
		}
	}
	if n == 0 {
		return errors.New("no row planted for it")
	}
	return nil
}

func providerCaughtUp(res result) error {
	n := 0
	for _, p := range res.Plants {
		if p.Kind != KindSeatsUnderbilled {
			continue
		}
		n++
		if got := res.Theirs[p.subID()].Quantity; got != p.Ours.Seats {
			return fmt.Errorf("%s bills %d seats, we sold %d", p.subID(), got, p.Ours.Seats)
		}
	}
	if n == 0 {
		return errors.New("no row planted for it")
	}
	return nil
}

func pushedOnce(res result) error {
	applied := map[string]int{}
	for _, c := range res.Changes {
		applied[c.Subscription]++
	}
	retried := 0
	for _, p := range res.Plants {
		if p.Kind != KindSeatsUnderbilled {
			continue
		}
		if applied[p.subID()] != 1 {
			return fmt.Errorf("%s: the provider applied %d updates for one push (%d requests)",
				p.subID(), applied[p.subID()], res.Requests[p.subID()])
		}
		if p.LoseFirstAnswer {
			if res.Requests[p.subID()] < 2 {
				return fmt.Errorf("%s: the push whose answer was lost was not retried", p.subID())
			}
			retried++
		}
	}
	if retried == 0 {
		return errors.New("no push was retried, so this proves nothing")
	}
	return nil
}

func nothingElseChanged(res result) error {
	for _, p := range res.Plants {
		id := strconv.FormatInt(p.Key, 10)
		if p.Kind != KindMissedCancellation && p.Kind != KindMissedActivation && res.Ours[id] != p.Ours {
			return fmt.Errorf("row %s changed from %+v to %+v", id, p.Ours, res.Ours[id])
		}
		want := p.Theirs
		if want.Status == "" {
			if _, ok := res.Theirs[p.subID()]; ok {
				return fmt.Errorf("%s appeared at the provider", p.subID())
			}
			continue
		}
		want.ID = p.subID()
		if p.Kind == KindSeatsUnderbilled {
			want.Quantity = p.Ours.Seats
		}
		if res.Theirs[p.subID()] != want {
			return fmt.Errorf("%s changed from %+v to %+v", p.subID(), want, res.Theirs[p.subID()])
		}
	}
	return nil
}

func secondCycle(res result) error {
	if err := sameCounts(res.Cycle2.Verdicts, verdictCounts(res.Plants, func(p plant) reconcile.Verdict { return p.Second })); err != nil {
		return err
	}
	if res.Cycle2.NewFindings != 0 || res.Cycle2.NewCommands != 0 {
		return fmt.Errorf("%d new findings and %d new commands", res.Cycle2.NewFindings, res.Cycle2.NewCommands)
	}
	return nil
}
