package stripeadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/reconcilekit/reconcile"
	"github.com/reconcilekit/reconcile/adapters/memstore"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/internal/keyecho"
	"github.com/reconcilekit/reconcile/adapters/stripeadapter/stripepolicy"
	"github.com/reconcilekit/reconcile/reconciletest"
)

// notAnswers are 200 bodies that say nothing about the intent asked for.
var notAnswers = map[string]string{
	"another object":       `{"id":"pi_SomethingElse","object":"payment_intent","status":"canceled"}`,
	"an empty object":      `{}`,
	"no status":            `{"id":"%s","object":"payment_intent"}`,
	"empty status":         `{"id":"%s","object":"payment_intent","status":""}`,
	"an object of no kind": `{"object":"payment_intent","status":"succeeded"}`,
}

// misrouted answers every retrieve with body (%s is the id asked for) and every list with a
// page of the given listed objects.
func misrouted(body string, listed ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/payment_intents" {
			fmt.Fprintf(w, `{"object":"list","url":"/v1/payment_intents","has_more":false,"data":[%s]}`, strings.Join(listed, ","))
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/")
		if strings.Contains(body, "%s") {
			fmt.Fprintf(w, body, id)
			return
		}
		fmt.Fprint(w, body)
	})
}

func TestAnAnswerAboutAnotherObjectOrWithoutAStateIsUnavailable(t *testing.T) {
	for name, body := range notAnswers {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(misrouted(body))
			defer srv.Close()
			pi, err := newGateway(t, srv.URL, nil).Fetch(context.Background(), "pi_123")
			if !errors.Is(err, reconcile.ErrUnavailable) || pi != nil {
				t.Fatalf("Fetch = %v, %v; want nil and an error wrapping ErrUnavailable", pi, err)
			}
			if !strings.Contains(err.Error(), "pi_123") {
				t.Errorf("error %q does not name the object asked for", err)
			}
		})
	}
}

// pendingRows is a memstore of n pending payments pi_1..pi_n, created an hour before now.
func pendingRows(n int) *memstore.Store[int64, string] {
	now := time.Now()
	s := memstore.New[int64, string](memstore.Options{})
	for i := 1; i <= n; i++ {
		old := now.Add(-time.Hour)
		s.Put(memstore.Row[int64, string]{Key: int64(i), ExternalID: fmt.Sprintf("pi_%d", i), Local: stripepolicy.LocalPending, CreatedAt: old, UpdatedAt: old})
	}
	return s
}

func TestNonAnswersVerifyNothingAndQueueNothing(t *testing.T) {
	const n = 30
	// Listed objects that are not answers either: no status, no id, an empty object.
	listed := []string{`{"id":"pi_1","object":"payment_intent"}`, `{"object":"payment_intent","status":"succeeded"}`, `{}`,
		`{"id":"pi_2","object":"payment_intent","status":""}`}
	for name, body := range notAnswers {
		for _, bulk := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, bulk %t", name, bulk), func(t *testing.T) {
				srv := httptest.NewServer(misrouted(body, listed...))
				defer srv.Close()
				var gw reconcile.Gateway[*stripe.PaymentIntent] = newGateway(t, srv.URL, nil)
				if !bulk {
					gw = reconcile.PerObject(gw)
				}
				var logged bytes.Buffer
				s := pendingRows(n)
				cfg := reconcile.Config[string, *stripe.PaymentIntent]{
					Job: "sweep", Source: s, Sink: s, Gateway: gw, Classifier: stripepolicy.PaymentIntentPolicy(),
					ExternalState: stripepolicy.PaymentIntentState, BatchSize: 100,
					Logger: slog.New(slog.NewJSONHandler(&logged, nil)),
				}
				rep, err := reconcile.RunBatch(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				// Answers that are not answers look like an outage: after two of them the batch
				// asks no more, and the rows asked are Unverifiable, never verified.
				if rep.Scanned == 0 || rep.Verdicts[reconcile.Unverifiable] != rep.Scanned || !rep.Unavailable || rep.GatewayCalls > 2 ||
					len(reconciletest.Findings(t, s, "")) != 0 || len(s.Commands()) != 0 {
					t.Fatalf("report %+v, %d findings, %d commands; want only unverifiable rows, an outage after at most 2 calls, and nothing recorded",
						rep, len(reconciletest.Findings(t, s, "")), len(s.Commands()))
				}
				for i := 1; i <= n; i++ {
					if _, ok := s.Observation("sweep", fmt.Sprint(i)); ok {
						t.Fatalf("row %d was recorded as verified", i)
					}
				}
				if bulk && strings.Count(logged.String(), "no id or no status") != 1 {
					t.Errorf("the bulk fetch's ignored objects were not logged exactly once:\n%s", logged.String())
				}
			})
		}
	}
}

// eventsAndList serves /v1/events with events (newest first) and /v1/payment_intents with
// listed.
func eventsAndList(events []string, listed []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/events":
			fmt.Fprintf(w, `{"object":"list","url":"/v1/events","has_more":false,"data":[%s]}`, strings.Join(events, ","))
		case "/v1/payment_intents":
			fmt.Fprintf(w, `{"object":"list","url":"/v1/payment_intents","has_more":false,"data":[%s]}`, strings.Join(listed, ","))
		default:
			http.NotFound(w, r)
		}
	})
}

func event(id string, created int64, object string) string {
	return fmt.Sprintf(`{"id":%q,"object":"event","type":"payment_intent.succeeded","created":%d,"data":{"object":%s}}`, id, created, object)
}

func TestFeedsSkipObjectsWithoutAnIDOrAState(t *testing.T) {
	now := time.Now()
	created := now.Add(-time.Hour).Unix()
	good := fmt.Sprintf(`{"id":"pi_good","object":"payment_intent","status":"succeeded","created":%d}`, created)
	bad := []string{
		fmt.Sprintf(`{"object":"payment_intent","status":"succeeded","created":%d}`, created),
		fmt.Sprintf(`{"id":"pi_nostatus","object":"payment_intent","created":%d}`, created),
		fmt.Sprintf(`{"id":"pi_emptystatus","object":"payment_intent","status":"","created":%d}`, created),
	}
	check := func(t *testing.T, page reconcile.FeedPage[*stripe.PaymentIntent], logged string) {
		t.Helper()
		if len(page.Objects) != 1 || page.Objects[0].ExternalID != "pi_good" {
			t.Fatalf("objects %+v; want only pi_good", page.Objects)
		}
		if strings.Count(logged, `"level":"WARN"`) != 1 || !strings.Contains(logged, `"skipped":3`) {
			t.Errorf("want one warning for the 3 skipped objects, logged:\n%s", logged)
		}
	}
	t.Run("events", func(t *testing.T) {
		events := []string{event("evt_4", created, good)}
		for k, b := range bad {
			events = append(events, event(fmt.Sprintf("evt_%d", 3-k), created, b))
		}
		srv := httptest.NewServer(eventsAndList(events, nil))
		defer srv.Close()
		var logged bytes.Buffer
		feed, err := newGateway(t, srv.URL, nil).EventsFeed(stripeadapter.EventsOptions{Logger: slog.New(slog.NewJSONHandler(&logged, nil))})
		if err != nil {
			t.Fatal(err)
		}
		pos, _ := json.Marshal(map[string]any{"after": "evt_0", "until": created - 10})
		page, err := feed.Next(context.Background(), string(pos), func(context.Context) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		check(t, page, logged.String())
	})
	t.Run("reverse", func(t *testing.T) {
		srv := httptest.NewServer(eventsAndList(nil, append([]string{good}, bad...)))
		defer srv.Close()
		var logged bytes.Buffer
		feed, err := newGateway(t, srv.URL, nil).ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.PaymentIntent]{Logger: slog.New(slog.NewJSONHandler(&logged, nil))})
		if err != nil {
			t.Fatal(err)
		}
		page, err := feed.Next(context.Background(), "", func(context.Context) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		check(t, page, logged.String())
	})
}

func TestFeedsTakeNoCursorOrObjectFromAnIDThatIsNotOne(t *testing.T) {
	created := time.Now().Add(-time.Hour).Unix()
	t.Run("events", func(t *testing.T) {
		good := fmt.Sprintf(`{"id":"pi_good","object":"payment_intent","status":"succeeded","created":%d}`, created)
		srv := httptest.NewServer(eventsAndList([]string{event("evt_1 "+keyecho.Key, created, good)}, nil))
		defer srv.Close()
		feed, err := newGateway(t, srv.URL, nil).EventsFeed(stripeadapter.EventsOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pos := fmt.Sprintf(`{"after":"evt_0","until":%d}`, created-10)
		page, err := feed.Next(context.Background(), pos, func(context.Context) error { return nil })
		if !errors.Is(err, reconcile.ErrUnavailable) || page.Next != "" || len(page.Objects) != 0 {
			t.Fatalf("page %+v, err %v; want no progress and ErrUnavailable", page, err)
		}
		keyecho.AssertNone(t, "the error", err.Error())
	})
	t.Run("reverse", func(t *testing.T) {
		listed := []string{
			fmt.Sprintf(`{"id":"pi_good","object":"payment_intent","status":"succeeded","created":%d}`, created),
			fmt.Sprintf(`{"id":"pi_1/%s","object":"payment_intent","status":"succeeded","created":%d}`, keyecho.Key, created),
		}
		srv := httptest.NewServer(eventsAndList(nil, listed))
		defer srv.Close()
		feed, err := newGateway(t, srv.URL, nil).ReverseFeed(stripeadapter.ObjectReverseOptions[*stripe.PaymentIntent]{})
		if err != nil {
			t.Fatal(err)
		}
		page, err := feed.Next(context.Background(), "", func(context.Context) error { return nil })
		if err != nil || len(page.Objects) != 1 || page.Objects[0].ExternalID != "pi_good" {
			t.Fatalf("page %+v, err %v; want only pi_good", page, err)
		}
	})
}
