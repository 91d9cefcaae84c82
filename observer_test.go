package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
)

func TestObserversTellEveryObserverOfEveryCallAndBatch(t *testing.T) {
	s := newStore(newClock(), 6, always("paid"))
	gw := newFakeGateway(0, func(_ context.Context, call int, _ string) (string, error) {
		if call == 2 {
			return "", reconcile.ErrNotFound
		}
		return "succeeded", nil
	})
	metrics, tracing := &recordingObserver{calls: map[string]int{}}, &recordingObserver{calls: map[string]int{}}
	var unset *recordingObserver // a pointer never set up is skipped, not called
	cfg := config(s, gw)
	cfg.Observer = reconcile.Observers(nil, metrics, unset, reconcile.Observers(tracing))
	if _, err := reconcile.RunBatch(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]*recordingObserver{"metrics": metrics, "tracing": tracing} {
		if o.calls[reconcile.ClassOK] != 5 || o.calls[reconcile.ClassNotFound] != 1 || len(o.batches) != 1 || o.batches[0].Scanned != 6 {
			t.Errorf("%s saw calls %v and batches %+v; want 5 ok, 1 not_found, one batch of 6", name, o.calls, o.batches)
		}
	}
}

func TestObserversOfNoneOrOneAddNothing(t *testing.T) {
	var unset *recordingObserver
	if o := reconcile.Observers(); o != nil {
		t.Errorf("Observers() = %v; want nil, no observer", o)
	}
	if o := reconcile.Observers(nil, unset); o != nil {
		t.Errorf("Observers(nil, nil pointer) = %v; want nil", o)
	}
	one := &recordingObserver{calls: map[string]int{}}
	if o := reconcile.Observers(nil, one); o != one {
		t.Errorf("Observers(nil, o) = %v; want o itself", o)
	}
}

// orderObserver appends its name to a shared log on every call.
type orderObserver struct {
	name string
	log  *[]string
}

func (o orderObserver) GatewayCalls(string, int, time.Duration, string) {
	*o.log = append(*o.log, o.name+" call")
}
func (o orderObserver) BatchDone(string, reconcile.Report, error) {
	*o.log = append(*o.log, o.name+" batch")
}

func TestObserversCallInTheOrderGivenNestedOrNot(t *testing.T) {
	var log []string
	a, b, c := orderObserver{"a", &log}, orderObserver{"b", &log}, orderObserver{"c", &log}
	o := reconcile.Observers(a, reconcile.Observers(b, c))
	o.GatewayCalls("job", 1, time.Millisecond, reconcile.ClassOK)
	o.BatchDone("job", reconcile.Report{}, nil)
	want := []string{"a call", "b call", "c call", "a batch", "b batch", "c batch"}
	if len(log) != len(want) {
		t.Fatalf("calls %v; want %v", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("calls %v; want %v", log, want)
		}
	}
}
