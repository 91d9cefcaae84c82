package console

import (
	"fmt"
	"slices"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/tieout"
)

// CoreKinds are the meanings of the kinds the engine itself records, whatever the gateway;
// the console knows them without Config.Kinds. They are reconcile.CoreKinds().
var CoreKinds = reconcile.CoreKinds()

// kindTable is the console's kinds: CoreKinds, the payout tie-out's (tieout.Kinds), then
// Config.Kinds (which may redefine either), in order.
type kindTable struct {
	list []reconcile.KindInfo
	by   map[string]reconcile.KindInfo
}

func newKindTable(extra []reconcile.KindInfo) (kindTable, error) {
	t := kindTable{by: map[string]reconcile.KindInfo{}}
	known := slices.Concat(CoreKinds, tieout.Kinds())
	for i, k := range slices.Concat(known, extra) {
		switch {
		case k.Kind == "" || len(k.Kind) > maxField || !plainText(k.Kind, false):
			return t, fmt.Errorf("console: Config.Kinds[%d]: the kind %q is empty, overlong or has control characters", i-len(known), k.Kind)
		case !plainText(k.Meaning, false):
			return t, fmt.Errorf("console: Config.Kinds[%d]: the meaning of %q is not one line of text", i-len(known), k.Kind)
		}
		if _, seen := t.by[k.Kind]; seen {
			t.list = slices.DeleteFunc(t.list, func(o reconcile.KindInfo) bool { return o.Kind == k.Kind })
		}
		t.by[k.Kind] = k
		t.list = append(t.list, k)
	}
	return t, nil
}

// meaning is kind's meaning, or "" for a kind the console does not know.
func (t kindTable) meaning(kind string) string { return t.by[kind].Meaning }

// money reports whether kind involves money. A kind the console does not know does not.
func (t kindTable) money(kind string) bool { return t.by[kind].Money }

// kindOption is one choice of the kind pick list.
type kindOption struct {
	Value, Label, Meaning string
}

// options are the kind pick list's choices: every kind the console knows, sorted, and
// selected (the filter's) if it is not one of them, so that the list still shows it.
func (t kindTable) options(selected string) []kindOption {
	kinds := make([]string, 0, len(t.list)+1)
	for _, k := range t.list {
		kinds = append(kinds, k.Kind)
	}
	if selected != "" && !slices.Contains(kinds, selected) {
		kinds = append(kinds, selected)
	}
	slices.Sort(kinds)
	opts := make([]kindOption, len(kinds))
	for i, k := range kinds {
		opts[i] = kindOption{Value: k, Label: k, Meaning: t.meaning(k)}
		if m := opts[i].Meaning; m != "" {
			opts[i].Label = k + " — " + m
		}
	}
	return opts
}
