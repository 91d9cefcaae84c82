package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
)

// laneFeed is a Feed whose answer the test scripts; it records the positions it was asked from.
type laneFeed struct {
	next func(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[string], error)

	mu  sync.Mutex
	pos []string
}

func (f *laneFeed) Next(ctx context.Context, pos string, wait func(context.Context) error) (reconcile.FeedPage[string], error) {
	f.mu.Lock()
	f.pos = append(f.pos, pos)
	f.mu.Unlock()
	return f.next(ctx, pos, wait)
}

func (f *laneFeed) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pos)
}

// lanePage is a feed that makes calls external calls (each after wait) and returns page.
func lanePage(calls int, page reconcile.FeedPage[string]) *laneFeed {
	return &laneFeed{next: func(ctx context.Context, _ string, wait func(context.Context) error) (reconcile.FeedPage[string], error) {
		for range calls {
			if err := wait(ctx); err != nil {
				return reconcile.FeedPage[string]{}, err
			}
		}
		return page, nil
	}}
}

// laneFailing is a feed whose first call is answered with err.
func laneFailing(err error) *laneFeed {
	return &laneFeed{next: func(ctx context.Context, _ string, wait func(context.Context) error) (reconcile.FeedPage[string], error) {
		if werr := wait(ctx); werr != nil {
			return reconcile.FeedPage[string]{}, werr
		}
		return reconcile.FeedPage[string]{}, err
	}}
}

// laneObjects builds a page of objects from external id and state pairs.
func laneObjects(idStates ...string) []reconcile.FeedObject[string] {
	var out []reconcile.FeedObject[string]
	for i := 0; i+1 < len(idStates); i += 2 {
		out = append(out, reconcile.FeedObject[string]{ExternalID: idStates[i], Object: idStates[i+1]})
	}
	return out
}

// laneMatcher is the local table: it returns the rows whose external id is asked for, in
// table order, plus extra whatever is asked.
type laneMatcher struct {
	rows  []reconcile.Record[string]
	extra []reconcile.Record[string]
	err   error
	panic any

	mu   sync.Mutex
	reqs []reconcile.MatchRequest
}

func (m *laneMatcher) Match(ctx context.Context, req reconcile.MatchRequest) (reconcile.MatchResult[string], error) {
	rows, err := m.match(ctx, req)
	return reconcile.MatchResult[string]{Rows: rows}, err
}

func (m *laneMatcher) match(_ context.Context, req reconcile.MatchRequest) ([]reconcile.Record[string], error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	if m.panic != nil {
		panic(m.panic)
	}
	if m.err != nil {
		return nil, m.err
	}
	var out []reconcile.Record[string]
	for _, r := range m.rows {
		if slices.Contains(req.ExternalIDs, r.ExternalID) {
			out = append(out, r)
		}
	}
	return append(out, m.extra...), nil
}

func (m *laneMatcher) requests() []reconcile.MatchRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

// laneRow is a local row of id with external id ext in state local.
func laneRow(id, ext, local string) reconcile.Record[string] {
	return reconcile.Record[string]{Key: id, ID: id, ExternalID: ext, Local: local}
}

// laneSink records commits; it answers ReadLane with cur.
type laneSink struct {
	cur       reconcile.Cursor
	readErr   error
	commitErr error
	res       reconcile.CommitResult

	mu      sync.Mutex
	commits []reconcile.LaneCommit
}

func (s *laneSink) ReadLane(_ context.Context, _, _ string) (reconcile.Cursor, error) {
	return s.cur, s.readErr
}

func (s *laneSink) CommitLane(_ context.Context, c reconcile.LaneCommit) (reconcile.CommitResult, error) {
	if s.commitErr != nil {
		return reconcile.CommitResult{}, s.commitErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commits = append(s.commits, c)
	return s.res, nil
}

func (s *laneSink) committed() []reconcile.LaneCommit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.commits)
}

// laneLimiter answers every Wait with err and records the Throttle calls.
type laneLimiter struct {
	err error

	mu        sync.Mutex
	throttles []time.Duration
}

func (l *laneLimiter) Wait(ctx context.Context) error {
	if l.err != nil {
		return l.err
	}
	return ctx.Err()
}

func (l *laneLimiter) Throttle(retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.throttles = append(l.throttles, retryAfter)
}

func (l *laneLimiter) throttled() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.throttles)
}

// laneObserver records what a lane reports.
type laneObserver struct {
	mu      sync.Mutex
	calls   []string // "job calls class"
	batches []string // job names
	reports []reconcile.Report
	errs    []error
}

func (o *laneObserver) GatewayCalls(job string, calls int, _ time.Duration, class string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, fmt.Sprintf("%s %d %s", job, calls, class))
}

func (o *laneObserver) BatchDone(job string, rep reconcile.Report, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.batches = append(o.batches, job)
	o.reports = append(o.reports, rep)
	o.errs = append(o.errs, err)
}

var (
	laneMissed  = reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success", Command: "ApplyPaymentSucceeded"}
	laneInSync  = reconcile.Decision{Verdict: reconcile.InSync}
	laneUnknown = reconcile.Decision{Verdict: reconcile.Unverifiable}
	laneOdd     = reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: "unexpected"}
)

// laneClassifier is a small payment policy over local and external status strings.
var laneClassifier = reconcile.ClassifierFunc[string, string](func(local, external string) reconcile.Decision {
	switch {
	case local == "pending" && external == "succeeded":
		return laneMissed
	case local == "paid" && external == "succeeded":
		return laneInSync
	case external == "unknown":
		return laneUnknown
	}
	return laneOdd
})

func laneConfig(f reconcile.Feed[string], m reconcile.Matcher[string], s reconcile.LaneSink) reconcile.LaneConfig[string, string] {
	return reconcile.LaneConfig[string, string]{Job: "payments", Lane: "events", Feed: f, Matcher: m, Sink: s, Classifier: laneClassifier}
}

func newLane[L, E any](t *testing.T, cfg reconcile.LaneConfig[L, E]) *reconcile.Lane[L, E] {
	t.Helper()
	l, err := reconcile.NewLane(cfg)
	if err != nil {
		t.Fatalf("NewLane: %v", err)
	}
	return l
}

var _ reconcile.BatchRunner = (*reconcile.Lane[string, string])(nil)

func TestNewLaneRejectsAnIncompleteConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*reconcile.LaneConfig[string, string])
		want   string
	}{
		{"an empty job", func(c *reconcile.LaneConfig[string, string]) { c.Job = "" }, "Job is empty"},
		{"an empty lane name", func(c *reconcile.LaneConfig[string, string]) { c.Lane = "" }, "Lane is empty"},
		{"no feed", func(c *reconcile.LaneConfig[string, string]) { c.Feed = nil }, "Feed is nil"},
		{"no matcher", func(c *reconcile.LaneConfig[string, string]) { c.Matcher = nil }, "Matcher is nil"},
		{"no sink", func(c *reconcile.LaneConfig[string, string]) { c.Sink = nil }, "Sink is nil"},
		{"no classifier", func(c *reconcile.LaneConfig[string, string]) { c.Classifier = nil }, "Classifier is nil"},
		{"a nil *rate.Limiter", func(c *reconcile.LaneConfig[string, string]) { c.Limiter = (*rate.Limiter)(nil) }, "Limiter is a nil *rate.Limiter"},
		{"a nil *AdaptiveLimiter", func(c *reconcile.LaneConfig[string, string]) { c.Limiter = (*reconcile.AdaptiveLimiter)(nil) }, "Limiter is a nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := laneConfig(lanePage(0, reconcile.FeedPage[string]{}), &laneMatcher{}, &laneSink{})
			tt.change(&cfg)
			l, err := reconcile.NewLane(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewLane = %v, %v; want an error mentioning %q", l, err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "reconcile: ") {
				t.Errorf("error %q does not start with the package name", err)
			}
		})
	}
	t.Run("a config with every required field and no limiter is accepted", func(t *testing.T) {
		if _, err := reconcile.NewLane(laneConfig(lanePage(0, reconcile.FeedPage[string]{}), &laneMatcher{}, &laneSink{})); err != nil {
			t.Fatal(err)
		}
	})
}

// laneIntent is an external object that is a struct, secrets and all: fmt.Sprint would record
// it whole.
type laneIntent struct {
	Status       string
	ClientSecret string
}

// laneLocal is a local row that is a struct.
type laneLocal struct {
	Status string
	Email  string
}

func TestNewLaneWantsStateFunctionsForStructTypes(t *testing.T) {
	t.Parallel()
	base := func() reconcile.LaneConfig[laneLocal, laneIntent] {
		return reconcile.LaneConfig[laneLocal, laneIntent]{
			Job: "payments", Lane: "events",
			Feed: &structFeed{}, Matcher: &structMatcher{}, Sink: &laneSink{},
			Classifier: reconcile.ClassifierFunc[laneLocal, laneIntent](func(laneLocal, laneIntent) reconcile.Decision { return laneInSync }),
		}
	}
	localState := func(l laneLocal) string { return l.Status }
	externalState := func(e laneIntent) string { return e.Status }
	rules, err := reconcile.NewRuleTable(localState, externalState)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		change  func(*reconcile.LaneConfig[laneLocal, laneIntent])
		wantErr string // empty: accepted
	}{
		{"a struct E without ExternalState is refused", func(c *reconcile.LaneConfig[laneLocal, laneIntent]) { c.LocalState = localState }, "ExternalState"},
		{"a struct L without LocalState is refused", func(c *reconcile.LaneConfig[laneLocal, laneIntent]) { c.ExternalState = externalState }, "LocalState"},
		{"both functions given are accepted", func(c *reconcile.LaneConfig[laneLocal, laneIntent]) {
			c.LocalState, c.ExternalState = localState, externalState
		}, ""},
		{"a classifier that names the states is enough", func(c *reconcile.LaneConfig[laneLocal, laneIntent]) { c.Classifier = rules }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base()
			tt.change(&cfg)
			_, err := reconcile.NewLane(cfg)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("NewLane: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("NewLane = %v; want an error mentioning %s", err, tt.wantErr)
			}
		})
	}
}

type structFeed struct{}

func (structFeed) Next(context.Context, string, func(context.Context) error) (reconcile.FeedPage[laneIntent], error) {
	return reconcile.FeedPage[laneIntent]{Objects: []reconcile.FeedObject[laneIntent]{
		{ExternalID: "pi_1", Object: laneIntent{Status: "succeeded", ClientSecret: "pi_1_secret_hush"}},
	}}, nil
}

type structMatcher struct{}

func (structMatcher) Match(context.Context, reconcile.MatchRequest) (reconcile.MatchResult[laneLocal], error) {
	return reconcile.MatchResult[laneLocal]{Rows: []reconcile.Record[laneLocal]{{ID: "1", ExternalID: "pi_1", Local: laneLocal{Status: "pending", Email: "a@example.com"}}}}, nil
}

func TestALaneRecordsOnlyTheNamedStateOfStructs(t *testing.T) {
	t.Parallel()
	sink := &laneSink{}
	rules, err := reconcile.NewRuleTable(func(l laneLocal) string { return l.Status }, func(e laneIntent) string { return e.Status },
		reconcile.Rule[laneLocal, laneIntent]{Local: []string{"pending"}, External: []string{"succeeded"}, Decision: laneMissed})
	if err != nil {
		t.Fatal(err)
	}
	l := newLane(t, reconcile.LaneConfig[laneLocal, laneIntent]{Job: "payments", Lane: "events",
		Feed: structFeed{}, Matcher: structMatcher{}, Sink: sink, Classifier: rules})
	if _, err := l.RunBatch(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := sink.committed()
	if len(c) != 1 || len(c[0].Outcomes) != 1 {
		t.Fatalf("commits %+v; want one with one outcome", c)
	}
	if o := c[0].Outcomes[0]; o.Local != "pending" || o.External != "succeeded" || !reflect.DeepEqual(o.Decision, laneMissed) {
		t.Fatalf("outcome %+v; want the rule table's state names and decision", o)
	}
}

// graceFeed is a feed that names the grace its lane's rows need, as a reverse scan does.
type graceFeed struct {
	*laneFeed
	grace time.Duration
}

func (f graceFeed) LaneGrace() time.Duration { return f.grace }

func TestNewLaneGraceReachesTheMatcher(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		feedGrace time.Duration // the feed is a LaneGracer of this grace, if not zero
		grace     time.Duration
		want      time.Duration
	}{
		{"zero means DefaultLaneGrace", 0, 0, reconcile.DefaultLaneGrace},
		{"a negative grace turns it off", 0, -time.Second, 0},
		{"a positive grace is kept", 0, 5 * time.Minute, 5 * time.Minute},
		{"zero over a feed that names its grace means the feed's", reconcile.DefaultGrace, 0, reconcile.DefaultGrace},
		{"a grace set overrules the feed's", reconcile.DefaultGrace, 2 * time.Minute, 2 * time.Minute},
		{"a feed's negative grace turns it off", -time.Second, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &laneMatcher{}
			var feed reconcile.Feed[string] = lanePage(1, reconcile.FeedPage[string]{Objects: laneObjects("pi_1", "succeeded")})
			if tt.feedGrace != 0 {
				feed = graceFeed{feed.(*laneFeed), tt.feedGrace}
			}
			cfg := laneConfig(feed, m, &laneSink{})
			cfg.Grace = tt.grace
			if _, err := newLane(t, cfg).RunBatch(context.Background()); err != nil {
				t.Fatal(err)
			}
			reqs := m.requests()
			if len(reqs) != 1 || reqs[0].Grace != tt.want || reqs[0].Job != "payments" {
				t.Fatalf("match requests %+v; want one for job payments with grace %v", reqs, tt.want)
			}
		})
	}
	if reconcile.DefaultLaneGrace >= reconcile.DefaultGrace {
		t.Errorf("DefaultLaneGrace %v is not shorter than the sweep's %v", reconcile.DefaultLaneGrace, reconcile.DefaultGrace)
	}
}

func TestALaneStepClassifiesEachObjectAgainstItsRows(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 2, 27, 9, 30, 0, 0, time.FixedZone("CET", 3600))
	recent := laneRow("2", "pi_2", "pending")
	recent.Recent = true
	tests := []struct {
		name          string
		objects       []reconcile.FeedObject[string]
		rows          []reconcile.Record[string]
		reportMissing bool
		want          []reconcile.Outcome
		// wantDetail, per outcome, are substrings its Detail must contain; "-created" means
		// it must not mention a creation time.
		wantDetail map[int][]string
	}{
		{
			name:    "a pair that drifted is classified and verified",
			objects: laneObjects("pi_1", "succeeded"),
			rows:    []reconcile.Record[string]{laneRow("1", "pi_1", "pending")},
			want: []reconcile.Outcome{{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "succeeded",
				Decision: laneMissed, Verified: true}},
		},
		{
			name:    "a pair in sync is verified with no finding",
			objects: laneObjects("pi_1", "succeeded"),
			rows:    []reconcile.Record[string]{laneRow("1", "pi_1", "paid")},
			want: []reconcile.Outcome{{RecordID: "1", ExternalID: "pi_1", Local: "paid", External: "succeeded",
				Decision: laneInSync, Verified: true}},
		},
		{
			name:    "an unverifiable verdict does not count as verified",
			objects: laneObjects("pi_1", "unknown"),
			rows:    []reconcile.Record[string]{laneRow("1", "pi_1", "paid")},
			want: []reconcile.Outcome{{RecordID: "1", ExternalID: "pi_1", Local: "paid", External: "unknown",
				Decision: laneUnknown}},
		},
		{
			name:    "a recent row is in flight, not classified and not verified",
			objects: laneObjects("pi_1", "succeeded", "pi_2", "succeeded"),
			rows:    []reconcile.Record[string]{laneRow("1", "pi_1", "pending"), recent},
			want: []reconcile.Outcome{
				{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "succeeded", Decision: laneMissed, Verified: true},
				{RecordID: "2", ExternalID: "pi_2", Local: "pending", Decision: reconcile.Decision{Verdict: reconcile.InFlight}},
			},
		},
		{
			name:    "two rows sharing an external id are each judged",
			objects: laneObjects("pi_1", "succeeded"),
			rows:    []reconcile.Record[string]{laneRow("1", "pi_1", "pending"), laneRow("7", "pi_1", "paid")},
			want: []reconcile.Outcome{
				{RecordID: "1", ExternalID: "pi_1", Local: "pending", External: "succeeded", Decision: laneMissed, Verified: true},
				{RecordID: "7", ExternalID: "pi_1", Local: "paid", External: "succeeded", Decision: laneInSync, Verified: true},
			},
		},
		{
			name:    "an object no row refers to is skipped without ReportMissing",
			objects: laneObjects("pi_1", "succeeded", "pi_9", "succeeded"),
			rows:    []reconcile.Record[string]{laneRow("1", "pi_1", "paid")},
			want: []reconcile.Outcome{{RecordID: "1", ExternalID: "pi_1", Local: "paid", External: "succeeded",
				Decision: laneInSync, Verified: true}},
		},
		{
			name: "with ReportMissing an object no row refers to is a missing_locally review under its external id",
			objects: []reconcile.FeedObject[string]{
				{ExternalID: "pi_1", Object: "succeeded"},
				{ExternalID: "pi_9", Object: "succeeded", CreatedAt: created},
			},
			rows:          []reconcile.Record[string]{laneRow("1", "pi_1", "paid")},
			reportMissing: true,
			want: []reconcile.Outcome{
				{RecordID: "1", ExternalID: "pi_1", Local: "paid", External: "succeeded", Decision: laneInSync, Verified: true},
				{RecordID: "pi_9", ExternalID: "pi_9", External: "succeeded", NotARow: true, Once: true,
					Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: reconcile.KindMissingLocally}},
			},
			wantDetail: map[int][]string{1: {"2026-02-27T08:30:00Z"}},
		},
		{
			name:          "a missing object without a creation time mentions none",
			objects:       laneObjects("pi_9", "canceled"),
			reportMissing: true,
			want: []reconcile.Outcome{{RecordID: "pi_9", ExternalID: "pi_9", External: "canceled", NotARow: true, Once: true,
				Decision: reconcile.Decision{Verdict: reconcile.NeedsReview, Kind: reconcile.KindMissingLocally}}},
			wantDetail: map[int][]string{0: {"-created"}},
		},
		{
			name:          "a recent row is not reported missing",
			objects:       laneObjects("pi_2", "succeeded"),
			rows:          []reconcile.Record[string]{recent},
			reportMissing: true,
			want:          []reconcile.Outcome{{RecordID: "2", ExternalID: "pi_2", Local: "pending", Decision: reconcile.Decision{Verdict: reconcile.InFlight}}},
		},
		{
			name:          "an empty page commits no outcomes",
			reportMissing: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &laneSink{}
			m := &laneMatcher{rows: tt.rows}
			cfg := laneConfig(lanePage(1, reconcile.FeedPage[string]{Objects: tt.objects, Next: "p2"}), m, sink)
			cfg.ReportMissing = tt.reportMissing
			rep, err := newLane(t, cfg).RunBatch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			commits := sink.committed()
			if len(commits) != 1 {
				t.Fatalf("%d commits; want 1", len(commits))
			}
			got := commits[0].Outcomes
			for i, subs := range tt.wantDetail {
				if i >= len(got) {
					continue
				}
				if got[i].Decision.Kind == reconcile.KindMissingLocally && got[i].Decision.Detail == "" {
					t.Errorf("outcome %d has no detail", i)
				}
				for _, s := range subs {
					if s == "-created" {
						if strings.Contains(got[i].Decision.Detail, "created") {
							t.Errorf("outcome %d detail %q mentions a creation time it does not have", i, got[i].Decision.Detail)
						}
					} else if !strings.Contains(got[i].Decision.Detail, s) {
						t.Errorf("outcome %d detail %q does not mention %q", i, got[i].Decision.Detail, s)
					}
				}
			}
			stripped := make([]reconcile.Outcome, len(got))
			for i, o := range got {
				if o.Decision.Kind == reconcile.KindMissingLocally {
					o.Decision.Detail = ""
				}
				// A verification is dated by the feed's call (before the step), nothing else.
				if o.Verified == (o.VerifiedAt.IsZero() || o.VerifiedAt.After(time.Now())) {
					t.Errorf("outcome %d: verified %t at %v; want a time of the step exactly when verified", i, o.Verified, o.VerifiedAt)
				}
				o.VerifiedAt = time.Time{}
				stripped[i] = o
			}
			if len(stripped) == 0 {
				stripped = nil
			}
			if !reflect.DeepEqual(stripped, tt.want) {
				t.Fatalf("outcomes\n got %+v\nwant %+v", got, tt.want)
			}
			if rep.Scanned != len(tt.want) {
				t.Errorf("Scanned %d; want %d", rep.Scanned, len(tt.want))
			}
			wantVerdicts := map[reconcile.Verdict]int{}
			for _, o := range tt.want {
				wantVerdicts[o.Decision.Verdict]++
			}
			for _, v := range reconcile.Verdicts {
				if rep.Verdicts[v] != wantVerdicts[v] {
					t.Errorf("Verdicts[%s] = %d; want %d", v, rep.Verdicts[v], wantVerdicts[v])
				}
			}
			if len(tt.objects) == 0 && len(m.requests()) != 0 {
				t.Errorf("an empty page asked the matcher %d times", len(m.requests()))
			}
		})
	}
}

func TestALaneStepAsksForRowsChangedSinceAnObjectsObservedTime(t *testing.T) {
	t.Parallel()
	t1 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	t3 := t1.Add(time.Minute)
	tests := []struct {
		name      string
		objects   []reconcile.FeedObject[string]
		wantSince []time.Time
	}{
		{"current states ask for no Since", laneObjects("pi_1", "succeeded", "pi_2", "canceled"), nil},
		{"states from events give their time, and zero for the others", []reconcile.FeedObject[string]{
			{ExternalID: "pi_1", Object: "succeeded", ObservedAt: t1},
			{ExternalID: "pi_2", Object: "canceled"},
			{ExternalID: "pi_3", Object: "succeeded", ObservedAt: t3},
		}, []time.Time{t1, {}, t3}},
		{"one state from an event among current ones", []reconcile.FeedObject[string]{
			{ExternalID: "pi_1", Object: "succeeded"},
			{ExternalID: "pi_2", Object: "canceled", ObservedAt: t3},
		}, []time.Time{{}, t3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &laneMatcher{}
			if _, err := newLane(t, laneConfig(lanePage(1, reconcile.FeedPage[string]{Objects: tt.objects}), m, &laneSink{})).RunBatch(context.Background()); err != nil {
				t.Fatal(err)
			}
			reqs := m.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d match requests; want one for the whole page", len(reqs))
			}
			var wantIDs []string
			for _, o := range tt.objects {
				wantIDs = append(wantIDs, o.ExternalID)
			}
			if !slices.Equal(reqs[0].ExternalIDs, wantIDs) {
				t.Errorf("ExternalIDs %v; want %v", reqs[0].ExternalIDs, wantIDs)
			}
			if !reflect.DeepEqual(reqs[0].Since, tt.wantSince) {
				t.Errorf("Since %v; want %v", reqs[0].Since, tt.wantSince)
			}
		})
	}
}

func TestALaneStepThatCannotBeJudgedWritesNothing(t *testing.T) {
	t.Parallel()
	feedErr := errors.New("stripe: connection reset")
	matchErr := errors.New("pg: relation does not exist")
	readErr := errors.New("pg: too many connections")
	page := func(ids ...string) *laneFeed {
		var o []reconcile.FeedObject[string]
		for _, id := range ids {
			o = append(o, reconcile.FeedObject[string]{ExternalID: id, Object: "succeeded"})
		}
		return lanePage(1, reconcile.FeedPage[string]{Objects: o, Next: "p2", End: true})
	}
	decide := func(d reconcile.Decision) reconcile.Classifier[string, string] {
		return reconcile.ClassifierFunc[string, string](func(string, string) reconcile.Decision { return d })
	}
	rows := []reconcile.Record[string]{laneRow("1", "pi_1", "pending"), laneRow("2", "pi_2", "paid")}
	tests := []struct {
		name       string
		feed       *laneFeed
		matcher    *laneMatcher
		classifier reconcile.Classifier[string, string]
		readErr    error
		wantIs     error  // errors.Is target, if set
		wantMsg    string // substring, if set
	}{
		{name: "the feed returns one external id twice", feed: page("pi_1", "pi_2", "pi_1"), wantMsg: "pi_1 twice"},
		{name: "the feed returns an object without an external id", feed: page("pi_1", ""), wantMsg: "without an external id"},
		{name: "the matcher returns a row for an id not asked for",
			matcher: &laneMatcher{rows: rows, extra: []reconcile.Record[string]{laneRow("3", "pi_3", "pending")}}, wantMsg: "not asked"},
		{name: "the matcher fails", matcher: &laneMatcher{err: matchErr}, wantIs: matchErr},
		{name: "the matcher panics", matcher: &laneMatcher{panic: "index out of range"}, wantMsg: "panic"},
		{name: "the classifier returns the zero decision", classifier: decide(reconcile.Decision{}), wantMsg: "invalid verdict"},
		{name: "the classifier returns a repairable decision without a command",
			classifier: decide(reconcile.Decision{Verdict: reconcile.Repairable, Kind: "missed_success"}), wantMsg: "without a repair command"},
		{name: "the classifier returns a review without a kind",
			classifier: decide(reconcile.Decision{Verdict: reconcile.NeedsReview}), wantMsg: "without a finding kind"},
		{name: "the classifier panics", classifier: reconcile.ClassifierFunc[string, string](func(string, string) reconcile.Decision {
			panic("nil map")
		}), wantMsg: "panic"},
		{name: "the feed panics", feed: &laneFeed{next: func(context.Context, string, func(context.Context) error) (reconcile.FeedPage[string], error) {
			panic("unexpected JSON")
		}}, wantMsg: "panic"},
		{name: "the feed fails", feed: laneFailing(feedErr), wantIs: feedErr},
		{name: "the feed answers that the system is unavailable", feed: laneFailing(fmt.Errorf("list events: %w", reconcile.ErrUnavailable)),
			wantIs: reconcile.ErrUnavailable},
		{name: "reading the position fails", readErr: readErr, wantIs: readErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			feed, m := tt.feed, tt.matcher
			if feed == nil {
				feed = page("pi_1", "pi_2")
			}
			if m == nil {
				m = &laneMatcher{rows: rows}
			}
			sink := &laneSink{cur: reconcile.Cursor{Position: "p1", Version: 4}, readErr: tt.readErr}
			cfg := laneConfig(feed, m, sink)
			cfg.ReportMissing = true
			if tt.classifier != nil {
				cfg.Classifier = tt.classifier
			}
			obs := &laneObserver{}
			cfg.Observer = obs
			var (
				rep reconcile.Report
				err error
			)
			func() {
				defer func() {
					if v := recover(); v != nil {
						t.Fatalf("RunBatch panicked: %v", v)
					}
				}()
				rep, err = newLane(t, cfg).RunBatch(context.Background())
			}()
			if err == nil {
				t.Fatalf("RunBatch succeeded with %+v; want an error", rep)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v; want one that is %v", err, tt.wantIs)
			}
			if tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q; want one mentioning %q", err, tt.wantMsg)
			}
			if !strings.HasPrefix(err.Error(), "reconcile: lane payments/events") {
				t.Errorf("error %q does not name the lane", err)
			}
			if c := sink.committed(); len(c) != 0 {
				t.Fatalf("committed %+v; want nothing", c)
			}
			if rep.Deferred {
				t.Error("a failed step is reported deferred")
			}
			if tt.readErr != nil && len(feed.asked()) != 0 {
				t.Error("the feed was asked although the position could not be read")
			}
			if len(obs.errs) != 1 || obs.errs[0] == nil || obs.batches[0] != "payments/events" {
				t.Errorf("observer saw batches %v with errors %v; want one failed payments/events", obs.batches, obs.errs)
			}
		})
	}
}

func TestALaneStepDefersWhenRateLimited(t *testing.T) {
	t.Parallel()
	paused := &reconcile.RateLimitError{RetryAfter: 5 * time.Second, Reason: "the limiter is paused"}
	tests := []struct {
		name          string
		feedErr       error // the feed's answer after its first call
		limiterErr    error
		wantRetry     time.Duration
		wantCalls     int
		wantThrottles []time.Duration
	}{
		{name: "a rate-limit answer with a wait", feedErr: &reconcile.RateLimitError{RetryAfter: 30 * time.Second},
			wantRetry: 30 * time.Second, wantCalls: 1, wantThrottles: []time.Duration{30 * time.Second}},
		{name: "a rate-limit answer wrapped by the feed", feedErr: fmt.Errorf("list events: %w", &reconcile.RateLimitError{RetryAfter: 2 * time.Second}),
			wantRetry: 2 * time.Second, wantCalls: 1, wantThrottles: []time.Duration{2 * time.Second}},
		{name: "a rate-limit answer naming no wait", feedErr: fmt.Errorf("429: %w", reconcile.ErrRateLimited),
			wantCalls: 1, wantThrottles: []time.Duration{0}},
		{name: "a limiter paused by an earlier answer refuses the first call", limiterErr: paused, wantRetry: 5 * time.Second},
		{name: "a limiter that cannot grant a call in time", limiterErr: errors.New("rate: Wait(n=1) would exceed context deadline")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &laneSink{}
			m := &laneMatcher{}
			lim := &laneLimiter{err: tt.limiterErr}
			feed := laneFailing(tt.feedErr)
			cfg := laneConfig(feed, m, sink)
			cfg.Limiter = lim
			obs := &laneObserver{}
			cfg.Observer = obs
			rep, err := newLane(t, cfg).RunBatch(context.Background())
			if err != nil {
				t.Fatalf("RunBatch: %v; want a deferral, not an error", err)
			}
			if !rep.Deferred || !rep.RateLimited || rep.RetryAfter != tt.wantRetry {
				t.Errorf("Deferred %v, RateLimited %v, RetryAfter %v; want deferred and rate limited with %v",
					rep.Deferred, rep.RateLimited, rep.RetryAfter, tt.wantRetry)
			}
			if rep.GatewayCalls != tt.wantCalls || rep.Scanned != 0 || rep.Wrapped {
				t.Errorf("GatewayCalls %d, Scanned %d, Wrapped %v; want %d calls, nothing scanned", rep.GatewayCalls, rep.Scanned, rep.Wrapped, tt.wantCalls)
			}
			if c := sink.committed(); len(c) != 0 {
				t.Errorf("committed %+v; want nothing", c)
			}
			if len(m.requests()) != 0 {
				t.Error("the matcher was asked after a rate limit")
			}
			if got := lim.throttled(); !slices.Equal(got, tt.wantThrottles) {
				t.Errorf("limiter throttled %v; want %v", got, tt.wantThrottles)
			}
			if len(obs.reports) != 1 || !obs.reports[0].Deferred || obs.errs[0] != nil {
				t.Errorf("observer saw %+v, %v; want one deferred report", obs.reports, obs.errs)
			}
		})
	}
}

func TestALaneStepWhoseContextIsCancelledFailsRatherThanDefers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sink := &laneSink{}
	cfg := laneConfig(lanePage(1, reconcile.FeedPage[string]{Objects: laneObjects("pi_1", "succeeded")}), &laneMatcher{}, sink)
	cfg.Limiter = &laneLimiter{}
	rep, err := newLane(t, cfg).RunBatch(ctx)
	if !errors.Is(err, context.Canceled) || rep.Deferred {
		t.Fatalf("RunBatch = %+v, %v; want a context.Canceled error, not a deferral", rep, err)
	}
	if len(sink.committed()) != 0 {
		t.Fatal("a cancelled step committed")
	}
}

func TestALaneStepPassesALostRaceThrough(t *testing.T) {
	t.Parallel()
	sink := &laneSink{commitErr: fmt.Errorf("pgstore: %w", reconcile.ErrConcurrentRun)}
	cfg := laneConfig(lanePage(1, reconcile.FeedPage[string]{Objects: laneObjects("pi_1", "succeeded")}),
		&laneMatcher{rows: []reconcile.Record[string]{laneRow("1", "pi_1", "pending")}}, sink)
	_, err := newLane(t, cfg).RunBatch(context.Background())
	if !errors.Is(err, reconcile.ErrConcurrentRun) {
		t.Fatalf("RunBatch = %v; want an error that is ErrConcurrentRun", err)
	}
}

func TestALaneStepCommitsThePagesPositionEndAndGap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		page reconcile.FeedPage[string]
	}{
		{"a page in the middle of a pass", reconcile.FeedPage[string]{Objects: laneObjects("pi_1", "succeeded"), Next: "pi_1"}},
		{"the last page of a pass", reconcile.FeedPage[string]{Objects: laneObjects("pi_1", "succeeded"), Next: "", End: true}},
		{"an empty page of a caught-up event log", reconcile.FeedPage[string]{Next: "evt_9", End: true}},
		{"a restart without replay", reconcile.FeedPage[string]{Objects: laneObjects("pi_1", "succeeded"), Next: "evt_100",
			Gap: "checkpoint evt_1 is older than 25 days"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := reconcile.Cursor{Position: "evt_5", Version: 7}
			sink := &laneSink{cur: cur, res: reconcile.CommitResult{Findings: 3, Commands: 2}}
			feed := lanePage(2, tt.page)
			m := &laneMatcher{rows: []reconcile.Record[string]{laneRow("1", "pi_1", "pending")}}
			rep, err := newLane(t, laneConfig(feed, m, sink)).RunBatch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := feed.asked(); !slices.Equal(got, []string{"evt_5"}) {
				t.Errorf("feed asked from %q; want the stored position evt_5", got)
			}
			commits := sink.committed()
			if len(commits) != 1 {
				t.Fatalf("%d commits; want 1", len(commits))
			}
			c := commits[0]
			if c.Job != "payments" || c.Lane != "events" || c.Cursor != cur || c.Next != tt.page.Next || c.End != tt.page.End || c.Gap != tt.page.Gap {
				t.Errorf("commit %+v; want job payments, lane events, cursor %+v, next %q, end %v, gap %q",
					c, cur, tt.page.Next, tt.page.End, tt.page.Gap)
			}
			if len(c.Outcomes) != len(tt.page.Objects) {
				t.Errorf("%d outcomes for %d objects", len(c.Outcomes), len(tt.page.Objects))
			}
			if rep.Job != "payments" || rep.Lane != "events" || rep.Wrapped != tt.page.End || rep.GatewayCalls != 2 ||
				rep.NewFindings != 3 || rep.NewCommands != 2 || rep.Deferred || rep.RateLimited {
				t.Errorf("report %+v; want job payments, lane events, wrapped %v, 2 calls, 3 findings and 2 commands", rep, tt.page.End)
			}
			if rep.Duration <= 0 {
				t.Errorf("Duration %v; want it measured", rep.Duration)
			}
		})
	}
}

func TestTheObserverSeesALaneAsJobSlashLane(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		feed      *laneFeed
		wantCalls []string
		wantErr   bool
	}{
		{"three calls that succeed", lanePage(3, reconcile.FeedPage[string]{Objects: laneObjects("pi_1", "succeeded")}),
			[]string{"payments/events 3 ok"}, false},
		{"a step that made no call reports none", lanePage(0, reconcile.FeedPage[string]{End: true}), nil, false},
		{"a call that failed is counted with its class", laneFailing(reconcile.ErrUnavailable),
			[]string{"payments/events 1 unavailable"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &laneObserver{}
			cfg := laneConfig(tt.feed, &laneMatcher{}, &laneSink{})
			cfg.Observer = obs
			rep, err := newLane(t, cfg).RunBatch(context.Background())
			if (err != nil) != tt.wantErr {
				t.Fatalf("RunBatch: %v; want error %v", err, tt.wantErr)
			}
			if !slices.Equal(obs.calls, tt.wantCalls) {
				t.Errorf("gateway calls %q; want %q", obs.calls, tt.wantCalls)
			}
			if !slices.Equal(obs.batches, []string{"payments/events"}) || (obs.errs[0] != nil) != tt.wantErr {
				t.Fatalf("batches %q with errors %v; want one for payments/events", obs.batches, obs.errs)
			}
			if got := obs.reports[0]; got.GatewayCalls != rep.GatewayCalls || got.Lane != "events" || got.Duration <= 0 {
				t.Errorf("observed report %+v; want the returned one %+v", got, rep)
			}
		})
	}
}

func TestALaneIsSafeForConcurrentSteps(t *testing.T) {
	t.Parallel()
	sink := &laneSink{}
	m := &laneMatcher{rows: []reconcile.Record[string]{laneRow("1", "pi_1", "pending"), laneRow("2", "pi_2", "paid")}}
	obs := &laneObserver{}
	cfg := laneConfig(lanePage(2, reconcile.FeedPage[string]{Objects: laneObjects("pi_1", "succeeded", "pi_2", "succeeded", "pi_3", "succeeded")}), m, sink)
	cfg.ReportMissing, cfg.Observer = true, obs
	cfg.Limiter = rate.NewLimiter(rate.Inf, 1)
	l := newLane(t, cfg)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := l.RunBatch(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	commits := sink.committed()
	if len(commits) != 8 {
		t.Fatalf("%d commits; want 8", len(commits))
	}
	for _, c := range commits {
		if len(c.Outcomes) != 3 {
			t.Fatalf("commit with %d outcomes; want 3", len(c.Outcomes))
		}
	}
}

// A row the Matcher returns Invalid (here: changed a decade ahead of the store's clock, also
// Recent by the event's time) is decided without a call: Current is not asked about it, even
// with the grace period off, where the second match leaves it not Recent.
func TestALaneAsksCurrentNothingAboutAnInvalidRow(t *testing.T) {
	t.Parallel()
	s := memstore.New[int64, string](memstore.Options{})
	s.Put(memstore.Row[int64, string]{Key: 1, ExternalID: "pi_1", Local: "paid", UpdatedAt: time.Now().Add(10 * 365 * 24 * time.Hour)})
	var calls int
	current := reconcile.GatewayFunc[string](func(context.Context, string) (string, error) { calls++; return "canceled", nil })
	objs := []reconcile.FeedObject[string]{{ExternalID: "pi_1", Object: "canceled", ObservedAt: time.Now()}}
	l, err := reconcile.NewLane(reconcile.LaneConfig[string, string]{Job: "sweep", Lane: "events",
		Feed: lanePage(1, reconcile.FeedPage[string]{Objects: objs}), Matcher: s, Sink: s, Current: current,
		Classifier: laneClassifier, Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.RunBatch(context.Background()); err != nil {
		t.Fatal(err)
	}
	fs, err := s.ListFindings(context.Background(), reconcile.FindingQuery{Job: "sweep"})
	if err != nil || len(fs) != 1 || fs[0].Kind != reconcile.KindInvalidRow || calls != 0 {
		t.Fatalf("findings %+v (%v), %d calls to Current; want the invalid_row finding and no call", fs, err, calls)
	}
}
