package tieout

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
)

// pagedLister lists its groups in one page and each group's members perPage at a time.
type pagedLister struct {
	groups  []Group
	members map[string][]Member
	perPage int
	fail    error
	stuck   bool
	mu      sync.Mutex
	calls   int
}

func (l *pagedLister) Groups(ctx context.Context, pos string) (GroupPage, error) {
	l.mu.Lock()
	l.calls++
	l.mu.Unlock()
	return GroupPage{Groups: l.groups, Next: "g" + strconv.Itoa(len(l.groups)), End: true}, nil
}

func (l *pagedLister) Members(ctx context.Context, g Group, after string) (MemberPage, error) {
	l.mu.Lock()
	l.calls++
	l.mu.Unlock()
	if l.fail != nil {
		return MemberPage{}, l.fail
	}
	all := l.members[g.ID]
	start := 0
	if after != "" {
		start, _ = strconv.Atoi(after)
	}
	end := min(start+l.perPage, len(all))
	next := strconv.Itoa(end)
	if l.stuck {
		next = after
	}
	return MemberPage{Members: all[start:end], Next: next, More: end < len(all)}, nil
}

// countingLedger counts Booked calls and the keys asked.
type countingLedger struct {
	MemoryLedger
	mu    sync.Mutex
	calls int
	keys  []Key
}

func (l *countingLedger) Booked(ctx context.Context, keys []Key) ([]Booked, error) {
	l.mu.Lock()
	l.calls++
	l.keys = append(l.keys, keys...)
	l.mu.Unlock()
	return l.MemoryLedger.Booked(ctx, keys)
}

func findingsOf(t *testing.T, s *memstore.Store[string, string], state string) []string {
	t.Helper()
	fs, err := s.ListFindings(context.Background(), reconcile.FindingQuery{State: state})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, f.RecordID+" "+f.Kind)
	}
	return out
}

// refunds is a payout of n refunds of pi_1, all booked but the last, and its own line.
func refunds(n int) (Group, []Member, []Booked) {
	g := payout(int64(-100 * n))
	var ms []Member
	var bs []Booked
	for i := range n {
		ms = append(ms, Member{ID: "txn_" + strconv.Itoa(i), Type: "refund", Kind: KindRefund, SourceID: "re_" + strconv.Itoa(i),
			BookedID: "pi_1", Amount: -100, Net: -100, Currency: "usd", SourceAmount: -100, SourceCurrency: "usd"})
		if i < n-1 {
			bs = append(bs, book(KindRefund, "pi_1", -100))
		}
	}
	return g, append(ms, own(g)), bs
}

func TestAStepAsksTheLedgerOncePerPageOfMembersAndEachKeyOnce(t *testing.T) {
	g, ms, bs := refunds(250)
	lister := &pagedLister{groups: []Group{g}, members: map[string][]Member{g.ID: ms}, perPage: 100}
	ledger := &countingLedger{}
	ledger.Book(bs...)
	store := memstore.New[string, string](memstore.Options{})
	step, err := NewStep(StepConfig{Job: "payouts", Lane: "tieout", Lister: lister, Ledger: ledger, Sink: store})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := step.RunBatch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// One ledger call for the first page (the only key), none for the pages whose key was asked.
	if ledger.calls != 1 || len(ledger.keys) != 1 {
		t.Errorf("ledger calls %d, keys %v; want 1 call for 1 key", ledger.calls, ledger.keys)
	}
	if rep.GatewayCalls != 1+3 || lister.calls != 4 {
		t.Errorf("report counts %d calls, lister %d; want 4 (groups, 3 pages)", rep.GatewayCalls, lister.calls)
	}
	if got := findingsOf(t, store, ""); !slices.Equal(got, []string{"txn_249 unbooked_refund"}) {
		t.Errorf("findings = %v", got)
	}
	if !rep.Wrapped || rep.Scanned != 1 || rep.NewFindings != 1 || rep.NewCommands != 1 {
		t.Errorf("report = %+v", rep)
	}
	cur, err := store.ReadLane(context.Background(), "payouts", "tieout")
	if err != nil || cur.Position != "g1" {
		t.Errorf("position = %+v, %v; want g1", cur, err)
	}
}

func TestAStepTyingAPayoutOutAgainOpensNothingNewNorWhatAPersonResolved(t *testing.T) {
	ctx := context.Background()
	g, ms, bs := refunds(3)
	lister := &pagedLister{groups: []Group{g}, members: map[string][]Member{g.ID: ms}, perPage: 100}
	var ledger MemoryLedger
	ledger.Book(bs...)
	store := memstore.New[string, string](memstore.Options{})
	step, err := NewStep(StepConfig{Job: "payouts", Lane: "tieout", Lister: lister, Ledger: &ledger, Sink: store})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		rep, err := step.RunBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := 1 - i; rep.NewFindings != want || rep.NewCommands != want {
			t.Errorf("run %d: new findings %d, commands %d; want %d", i, rep.NewFindings, rep.NewCommands, want)
		}
	}
	fs, _ := store.ListFindings(ctx, reconcile.FindingQuery{})
	if len(fs) != 1 {
		t.Fatalf("findings = %v", fs)
	}
	if err := store.ResolveFinding(ctx, fs[0].ID, reconcile.Resolution{By: "finance", As: reconcile.ResolutionFixed, Note: "booked by hand"}); err != nil {
		t.Fatal(err)
	}
	rep, err := step.RunBatch(ctx)
	if err != nil || rep.NewFindings != 0 {
		t.Errorf("after a person resolved it: %+v, %v", rep, err)
	}
	if got := findingsOf(t, store, ""); len(got) != 0 {
		t.Errorf("open findings = %v", got)
	}
}

func TestAStepThatFailsWritesNothing(t *testing.T) {
	ctx := context.Background()
	g, ms, _ := refunds(3)
	for name, lister := range map[string]*pagedLister{
		"a member listing that fails":         {fail: reconcile.ErrUnavailable},
		"a member listing that does not move": {stuck: true, perPage: 1},
		"a group with too many members":       {perPage: 2},
	} {
		t.Run(name, func(t *testing.T) {
			lister.groups, lister.members = []Group{g}, map[string][]Member{g.ID: ms}
			store := memstore.New[string, string](memstore.Options{})
			step, err := NewStep(StepConfig{Job: "payouts", Lane: "tieout", Lister: lister, Ledger: &MemoryLedger{}, Sink: store, MaxMembers: 3})
			if err != nil {
				t.Fatal(err)
			}
			_, err = step.RunBatch(ctx)
			if err == nil || !strings.HasPrefix(err.Error(), "tieout: payouts/tieout: group po_1: ") {
				t.Errorf("err = %v", err)
			}
			if lister.fail != nil && !errors.Is(err, reconcile.ErrUnavailable) {
				t.Errorf("err = %v, not wrapping the lister's", err)
			}
			if got := findingsOf(t, store, reconcile.FindingsAll); len(got) != 0 {
				t.Errorf("findings = %v", got)
			}
			if cur, _ := store.ReadLane(ctx, "payouts", "tieout"); cur.Position != "" {
				t.Errorf("position moved to %q", cur.Position)
			}
		})
	}
}

func TestAStepRecordsHostileLinesAsFindingsAStoreKeeps(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("x", 10_000)
	g := payout(3)
	ms := []Member{
		{ID: "txn_\x00nul", Type: "charge\x00", Kind: KindPayment, SourceID: "ch_1", Amount: 1, Net: 1, Currency: "usd"},
		{ID: "txn_\xff\xfe", Type: "\xff", Kind: "", SourceID: "x", Amount: 1, Net: 1, Currency: "usd"},
		{ID: "txn_long", Type: long, Kind: "", SourceID: long, Amount: 1, Net: 1, Currency: "usd"},
	}
	lister := &pagedLister{groups: []Group{g}, members: map[string][]Member{g.ID: ms}, perPage: 100}
	store := memstore.New[string, string](memstore.Options{})
	step, err := NewStep(StepConfig{Job: "payouts", Lane: "tieout", Lister: lister, Ledger: &MemoryLedger{}, Sink: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := step.RunBatch(ctx); err != nil {
		t.Fatal(err)
	}
	// The lines without a usable id are not summed: the payout does not hold as listed.
	want := []string{"po_1 payout_sum_mismatch", "po_1#0 invalid_line", "po_1#1 invalid_line", "txn_long unknown_line_type"}
	if got := findingsOf(t, store, ""); !slices.Equal(got, want) {
		t.Errorf("findings = %q, want %q", got, want)
	}
}

func TestAnUnpaidStepFindsSettledRecordsNoPayoutCarried(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	var ledger MemoryLedger
	old, recent := now.Add(-10*24*time.Hour), now.Add(-24*time.Hour)
	ledger.Book(
		Booked{Kind: KindPayment, ID: "pi_paid_out", Amount: 100, Currency: "usd", SettledAt: old, Group: "po_1"},
		Booked{Kind: KindPayment, ID: "pi_never", Amount: 200, Currency: "usd", SettledAt: old},
		Booked{Kind: KindPayment, ID: "pi_recent", Amount: 300, Currency: "usd", SettledAt: recent},
		Booked{Kind: KindPayment, ID: "pi_pending", Amount: 400, Currency: "usd"},
		Booked{Kind: KindRefund, ID: "pi_avail", Amount: -50, Currency: "usd", SettledAt: recent, AvailableOn: old},
	)
	store := memstore.New[string, string](memstore.Options{})
	step, err := NewUnpaidStep(UnpaidConfig{Job: "payouts", Lane: "unpaid", Ledger: &ledger, Sink: store, Limit: 1, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	var wrapped []bool
	for range 3 {
		rep, err := step.RunBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wrapped = append(wrapped, rep.Wrapped)
	}
	if !slices.Equal(wrapped, []bool{false, false, true}) {
		t.Errorf("wrapped = %v", wrapped)
	}
	if got := findingsOf(t, store, ""); !slices.Equal(got, []string{"pi_never never_paid_out", "pi_avail never_paid_out"}) {
		t.Errorf("findings = %v", got)
	}
	if cur, _ := store.ReadLane(ctx, "payouts", "unpaid"); cur.Position != "" {
		t.Errorf("after a pass the position is %q, want the start", cur.Position)
	}
}

// A record settled or available more than reconcile.MaxClockSkew ahead of the clock (a skewed
// clock, a bad import, a hostile writer) would never fall before now minus the grace: it is a
// settled_in_future finding, once, and the walk goes past it.
func TestAnUnpaidStepReportsRecordsSettledInTheFuture(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	old := now.Add(-10 * 24 * time.Hour)
	var ledger MemoryLedger
	ledger.Book(
		Booked{Kind: KindPayment, ID: "pi_future", Amount: 100, Currency: "usd", SettledAt: now.Add(time.Hour)},
		Booked{Kind: KindPayment, ID: "pi_skewed", Amount: 200, Currency: "usd", SettledAt: now.Add(reconcile.MaxClockSkew)},
		Booked{Kind: KindPayment, ID: "pi_avail_future", Amount: 300, Currency: "usd", SettledAt: old, AvailableOn: now.Add(365 * 24 * time.Hour)},
		Booked{Kind: KindRefund, ID: "pi_settled_future", Amount: -50, Currency: "usd", SettledAt: now.Add(24 * time.Hour), AvailableOn: old},
		Booked{Kind: KindPayment, ID: "pi_far", Amount: 400, Currency: "usd", SettledAt: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)},
		Booked{Kind: KindPayment, ID: "pi_in_payout", Amount: 500, Currency: "usd", SettledAt: now.Add(time.Hour), Group: "po_1"},
		Booked{Kind: KindPayment, ID: "pi_never", Amount: 600, Currency: "usd", SettledAt: old},
	)
	store := memstore.New[string, string](memstore.Options{})
	step, err := NewUnpaidStep(UnpaidConfig{Job: "payouts", Lane: "unpaid", Ledger: &ledger, Sink: store, Limit: 2, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	opened := 0
	for pass := range 2 {
		for {
			rep, err := step.RunBatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if pass == 1 {
				opened += rep.NewFindings
			}
			if rep.Wrapped {
				break
			}
		}
	}
	want := []string{"pi_future settled_in_future", "pi_avail_future settled_in_future", "pi_settled_future settled_in_future",
		"pi_far settled_in_future", "pi_never never_paid_out"}
	if got := findingsOf(t, store, ""); !slices.Equal(got, want) {
		t.Errorf("findings = %v, want %v", got, want)
	}
	if opened != 0 {
		t.Errorf("the second pass opened %d findings, want none (once)", opened)
	}
}

func TestNewStepChecksItsConfig(t *testing.T) {
	store := memstore.New[string, string](memstore.Options{})
	for _, cfg := range []StepConfig{
		{Lane: "l", Lister: &pagedLister{}, Ledger: &MemoryLedger{}, Sink: store},
		{Job: "j", Lane: "l", Ledger: &MemoryLedger{}, Sink: store},
		{Job: "j", Lane: "l", Lister: &pagedLister{}, Sink: store},
		{Job: "j", Lane: "l", Lister: &pagedLister{}, Ledger: &MemoryLedger{}},
		{Job: "j", Lane: "l", Lister: &pagedLister{}, Ledger: &MemoryLedger{}, Sink: store, MaxMembers: -1},
	} {
		if _, err := NewStep(cfg); err == nil {
			t.Errorf("NewStep(%+v) accepted", cfg)
		}
	}
	if _, err := NewUnpaidStep(UnpaidConfig{Job: "j", Lane: "l", Ledger: &MemoryLedger{}, Sink: store, Grace: -1}); err == nil {
		t.Error("a negative grace accepted")
	}
}
