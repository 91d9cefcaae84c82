package prommetrics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/prommetrics"
)

// oddKinds are the kinds of open findings when the external side sends what it likes: 300
// states nobody anticipated (the engine names a kind after the pair of states), hostile bytes
// among them, and one 10 KB state; with them, kinds the policy and the engine know.
func oddKinds(job string) map[string]int {
	kinds := map[string]int{"missed_success": 2, reconcile.KindInvalidRow: 1}
	for i := range 300 {
		kinds[fmt.Sprintf("unexpected:pending->%s_state_%d\x00\xff\n", job, i)] = 1
	}
	kinds["unexpected:pending->"+strings.Repeat("x", 10<<10)] = 1
	return kinds
}

// The report: 300 odd states gave 616 open_findings series over two jobs, and a 10 KB state a
// 10,260-byte label. The labels are the kinds known, then one bucket, whatever is sent.
func TestOpenFindingsHasABoundedSetOfShortLabels(t *testing.T) {
	reader := &fakeStatus{status: map[string]reconcile.Status{
		"a": {Job: "a", Now: t0, OpenFindings: oddKinds("a")},
		"b": {Job: "b", Now: t0, OpenFindings: oddKinds("b")},
	}}
	m, err := prommetrics.New(prommetrics.Options{Monitor: newMonitor(t, reconcile.MonitorConfig{Jobs: jobsOf(reader, reconcile.HealthPolicy{}, "a", "b")}), Kinds: policyKinds})
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := newRegistry(t, m).Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "reconcile_open_findings" {
			continue
		}
		for _, s := range mf.GetMetric() {
			kind := label(s, "kind")
			if len(kind) > prommetrics.MaxKindLength {
				t.Errorf("a kind label of %d bytes: %.40q...", len(kind), kind)
			}
			got[label(s, "job")+" "+kind] = s.GetGauge().GetValue()
		}
	}
	want := map[string]float64{
		"a missed_success": 2, "a invalid_row": 1, "a unexpected": 301,
		"b missed_success": 2, "b invalid_row": 1, "b unexpected": 301,
	}
	if len(got) != len(want) {
		t.Fatalf("%d open_findings series, want %d: %v", len(got), len(want), keys(got))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("open_findings{%s} = %v, want %v", k, got[k], v)
		}
	}
}

func keys(m map[string]float64) []string {
	var out []string
	for k := range m {
		out = append(out, fmt.Sprintf("%.60q", k))
	}
	return out
}

// idle is a BatchRunner with nothing to do: a fan-out's account job that health reads only.
type idle struct{}

func (idle) RunBatch(context.Context) (reconcile.Report, error) { return reconcile.Report{}, nil }

// A fan-out's health has a check per account, whose name is the account's id: 1,000 connected
// accounts were 1,000 health_check_ok series (more with every account that signs up), and an
// account id of 10 KB a label as long. The accounts' checks are one series, failing when one
// fails; the health endpoint names the account.
func TestAFanOutsAccountsAreNotASeriesEach(t *testing.T) {
	t.Parallel()
	accounts := []string{"acct_" + strings.Repeat("x", 10<<10)}
	status := map[string]reconcile.Status{}
	for i := range 1000 {
		accounts = append(accounts, fmt.Sprintf("acct_%04d", i))
	}
	for i, a := range accounts {
		lag := time.Minute
		if i == 500 {
			lag = 1000 * time.Hour // over the SLO: its check fails
		}
		status["payments@"+a] = reconcile.Status{Job: "payments@" + a, Now: t0, Lag: lag}
	}
	reader := &fakeStatus{status: status}
	fan, err := reconcile.NewFanOut(reconcile.FanOutConfig{Name: "payments@connect",
		Accounts: func(context.Context) ([]string, error) { return accounts, nil },
		Build: func(a string) ([]reconcile.FanOutJob, error) {
			return []reconcile.FanOutJob{{Job: "payments@" + a, Batches: idle{}, Status: reader}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := prommetrics.New(prommetrics.Options{Monitor: newMonitor(t, reconcile.MonitorConfig{Jobs: []reconcile.MonitorJob{
		{Name: "payments@connect", Judge: fan.Health}}})})
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := newRegistry(t, m).Gather()
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]float64{}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if len(l.GetValue()) > 200 {
					t.Errorf("%s: label %s of %d bytes: %.40q...", mf.GetName(), l.GetName(), len(l.GetValue()), l.GetValue())
				}
			}
			if mf.GetName() == "reconcile_health_check_ok" {
				checks[label(s, "check")] = s.GetGauge().GetValue()
			}
		}
	}
	if want := map[string]float64{"account:*": 0}; len(checks) != len(want) || checks["account:*"] != 0 {
		t.Errorf("%d health_check_ok series: %v...; want %v", len(checks), keys(checks)[:min(len(checks), 3)], want)
	}
}
